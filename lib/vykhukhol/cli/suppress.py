"""``vykhukhol suppress``: the suppression list (SPEC 12) on the command line —
list, add, remove, import, export. Every address is checked before the list
changes; the file is written only by :mod:`vykhukhol.members.suppression`."""

from __future__ import annotations

import sys

from vykhukhol.addresses import check_email
from vykhukhol.cli.common import Context, export_target
from vykhukhol.cli.lists import _read_file
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.members import suppression
from vykhukhol.timeutil import now

SHOWN_INVALID = 50  # refused lines of an import named on stderr


def cmd_suppress(ctx: Context, args) -> None:
    settings = ctx.settings()
    data, secret = ctx.data, suppression.secret_of(settings)
    if args.action == "list":
        print(suppression.HEADER)
        needle = (args.search or "").strip().lower()
        for entry in suppression.entries(data):
            line = entry.to_line()
            if not needle or needle in line.lower():
                print(line)
    elif args.action == "add":
        emails = []
        for given in args.email:  # all checked first: a typo changes nothing
            try:
                emails.append(check_email(given))
            except BadInput as exc:
                raise BadInput(f"{given}: {exc.message}; nothing changed") from None
        added = suppression.add_many(data, secret, emails, suppression.Why.ADMIN, "cli", now())
        print(f"{added} added, {len(emails) - added} already on the list")
    elif args.action == "remove":
        if not suppression.remove(data, secret, args.email):
            raise NotFound("{email} is not on the suppression list; nothing changed",
                           email=args.email)
        print(f"{args.email} taken off the suppression list")
    elif args.action == "import":
        text = sys.stdin.read() if args.file == "-" else _read_file(args.file, "import file")
        from vykhukhol.members import importing

        result = importing.suppress_addresses(data, secret, text, "cli", now())
        print(f"{result['added']} added, {result['already']} already on the list, "
              f"{len(result['invalid'])} invalid")
        for lineno, line, reason in result["invalid"][:SHOWN_INVALID]:
            print(f"line {lineno}: {line!r}: {reason}", file=sys.stderr)
    elif args.action == "export":
        export(ctx, args.file)


def export(ctx: Context, target: str | None) -> None:
    with export_target(target) as (out, counted):
        count = suppression.write_csv(ctx.data, out, progress=counted)
    if target:
        print(f"{count} addresses written to {target}", file=sys.stderr)
