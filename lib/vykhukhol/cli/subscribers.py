"""The addresses: ``subscriber`` (one service's), ``import-from`` (another
tool's export) and ``suppress`` (the addresses never written to again), each
command's arguments beside its code.

The members modules are imported inside the handlers: every command line
loads this module, and ``vykhukhol cron``, run every few minutes, needs none
of them."""

from __future__ import annotations

import sys
from pathlib import Path

from vykhukhol import services as svc
from vykhukhol.addresses import check_email
from vykhukhol.cli.common import (
    EMAIL_HELP,
    SERVICE_HELP,
    Context,
    Parser,
    actions,
    add_command,
    examples,
    export_target,
    numbered,
    progress,
    read_file,
)
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, NoSecret, NotFound
from vykhukhol.members import importing
from vykhukhol.members.export import write_csv
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import HEADER, Subscriber
from vykhukhol.timeutil import now

SHOWN_INVALID = 50  # refused lines of an import named on stderr


def subscriber_arguments(p: Parser) -> None:
    what = actions(p)
    a = add_command(what, "add", "add one address",
                    'vykhukhol subscriber add news anna@example.org --name "Anna"')
    a.add_argument("service", help=SERVICE_HELP)
    a.add_argument("email", help=EMAIL_HELP)
    a.add_argument("--name", help='e.g. "Anna"')
    a.add_argument("--confirmed", action="store_true",
                   help="they agreed already (else: asked to confirm by mail)")
    a.add_argument("--language", choices=svc.LANGUAGES,
                   help="their own language: the letters and pages meant for them speak it "
                        "(default: none, the site's; docs/using/languages.md#reader-language)")
    a = add_command(what, "remove", "remove one address")
    a.add_argument("service", help=SERVICE_HELP)
    a.add_argument("email", help=EMAIL_HELP)
    add_command(what, "list", "the subscriber file's lines, its header first").add_argument(
        "service", help=SERVICE_HELP)
    a = add_command(what, "import", "add many addresses from a file",
                    "vykhukhol subscriber import news addresses.csv",
                    "vykhukhol subscriber import news old-list.txt --confirmed")
    a.add_argument("service", help=SERVICE_HELP)
    a.add_argument("file", help="UTF-8: a CSV with an email column (and name), "
                                "email,name lines, or one address a line")
    a.add_argument("--confirmed", action="store_true",
                   help="they agreed already (else: asked to confirm by the sender's runs)")
    a.add_argument("--map", action="append", metavar="COLUMN=FIELD",
                   help="fill the site's field FIELD (or language) from the header's COLUMN, "
                        "e.g. Town=city; COLUMN=- fills nothing (default: a column named as a "
                        "field, or as its label, fills it); repeatable")
    a = add_command(what, "export", "write the subscribers as CSV",
                    "vykhukhol subscriber export news news.csv")
    a.add_argument("service", help=SERVICE_HELP)
    a.add_argument("file", nargs="?", help="where to write (default: standard output)")


def cmd_subscriber(ctx: Context, args) -> None:
    from vykhukhol.members import membership  # off the command line's start

    settings = ctx.settings()
    data = ctx.data
    if args.action == "add":
        if not args.confirmed and settings.secret_problem:  # the letter could carry no link
            raise NoSecret(settings.secret_problem)
        result = membership.subscribe(data, settings, args.service, args.email, args.name or "",
                                      ip="cli", confirmed=args.confirmed, language=args.language)
        if result == "suppressed":
            from vykhukhol.members import suppression  # off the command line's start

            raise BadInput(suppression.REFUSAL, email=args.email)
        print({"added": f"{args.email} added" + ("" if args.confirmed else ", asked to confirm"),
               "known": f"{args.email} is subscribed already; nothing changed",
               "confirmed": f"{args.email} confirmed",
               "too soon": f"{args.email} was asked to confirm less than 10 minutes ago",
               "asked again": f"{args.email} asked to confirm again"}[result])
    elif args.action == "remove":
        membership.remove(data, args.service, args.email)
        print(f"{args.email} removed from {args.service}")
    elif args.action == "list":
        service = svc.find_service(data, args.service)
        print(HEADER)
        for item in subs.read(service.subscribers_path):
            print(item.to_line() if isinstance(item, Subscriber) else item.text)
    elif args.action == "import":
        from vykhukhol.members.fieldmap import Columns  # off the command line's start

        text = read_file(args.file, "import file")

        imported = importing.import_addresses(data, settings, args.service, text, args.confirmed,
                                              Columns.parse_map(args.map))
        progress("")
        print(f"{imported['added']} added, {imported['duplicates']} already there, "
              f"{len(imported['invalid'])} invalid"
              + (f", {imported['suppressed']} suppressed (skipped)" if imported["suppressed"] else ""))
        columns = imported["columns"]
        if columns.defined or columns.choices:
            for line in columns.lines():
                print(line)
        for lineno, line, reason in imported["invalid"][:SHOWN_INVALID]:
            print(f"line {lineno}: {line!r}: {reason}", file=sys.stderr)
    elif args.action == "export":
        export(data, args.service, args.file)


def export(data: DataDir, service_name: str, target: str | None) -> None:
    from vykhukhol.settings import fields as site_fields  # off the command line's start

    service = svc.find_service(data, service_name)
    names = [f.name for f in site_fields.load(data.root)]
    with export_target(target) as (out, counted):
        write_csv(service.subscribers_path, out, progress=counted, fields=names)


def import_from_arguments(p: Parser) -> None:
    p.add_argument("tool", choices=["mailchimp", "phplist", "listmonk", "csv"],
                   help="the tool that wrote FILE (csv: any CSV with an email column)")
    p.add_argument("file", help="its export as it wrote it (Mailchimp: the zip or one of its "
                                "CSVs); -: standard input")
    p.add_argument("--service", required=True, help="the service they join, e.g. news")
    p.add_argument("--dry-run", action="store_true",
                   help="only say what it would do, by state, what each --series choice "
                        "would send, and the refused lines")
    p.add_argument("--show", action="store_true",
                   help="list the file's addresses under their state (with --dry-run: "
                        "who would be what, before anything changes)")
    p.add_argument("--map", action="append", metavar="COLUMN=FIELD",
                   help="fill the site's field FIELD (or language) from COLUMN, e.g. Town=city; "
                        "COLUMN=- fills nothing from it (default: a column named as a field, or "
                        "as its label, fills it); repeatable")
    p.add_argument("--series", nargs="+", default=["end"], metavar=("start|end|letter", "N"),
                   help="where the confirmed join the service's series: end (the default: "
                        "no letter of it now, one added later reaches them), start (every "
                        "letter, the first on the next run) or letter N")
    p.epilog = examples("vykhukhol import-from mailchimp audience.zip --service news --dry-run",
                        "vykhukhol import-from csv people.csv --service news --dry-run --show",
                        "vykhukhol import-from listmonk subscribers.csv --service news",
                        "vykhukhol import-from csv people.csv --service news --map Town=city --dry-run",
                        "vykhukhol import-from csv people.csv --service course --series letter 2")


def _read_bytes(path: str, limit: int) -> bytes:
    """The file's bytes (``-``: standard input), refused over ``limit``."""
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(limit + 1)
        else:
            with open(Path(path), "rb") as handle:
                raw = handle.read(limit + 1)
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from None
    if len(raw) > limit:
        raise BadInput(f"{path} is larger than {limit // (1024 * 1024)} MiB; nothing was imported")
    return raw


def cmd_import_from(ctx: Context, args) -> None:
    from vykhukhol.members import importers  # off the command line's start
    from vykhukhol.members.fieldmap import Columns  # off the command line's start
    from vykhukhol.members.importers import outcome  # off the command line's start
    from vykhukhol.members.importing import SeriesStart  # off the command line's start
    from vykhukhol.settings import fields as site_fields  # off the command line's start

    settings = ctx.settings()
    service = svc.find_service(ctx.data, args.service)  # an unknown service before the file is read
    series = SeriesStart.parse(" ".join(args.series))
    series.check(service.name, svc.letter_count(service))
    columns = Columns(site_fields.load(ctx.data.root), Columns.parse_map(args.map))
    raw = _read_bytes(args.file, importers.MAX_BYTES)
    reading = importers.read(args.tool, raw, Path(args.file).name, columns=columns)
    result = outcome.apply(ctx.data, settings, args.service, reading, dry_run=args.dry_run,
                           series=series)
    for line in outcome.summary(result, option=True):
        print(line)
    if args.show:
        for line in outcome.by_state(reading, result):
            print(line)
    for refused in result.refused[:importers.SHOWN_REFUSED]:
        print(f"{refused.where}: {refused.text!r}: {refused.why.message}", file=sys.stderr)
    if len(result.refused) > importers.SHOWN_REFUSED:
        print(f"… and {len(result.refused) - importers.SHOWN_REFUSED} more refused lines",
              file=sys.stderr)


def suppress_arguments(p: Parser) -> None:
    what = actions(p)
    a = add_command(what, "list", "the list's lines, its header first",
                    "vykhukhol suppress list --search example.org")
    a.add_argument("--search", metavar="TEXT", help="only lines that hold TEXT, e.g. example.org")
    a = add_command(what, "add", "suppress addresses (all are checked first)",
                    "vykhukhol suppress add anna@example.org boris@example.org")
    a.add_argument("email", nargs="+", help=EMAIL_HELP)
    add_command(what, "remove", "take an address off the list").add_argument(
        "email", help=EMAIL_HELP)
    a = add_command(what, "import", "suppress many addresses from a file",
                    "vykhukhol suppress import bounced.csv",
                    "cut -f1 old.tsv | vykhukhol suppress import -")
    a.add_argument("file", help="UTF-8: a CSV with an email column, or one address a line; "
                                "-: standard input")
    a = add_command(what, "export", "write the list as CSV")
    a.add_argument("file", nargs="?", help="where to write (default: standard output)")


def cmd_suppress(ctx: Context, args) -> None:
    """Every address is checked before the list changes; the file is written
    only by :mod:`vykhukhol.members.suppression`."""
    from vykhukhol.members import suppression  # off the command line's start

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
        text = sys.stdin.read() if args.file == "-" else read_file(args.file, "import file")

        result = importing.suppress_addresses(data, secret, text, "cli", now())
        print(f"{result['added']} added, {result['already']} already on the list, "
              f"{len(result['invalid'])} invalid")
        for lineno, line, reason in result["invalid"][:SHOWN_INVALID]:
            print(f"line {lineno}: {line!r}: {reason}", file=sys.stderr)
    elif args.action == "export":
        export_suppressed(ctx, args.file)


def export_suppressed(ctx: Context, target: str | None) -> None:
    from vykhukhol.members import suppression  # off the command line's start

    with export_target(target) as (out, counted):
        count = suppression.write_csv(ctx.data, out, progress=counted)
    if target:
        print(f"{numbered(count, 'address', 'addresses')} written to {target}", file=sys.stderr)


def held_arguments(p: Parser) -> None:
    what = actions(p)
    add_command(what, "list", "whether requests are held, since when, and to whom")
    add_command(what, "release", "end the hold: every held request goes with the next run")
    add_command(what, "drop", "end the hold: the held addresses, still unconfirmed, leave "
                "their lists and are not asked")


def cmd_held(ctx: Context, args) -> None:
    """Confirmation requests held by a wave of sign-ups past ``subscribe_alarm``
    (:mod:`vykhukhol.members.held`): see them, release them, or drop them."""
    from vykhukhol.members import held

    if args.action == "list":
        since = held.holding(ctx.data) and held.hold_since(ctx.data)
        waiting = held.held(ctx.data)
        print(f"held since {since:%Y-%m-%d %H:%M} UTC" if since else "not holding")
        for service, email in waiting:
            print(f"{service}\t{email}")
        print(f"{numbered(len(waiting), 'request')} held")
    elif args.action == "release":
        count = held.release(ctx.data)
        print(f"{numbered(count, 'request')} released: they go with the next run; "
              "the hold is over")
    else:
        count = held.drop(ctx.data)
        print(f"{numbered(count, 'address', 'addresses')} taken off their lists unasked; "
              "the hold is over")
