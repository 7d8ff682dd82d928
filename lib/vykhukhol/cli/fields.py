"""``vykhukhol field``: the site's fields, what is kept about a reader beyond
the address and the name (docs/using/fields.md#fields-cli)."""

from __future__ import annotations

import json

from vykhukhol import services as svc
from vykhukhol.cli.common import Context, Parser, actions, add_command, print_table
from vykhukhol.settings import fields

NAME_HELP = "the field's name: a-z, 0-9 and _, starting with a letter, e.g. city"
TABLE = ("name", "type", "required", "label_ru", "label_en", "choices")


def field_arguments(p: Parser) -> None:
    what = actions(p)
    a = add_command(what, "add", "define a field every service's readers may have a value for",
                    "vykhukhol field add city --type text --label-ru Город --label-en City",
                    'vykhukhol field add plan --type choice --choices "Free|Pro" --required')
    a.add_argument("name", help=NAME_HELP)
    a.add_argument("--type", required=True, choices=fields.KINDS, dest="kind",
                   help="text, number, date, choice (one of --choices) or yesno")
    a.add_argument("--required", action="store_true", help="a form must have a value")
    a.add_argument("--label-ru", default="", metavar="TEXT", help="what a Russian reader sees")
    a.add_argument("--label-en", default="", metavar="TEXT", help="what an English reader sees")
    a.add_argument("--choices", default="", metavar='"A|B"',
                   help="a choice's values, separated by |")
    a = add_command(what, "list", "the fields: name, type, required, labels, choices")
    a.add_argument("--json", action="store_true", help="a JSON list, one object per field")
    add_command(what, "remove", "forget a field's definition (readers' values stay on their lines)",
                "vykhukhol field remove city").add_argument("name", help=NAME_HELP)


def as_json(field: fields.Field) -> dict:
    return {"name": field.name, "type": field.kind, "required": field.required,
            "label_ru": field.labels.get("ru", ""), "label_en": field.labels.get("en", ""),
            "choices": list(field.choices)}


def cmd_field(ctx: Context, args) -> None:
    root = ctx.data.root
    ctx.settings()  # an initialised site
    if args.action == "add":
        labels = {lang: text for lang, text in (("ru", args.label_ru), ("en", args.label_en))
                  if text.strip()}
        choices = tuple(c.strip() for c in args.choices.split("|") if c.strip())
        field = fields.add(root, fields.Field(args.name, args.kind, args.required, labels, choices))
        print(f"field {field.name} added ({field.kind}{', required' if field.required else ''})")
        if args.choices and field.kind != "choice":
            print("note: --choices is only for a choice; ignored")
    elif args.action == "list":
        found = fields.load(root)
        if args.json:
            print(json.dumps([as_json(f) for f in found], ensure_ascii=False, indent=1))
            return
        print_table(("#" + TABLE[0], *TABLE[1:]),
                    [(f.name, f.kind, "yes" if f.required else "no", f.labels.get("ru", "") or "-",
                      f.labels.get("en", "") or "-", " | ".join(f.choices) or "-") for f in found])
    else:
        field = fields.remove(root, args.name)
        print(f"field {field.name} removed; readers' values stay on their lines, unused")
        for name in svc.drop_form_field(ctx.data, field.name):
            print(f"service {name}: its subscribe form no longer asks for it")
