"""The site's fields on a reader's form: the subscribe form of a service that
asks for some (``form_fields`` in its service.ini) and the own page
(docs/using/fields.md#fields-forms).

What the templates draw (templates/fields_inputs.html) is made here, every
text already in the page's language, so the template holds no words of its
own; what a post typed is read back here and checked by the definitions
(:func:`vykhukhol.settings.fields.check_values`). An input is named
``f.<field>``, apart from every other name a form posts (the honeypot's
``website`` may be a field's name too).

Imported only by a page that has fields to ask for: the plain subscribe form
never loads it (docs/design/startup.md#startup-boundary).
"""

from __future__ import annotations

import os

from vykhukhol.errors import BadInput
from vykhukhol.i18n import t
from vykhukhol.settings import fields as definitions

PREFIX = "f."  # an input's name: PREFIX + the field's name


def asked(root: str | os.PathLike[str], names: tuple[str, ...] | None = None
          ) -> list[definitions.Field]:
    """The site's fields named in ``names``, in that order (None: all of
    them); a name whose definition was removed since is left out."""
    defined = definitions.load(root)
    if names is None:
        return defined
    by_name = {field.name: field for field in defined}
    return [by_name[name] for name in names if name in by_name]


def typed(fields: list[definitions.Field], form: dict[str, str]) -> dict[str, str]:
    """What a post typed for each of ``fields``, by field name (absent: not posted)."""
    return {f.name: form[PREFIX + f.name] for f in fields if PREFIX + f.name in form}


def read(fields: list[definitions.Field], form: dict[str, str], lang: str,
         partial: bool = False) -> dict[str, str | None]:
    """Each field's value from the post, in its kept form (None: none given);
    BadInput, in the reader's words, for the first that does not fit."""
    return definitions.check_values(fields, typed(fields, form), partial=partial, lang=lang)


def inputs(fields: list[definitions.Field], lang: str, values: dict[str, str]) -> list[dict]:
    """One entry per field for templates/fields_inputs.html: its input's name
    and id, its label, its kind of input, the value to show (``values``: kept
    or typed) and, for a list, its options."""
    shown = []
    for f in fields:
        value = values.get(f.name, "")
        label = f.label(lang) if f.required else f"{f.label(lang)} {t(lang, 'fields.optional')}"
        entry = {"name": PREFIX + f.name, "id": "f-" + f.name, "label": label,
                 "required": f.required, "value": value, "list": False, "hint": "",
                 "number": f.kind == "number", "options": []}
        if f.kind in ("choice", "yesno"):
            pairs = ([(c, c) for c in f.choices] if f.kind == "choice" else
                     [("yes", t(lang, "fields.yes")), ("no", t(lang, "fields.no"))])
            chosen = _chosen(f, value)
            entry["list"] = True
            entry["options"] = [{"value": key, "text": text, "selected": key == chosen}
                                for key, text in pairs]
        elif f.kind == "date":
            entry["hint"] = t(lang, "fields.date_hint")
        shown.append(entry)
    return shown


def _chosen(field: definitions.Field, value: str) -> str:
    """The option a value stands for ("" for none, or for one that fits no option)."""
    try:
        return field.value_of(value) or ""
    except BadInput:  # a typed value that fits no option selects none
        return ""


def own_inputs(root: str | os.PathLike[str], lang: str, lines: list, typed: dict[str, str]
               ) -> list[dict]:
    """The own page's inputs: every field of the site, showing what the
    reader's ``lines`` (one per service they are on; the first that has a
    value gives it) keep, or what a post that did not fit typed."""
    fields = asked(root)
    if not fields or not lines:
        return []
    kept: dict[str, str] = {}
    for line in lines:
        for name, value in line.fields.items():
            kept.setdefault(name, value)
    return inputs(fields, lang, {**kept, **typed})


def snippet(root: str | os.PathLike[str], names: tuple[str, ...], lang: str) -> str:
    """The inputs of a service's fields as the admin's form for the owner's
    site has them (templates/fields_inputs.html, drawn by Jinja2)."""
    from vykhukhol.web.templating import _environment

    shown = inputs(asked(root, names), lang, {})
    return _environment(None).get_template("fields_inputs.html").render(form_fields=shown)
