"""The ``vykhukhol`` command (SPEC 11).

Every command validates all of its input before it changes anything. Errors
are one line on stderr: exit code 1 for errors, 2 for usage errors. Long work
shows progress on a terminal and stays quiet otherwise.
"""

from __future__ import annotations

import argparse
import csv
import getpass
import os
import re
import secrets
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from vykhukhol import auth, membership, newsletters, runlog, runtime, sender, state
from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol import subscribers as subs
from vykhukhol.datadir import CHECKOUT, DataDir, locate
from vykhukhol.errors import BadInput, Conflict, NotFound, VykhukholError
from vykhukhol.timeutil import UTC, format_time

_NOT_UTF8 = re.compile("[\udc80-\udcff]")  # what Python makes of bytes that are not UTF-8


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one clear line, exit 2
        raise UsageError(f"{self.prog}: {message}")


def _progress(text: str) -> None:
    if sys.stderr.isatty():
        print(f"\r{text}", end="", file=sys.stderr, flush=True)


class Context:
    def __init__(self, data_arg: str | None) -> None:
        self.data = DataDir(locate(data_arg))

    def settings(self) -> settings_mod.Settings:
        if not self.data.settings.exists():
            raise NotFound(f"no settings in {self.data.root}; run `vykhukhol init` first")
        return settings_mod.load(self.data.settings)


# --- commands ----------------------------------------------------------------

def cmd_init(ctx: Context, args) -> None:
    data = ctx.data
    if data.settings.exists():
        raise Conflict(f"{data.root} is initialised already; change settings with `vykhukhol settings set`")
    raw = settings_mod.initial(args.admin_email or "", args.site_url or "")
    if args.password is not None:
        raw["security.admin_password"] = auth.hash_password(args.password)
    cgi_dir = Path(args.cgi_dir) if args.cgi_dir else CHECKOUT / "cgi"
    data.make_skeleton()
    settings_mod.write_initial(data.settings, raw)
    from vykhukhol.files import RenameLock
    RenameLock(data.newsletters, newsletters.LOCK_STEM).ensure()
    script = rename_cron_script(cgi_dir)
    print(f"initialised {data.root}")
    if script:
        url = f"{raw['site_url']}/cgi/{script.name}"
        print(f"cron URL: {url}")
        print(f"crontab line: */5 * * * * wget -q -t 1 -O /dev/null {url}")
    if args.password is None:
        print("no admin password yet: set one with `vykhukhol password`")


def rename_cron_script(cgi_dir: Path) -> Path | None:
    """cgi/cron.py → cgi/cron-<random>.py, so strangers cannot guess the URL."""
    existing = sorted(cgi_dir.glob("cron-*.py"))
    if existing:
        return existing[0]
    shipped = cgi_dir / "cron.py"
    if not shipped.exists():
        return None
    target = cgi_dir / f"cron-{secrets.token_hex(8)}.py"
    os.rename(shipped, target)
    return target


def cmd_serve(ctx: Context, args) -> None:
    from vykhukhol.web.serve import serve

    serve(ctx.data, host=args.host, port=args.port, ticker=not args.no_ticker,
          cgi_dir=Path(args.cgi_dir) if args.cgi_dir else None)


def cmd_cron(ctx: Context, args) -> None:
    report = sender.run(ctx.data, ctx.settings())
    sys.stdout.write(report.text())


def cmd_status(ctx: Context, args) -> None:
    settings = ctx.settings()
    data = ctx.data
    print(f"data: {data.root}")
    print(f"mode: {settings['mode']}")
    block = state.block_reason(data)
    print(f"blocked: {block.strip() if block else 'no'}")
    for problem in settings.problems:
        print(f"settings problem: {problem}")
    locks = [newsletters.lock(data)] + [svc.db_lock(data, db) for db in svc.list_dbs(data)]
    for lock in locks:
        holder = lock.holder()
        if holder:
            since = datetime.fromtimestamp(holder.since, UTC)
            print(f"lock busy: {lock.busy.relative_to(data.root)} by run {holder.lease} since {format_time(since)}")
    for service in svc.load_services(data):
        count = subs.counts(service.subscribers_path)
        print(f"service {service.name} (DB {service.db}): {'enabled' if service.enabled else 'disabled'}, "
              f"{count['new']} new, {count['active']} active, {count['done']} done"
              + (f", {count['malformed']} malformed lines" if count["malformed"] else ""))
    for job in newsletters.list_jobs(data):
        count = newsletters.counts(data.job(job.name, "list"))
        print(f"newsletter {job.name}: start {format_time(job.start)}, "
              f"{count['sent']}/{count['total']} sent, {count['failed']} failed, "
              f"{count['skipped']} skipped, {count['in doubt']} in doubt")
    for entry in runlog.recent(data, 10):
        print(f"log {entry.time} {entry.lease} {entry.level}: {entry.message}")


def cmd_mode(ctx: Context, args) -> None:
    ctx.settings()
    cleared = runtime.set_mode(ctx.data, ctx.data.settings, args.mode)
    print(f"mode: {args.mode}")
    for item in cleared:
        print(f"cleared {item}")


def cmd_password(ctx: Context, args) -> None:
    ctx.settings()
    password = args.password
    if password is None:
        if not sys.stdin.isatty():
            password = sys.stdin.readline().rstrip("\n")
        else:
            password = getpass.getpass("new admin password: ")
            if getpass.getpass("again: ") != password:
                raise BadInput("the passwords differ; nothing changed")
    settings_mod.update(ctx.data.settings, {"security.admin_password": auth.hash_password(password)})
    from vykhukhol.web import session  # a new password ends every admin session

    session.end_all(ctx.data)
    print("admin password set; every admin session has ended")


def cmd_settings(ctx: Context, args) -> None:
    current = ctx.settings()
    if args.action == "get":
        spec = settings_mod.key(args.key)
        value = current.raw.get(spec.full, spec.default)
        print("(set)" if spec.secret and value else value)
        return
    if args.key in ("security.admin_password",):
        raise BadInput("set the admin password with `vykhukhol password`")
    if args.key == "mode":
        raise BadInput("switch the mode with `vykhukhol mode debug|working`")
    if args.key == "security.secret":
        settings_mod.check_secret(args.value)
    settings_mod.update(ctx.data.settings, {args.key: args.value})
    print(f"{settings_mod.key(args.key).full} = {args.value.strip()}")


def cmd_db(ctx: Context, args) -> None:
    ctx.settings()
    if args.action == "add":
        svc.add_db(ctx.data, args.name)
        print(f"DB {args.name} added")
    elif args.action == "remove":
        svc.remove_db(ctx.data, args.name)
        print(f"DB {args.name} removed")
    else:
        for db in svc.list_dbs(ctx.data):
            print(db)


def _service_values(args) -> dict[str, str]:
    values = {}
    for option, key in (("title", "title"), ("from_name", "from_name"), ("from_email", "from_email"),
                        ("delete_finished", "delete_finished"), ("send_window", "send_window")):
        value = getattr(args, option, None)
        if value is not None:
            values[key] = value
    return values


def cmd_service(ctx: Context, args) -> None:
    ctx.settings()
    data = ctx.data
    if args.action == "add":
        svc.add_service(data, args.name, args.db, _service_values(args))
        print(f"service {args.name} added to DB {args.db} (disabled; enable it when its letters are ready)")
    elif args.action == "edit":
        values = _service_values(args)
        if not values:
            raise BadInput("nothing to change: give at least one option")
        svc.edit_service(data, args.name, values)
        print(f"service {args.name} changed")
    elif args.action in ("enable", "disable"):
        svc.edit_service(data, args.name, {"enabled": "yes" if args.action == "enable" else "no"})
        print(f"service {args.name} {args.action}d")
    elif args.action == "remove":
        svc.remove_service(data, args.name)
        state.forget_due(data, args.name)
        print(f"service {args.name} removed")
    else:
        for service in svc.load_services(data):
            print("\t".join((service.name, service.db, "enabled" if service.enabled else "disabled",
                             str(svc.letter_count(service)), service.title)))


def _read_file(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"{what}: cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise BadInput(f"{what}: {path} is not UTF-8 text") from None


def _body(args) -> str:
    return args.body if args.body is not None else _read_file(args.body_file, "--body-file")


def cmd_letter(ctx: Context, args) -> None:
    ctx.settings()
    service = svc.find_service(ctx.data, args.service)
    if args.action == "add":
        html = _read_file(args.html_file, "--html-file") if args.html_file else None
        number = svc.add_letter(service, args.subject, args.delay, _body(args), html)
        print(f"letter {number} added to {service.name}")
    elif args.action == "remove":
        svc.remove_letter(service, args.number)
        print(f"letter {args.number} removed from {service.name}; later letters moved up")
    else:
        from vykhukhol.timeutil import format_duration
        for letter in svc.load_letters(service):
            print(f"{letter.number}\t{format_duration(letter.delay)}\t{letter.subject}"
                  + ("\t(html)" if letter.html else ""))


def cmd_subscriber(ctx: Context, args) -> None:
    settings = ctx.settings()
    data = ctx.data
    if args.action == "add":
        result = membership.subscribe(data, settings, args.service, args.email, args.name or "",
                                      ip="cli", confirmed=args.confirmed)
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
        for item in subs.read(service.subscribers_path):
            print(item.to_line() if isinstance(item, subs.Subscriber) else item.text)
    elif args.action == "import":
        text = _read_file(args.file, "import file")
        result = membership.import_addresses(data, settings, args.service, text, args.confirmed)
        _progress("")
        print(f"{result['added']} added, {result['duplicates']} already there, "
              f"{len(result['invalid'])} invalid")
        for lineno, line, reason in result["invalid"][:50]:
            print(f"line {lineno}: {line!r}: {reason}", file=sys.stderr)
    elif args.action == "export":
        export(data, args.service, args.file)


def export(data: DataDir, service_name: str, target: str | None) -> None:
    service = svc.find_service(data, service_name)
    out = open(target, "w", encoding="utf-8", newline="") if target else sys.stdout
    try:
        writer = csv.writer(out)
        writer.writerow(subs.FIELDS)
        for count, sub in enumerate(subs.subscribers(service.subscribers_path), start=1):
            writer.writerow(sub.to_line().split("\t")[:len(subs.FIELDS)])
            if target and count % 10000 == 0:
                _progress(f"exported {count}")
    finally:
        if target:
            out.close()
            _progress("")


def parse_local_time(text: str, zone: str) -> datetime:
    try:
        local = datetime.strptime(text.strip(), "%Y-%m-%d %H:%M")
        return local.replace(tzinfo=ZoneInfo(zone)).astimezone(UTC)
    except (ValueError, OverflowError):
        raise BadInput(f"{text!r} is not a time like \"2026-12-01 09:00\"") from None


def cmd_newsletter(ctx: Context, args) -> None:
    settings = ctx.settings()
    data = ctx.data
    if args.action == "create":
        html = _read_file(args.html_file, "--html-file") if args.html_file else None
        try:
            start = parse_local_time(args.at, settings["timezone"]) if args.at else None
        except BadInput as exc:
            raise BadInput(f"--at: {exc.message}") from None
        name = newsletters.create(data, args.services.split(","), args.subject, _body(args), html,
                                  start, progress=lambda n: _progress(f"recipients: {n}"))
        _progress("")
        total = newsletters.read_job(data, name).values.get("total", "0")
        print(name)
        print(f"{total} recipients", file=sys.stderr)
    elif args.action == "cancel":
        newsletters.cancel(data, args.job)
        print(f"newsletter {args.job} cancelled")
    else:
        for job in newsletters.list_jobs(data):
            count = newsletters.counts(data.job(job.name, "list"))
            print("\t".join((job.name, format_time(job.start), ",".join(job.services),
                             f"{count['sent']}/{count['total']}", f"failed {count['failed']}",
                             f"skipped {count['skipped']}", f"in doubt {count['in doubt']}")))


# --- the parser ----------------------------------------------------------------

def build_parser() -> Parser:
    parser = Parser(prog="vykhukhol", description="Flat-file mailing-list manager.")
    parser.add_argument("--data", metavar="DIR", help="the data directory")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    p = sub.add_parser("init", help="create the data directory and rename the cron script")
    p.add_argument("--admin-email")
    p.add_argument("--site-url")
    p.add_argument("--password")
    p.add_argument("--cgi-dir", help="folder of the CGI scripts (default: cgi/ of the checkout)")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("serve", help="serve the pages and run the sender every minute")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--no-ticker", action="store_true")
    p.add_argument("--cgi-dir", help="folder of the CGI scripts (default: cgi/ of the checkout)")
    p.set_defaults(func=cmd_serve)

    sub.add_parser("cron", help="one run of the sender").set_defaults(func=cmd_cron)
    sub.add_parser("status", help="mode, block, locks, services, jobs").set_defaults(func=cmd_status)

    p = sub.add_parser("mode", help="debug (off) or working")
    p.add_argument("mode", choices=["debug", "working"])
    p.set_defaults(func=cmd_mode)

    p = sub.add_parser("password", help="set the admin password")
    p.add_argument("--password")
    p.set_defaults(func=cmd_password)

    p = sub.add_parser("settings", help="read or change a setting")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    a = actions.add_parser("get")
    a.add_argument("key")
    a = actions.add_parser("set")
    a.add_argument("key")
    a.add_argument("value")
    p.set_defaults(func=cmd_settings)

    p = sub.add_parser("db", help="DBs")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    actions.add_parser("add").add_argument("name")
    actions.add_parser("remove").add_argument("name")
    actions.add_parser("list")
    p.set_defaults(func=cmd_db)

    p = sub.add_parser("service", help="services")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    for action in ("add", "edit"):
        a = actions.add_parser(action)
        a.add_argument("name")
        if action == "add":
            a.add_argument("--db", required=True)
            a.add_argument("--title", required=True)
        else:
            a.add_argument("--title")
        a.add_argument("--from-name")
        a.add_argument("--from-email")
        a.add_argument("--delete-finished", choices=["yes", "no"])
        a.add_argument("--send-window", metavar="EXPR")
    for action in ("enable", "disable", "remove"):
        actions.add_parser(action).add_argument("name")
    actions.add_parser("list")
    p.set_defaults(func=cmd_service)

    p = sub.add_parser("letter", help="letters of a series")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    a = actions.add_parser("add")
    a.add_argument("service")
    a.add_argument("--subject", required=True)
    a.add_argument("--delay", required=True)
    body = a.add_mutually_exclusive_group(required=True)
    body.add_argument("--body")
    body.add_argument("--body-file")
    a.add_argument("--html-file")
    actions.add_parser("list").add_argument("service")
    a = actions.add_parser("remove")
    a.add_argument("service")
    a.add_argument("number", type=int)
    p.set_defaults(func=cmd_letter)

    p = sub.add_parser("subscriber", help="subscribers")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    a = actions.add_parser("add")
    a.add_argument("service")
    a.add_argument("email")
    a.add_argument("--name")
    a.add_argument("--confirmed", action="store_true")
    a = actions.add_parser("remove")
    a.add_argument("service")
    a.add_argument("email")
    actions.add_parser("list").add_argument("service")
    a = actions.add_parser("import")
    a.add_argument("service")
    a.add_argument("file")
    a.add_argument("--confirmed", action="store_true")
    a = actions.add_parser("export")
    a.add_argument("service")
    a.add_argument("file", nargs="?")
    p.set_defaults(func=cmd_subscriber)

    p = sub.add_parser("newsletter", help="letters to all users")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    a = actions.add_parser("create")
    a.add_argument("--services", required=True)
    a.add_argument("--subject", required=True)
    body = a.add_mutually_exclusive_group(required=True)
    body.add_argument("--body")
    body.add_argument("--body-file")
    a.add_argument("--html-file")
    a.add_argument("--at", metavar="YYYY-MM-DD HH:MM")
    actions.add_parser("list")
    actions.add_parser("cancel").add_argument("job")
    p.set_defaults(func=cmd_newsletter)
    return parser


def main(argv: list[str] | None = None) -> int:
    # A subscriber line that is not UTF-8 is printed byte for byte, as it is in the file.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="surrogateescape")
    words = sys.argv[1:] if argv is None else argv
    if any(_NOT_UTF8.search(word) for word in words):
        print("vykhukhol: an argument is not UTF-8 text; nothing changed", file=sys.stderr)
        return 1
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        args.func(Context(args.data), args)
    except VykhukholError as exc:
        print(f"vykhukhol: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("vykhukhol: interrupted", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a file named on the command line: missing folder, no permission
        where = f": {exc.filename}" if exc.filename else ""
        print(f"vykhukhol: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    return 0
