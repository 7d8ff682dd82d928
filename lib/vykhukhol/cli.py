"""The ``vykhukhol`` command (SPEC 11).

Every command validates all of its input before it changes anything. Errors
are one line on stderr: exit code 1 for errors, 2 for usage errors. Long work
shows progress on a terminal and stays quiet otherwise.
"""

from __future__ import annotations

import argparse
import getpass
import os
import re
import secrets
import sys
from datetime import datetime
from pathlib import Path

from vykhukhol import auth, files, locks, membership, newsletters, runlog, sender, state
from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol import subscribers as subs
from vykhukhol.datadir import CHECKOUT, DataDir, locate
from vykhukhol.errors import BadInput, Conflict, NoSecret, NotFound, VykhukholError
from vykhukhol.timeutil import UTC, format_time, parse_local_time

_NOT_UTF8 = re.compile("[\udc80-\udcff]")  # what Python makes of bytes that are not UTF-8

# Where a secret comes from when it is not typed at a prompt (README §2): the
# command line shows it to every user of the host in `ps` and keeps it in the
# shell history, so these are the quiet ways.
PASSWORD_ENV = "VYKHUKHOL_PASSWORD"  # the admin password, for init and password
VALUE_ENV = "VYKHUKHOL_VALUE"        # a secret setting's value, for settings set
STDIN = "-"                          # read the value from the first line of standard input
ASK = "\0ask"                        # --password given without a value: ask for it
VISIBLE = ("note: a secret on the command line is visible to other users in `ps` and stays in "
           "the shell history; leave it out to be asked for it, give - to read it from standard "
           "input, or set {env}")


NAME_HELP = "lower-case letters, digits, - and _, e.g. news"


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one clear line, exit 2
        raise UsageError(f"{self.prog}: {message}")


def port_number(text: str) -> int:
    """``--port``: a TCP port, 1-65535."""
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number from 1 to 65535 (e.g. 8080)")
    return port


_HOST_NAME = re.compile(r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                        r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")


def host_address(text: str) -> str:
    """``--host``: an IP address (127.0.0.1, ::1, 0.0.0.0) or a host name (localhost)."""
    import ipaddress

    try:
        return str(ipaddress.ip_address(text.strip("[]")))
    except ValueError:
        pass
    if _HOST_NAME.fullmatch(text) and not text.replace(".", "").isdigit():
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not an IP address or a host name (e.g. 127.0.0.1)")


def _progress(text: str) -> None:
    if sys.stderr.isatty():
        print(f"\r{text}", end="", file=sys.stderr, flush=True)


def read_secret(given: str | None, what: str, env: str, required: bool = True) -> str | None:
    """A secret value: ``given`` on the command line (``-``: the first line of
    standard input; :data:`ASK` or None: not given), else the variable ``env``,
    else typed at a prompt (twice) on a terminal or read from standard input.
    None only when not ``required`` and nothing was given."""
    if given == STDIN:
        return _stdin_line(what)
    if given not in (None, ASK):
        return given
    if os.environ.get(env):
        return os.environ[env]
    if given is None and not required:
        return None
    if not sys.stdin.isatty():
        return _stdin_line(what)
    value = getpass.getpass(f"{what}: ")
    if getpass.getpass("again: ") != value:
        raise BadInput(f"the two {what}s differ; nothing changed")
    return value


def _stdin_line(what: str) -> str:
    line = sys.stdin.readline()
    if not line:
        raise BadInput(f"no {what} on standard input; nothing changed")
    return line.removesuffix("\n").removesuffix("\r")


def _note_if_visible(given: str | None, env: str) -> None:
    if given not in (None, ASK, STDIN, ""):
        print(VISIBLE.format(env=env), file=sys.stderr)


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
    password = read_secret(args.password, "admin password", PASSWORD_ENV, required=False)
    if password is not None:
        raw["security.admin_password"] = auth.hash_password(password)
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
    if password is None:
        print("no admin password yet: set one with `vykhukhol password`")
    _warn_http(raw["site_url"])
    _note_if_visible(args.password, PASSWORD_ENV)


HTTP_WARNING = ("warning: site_url {url} is not https: letters go without one-click unsubscribe "
                "(List-Unsubscribe-Post, RFC 8058), which Gmail and Yahoo want of bulk senders")


def _warn_http(site_url: str) -> None:
    if not site_url.startswith("https://"):
        print(HTTP_WARNING.format(url=site_url), file=sys.stderr)


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
    print(f"secret: {'refusing: missing or too short' if settings.secret_problem else 'set'}")
    from vykhukhol import health

    cgi_dir = Path(args.cgi_dir) if args.cgi_dir else CHECKOUT / "cgi"
    for warning in health.warnings(data, settings, cgi_dir):
        print(f"warning: {warning}")
    if settings["mail.dkim_domain"]:
        from vykhukhol import compose
        from vykhukhol.mail import dkim

        problem = dkim.problem(data.root, settings)
        print(f"dkim problem: {problem}" if problem else
              f"dkim: signing as {settings['mail.dkim_selector']}._domainkey."
              f"{settings['mail.dkim_domain']}")
        signer = settings["mail.dkim_domain"]
        for name, domain in dkim.misaligned(signer, compose.senders(data, settings)):
            print(f"dkim note: service {name} sends from {domain}, which a signature of "
                  f"{settings['mail.dkim_domain']} does not align with for DMARC "
                  f"(make a key for {domain})")
    else:
        print("dkim: off (letters are not signed)")
    for lock in locks.all_locks(data):
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


def cmd_bounce(ctx: Context, args) -> None:
    """One returned message on standard input, for a mail server's "pipe to a
    program": exit code 0 whatever it is (a failure is a line in bounces.log),
    so the mail server never bounces the bounce."""
    from vykhukhol.bounces import record, sources

    try:
        print(sources.read_stdin(ctx.data, ctx.settings(), sys.stdin.buffer))
    except Exception as exc:  # noqa: BLE001 - exit 0 is the contract with the mail server
        reason = exc.message if isinstance(exc, VykhukholError) else f"{type(exc).__name__}: {exc}"
        record.problem(ctx.data, record.PIPE, f"not processed: {reason}")
        print(f"not processed: {reason}")


def cmd_mode(ctx: Context, args) -> None:
    ctx.settings()
    cleared = locks.set_mode(ctx.data, ctx.data.settings, args.mode)
    print(f"mode: {args.mode}")
    for item in cleared:
        print(f"cleared {item}")


def cmd_password(ctx: Context, args) -> None:
    ctx.settings()
    password = read_secret(args.password, "new admin password", PASSWORD_ENV)
    settings_mod.update(ctx.data.settings, {"security.admin_password": auth.hash_password(password)})
    from vykhukhol.web import session  # a new password ends every admin session

    session.end_all(ctx.data)
    print("admin password set; every admin session has ended")
    _note_if_visible(args.password, PASSWORD_ENV)


def cmd_settings(ctx: Context, args) -> None:
    current = ctx.settings()
    spec = settings_mod.key(args.key)
    if args.action == "get":
        value = current.raw.get(spec.full, spec.default)
        if spec.secret and not args.show:
            value = "(set)" if value else "(not set)"
        print(value)
        return
    if spec.full == "security.admin_password":
        raise BadInput("set the admin password with `vykhukhol password`")
    if spec.full == "mode":
        raise BadInput("switch the mode with `vykhukhol mode debug|working`")
    if args.generate:
        if spec.full != "security.secret":
            raise BadInput("--generate makes only security.secret")
        if args.value is not None:
            raise BadInput("give either a value or --generate, not both")
        value = settings_mod.new_secret()
    elif spec.secret:
        value = read_secret(args.value, spec.full, VALUE_ENV)
    elif args.value is None:
        raise BadInput(f"{spec.full}: give the value")
    else:
        value = args.value
    settings_mod.check(spec.full, value)
    settings_mod.check_on_host(spec.full, value)
    settings_mod.update(ctx.data.settings, {spec.full: value})
    # A secret is never echoed: not to the terminal, its scroll-back or a log of the session.
    print(f"{spec.full} {'set' if value else 'cleared'}" if spec.secret else f"{spec.full} = {value.strip()}")
    if spec.full == "security.secret":
        print("every confirm and unsubscribe link sent before now stops working", file=sys.stderr)
    if spec.secret:
        _note_if_visible(args.value, VALUE_ENV)
    if spec.full == "site_url":
        _warn_http(value.strip())


def cmd_dkim(ctx: Context, args) -> None:
    """``dkim keygen``: a new key in data/dkim/, the settings pointed at it, the
    DNS record to publish."""
    from vykhukhol.mail import dkim

    before = ctx.settings()
    domain = settings_mod.check("mail.dkim_domain", args.domain)
    selector = settings_mod.check("mail.dkim_selector", args.selector)
    if not domain:
        raise BadInput("--domain is empty")
    path, record = dkim.keygen(ctx.data.root, domain, selector)
    settings_mod.update(ctx.data.settings, {"mail.dkim_domain": domain,
                                            "mail.dkim_selector": selector,
                                            "mail.dkim_key_file": ""})
    print(f"wrote the private key {path} (only its owner may read it)")
    print(f"set mail.dkim_domain = {domain}")
    print(f"set mail.dkim_selector = {selector}")
    if before["mail.dkim_key_file"]:
        print(f"set mail.dkim_key_file = (empty: the new key; it was {before['mail.dkim_key_file']})")
    print("publish this DNS TXT record; letters are signed from now on, and receivers "
          "verify them once the record is visible:")
    print(record)


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
        print("\t".join(("#name", "db", "state", "letters", "title")))
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
        letters = svc.load_letters(service)  # a letter that does not parse: nothing printed
        print("\t".join(("#number", "delay", "subject", "html")))
        for letter in letters:
            print(f"{letter.number}\t{format_duration(letter.delay)}\t{letter.subject}"
                  + ("\t(html)" if letter.html else ""))


def cmd_subscriber(ctx: Context, args) -> None:
    settings = ctx.settings()
    data = ctx.data
    if args.action == "add":
        if not args.confirmed and settings.secret_problem:  # the letter could carry no link
            raise NoSecret(settings.secret_problem)
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
        print(subs.HEADER)
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
    from vykhukhol.export import write_csv

    service = svc.find_service(data, service_name)
    out = files.open_private(Path(target)) if target else sys.stdout
    try:
        write_csv(service.subscribers_path, out,
                  progress=(lambda n: _progress(f"exported {n}")) if target else None)
    finally:
        if target:
            out.close()
            _progress("")


def cmd_newsletter(ctx: Context, args) -> None:
    settings = ctx.settings()
    data = ctx.data
    if args.action == "create":
        html = _read_file(args.html_file, "--html-file") if args.html_file else None
        try:
            start = newsletters.check_start(parse_local_time(args.at, settings["timezone"])) \
                if args.at else None
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
    p.add_argument("--admin-email", help="where alerts and reports go, e.g. you@example.org")
    p.add_argument("--site-url", help="URL of the folder that holds cgi/, e.g. https://example.org/lists")
    p.add_argument("--password", nargs="?", const=ASK, metavar="P",
                   help=f"the admin password; alone: ask for it; -: read it from standard input "
                        f"(also ${PASSWORD_ENV})")
    p.add_argument("--cgi-dir", help="folder of the CGI scripts (default: cgi/ of the checkout)")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("serve", help="serve the pages and run the sender every minute")
    p.add_argument("--host", type=host_address, default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)")
    p.add_argument("--port", type=port_number, default=8080, help="TCP port, 1-65535 (default 8080)")
    p.add_argument("--no-ticker", action="store_true", help="no sender run every minute")
    p.add_argument("--cgi-dir", help="folder of the CGI scripts (default: cgi/ of the checkout)")
    p.set_defaults(func=cmd_serve)

    sub.add_parser("cron", help="one run of the sender").set_defaults(func=cmd_cron)
    p = sub.add_parser("status", help="mode, block, warnings, locks, services, jobs")
    p.add_argument("--cgi-dir", help="folder of the CGI scripts (default: cgi/ of the checkout)")
    p.set_defaults(func=cmd_status)
    sub.add_parser("bounce", help="read one returned message on standard input").set_defaults(
        func=cmd_bounce)

    p = sub.add_parser("mode", help="debug (off) or working")
    p.add_argument("mode", choices=sorted(settings_mod.MODES),
                   help="debug: nothing is sent; working: letters go (also clears a block)")
    p.set_defaults(func=cmd_mode)

    p = sub.add_parser("password", help="set the admin password (asked for, or $VYKHUKHOL_PASSWORD)")
    p.add_argument("--password", metavar="P",
                   help="the new password (visible in ps); -: read it from standard input")
    p.set_defaults(func=cmd_password)

    p = sub.add_parser("settings", help="read or change a setting")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    a = actions.add_parser("get", help="print a value (a secret one as (set))")
    a.add_argument("key", help="news_per_run, or mail.smtp_port, security.secret …")
    a.add_argument("--show", action="store_true", help="print a secret value instead of (set)")
    a = actions.add_parser("set", help="check and store a value")
    a.add_argument("key", help="news_per_run, or mail.smtp_port, security.secret …")
    a.add_argument("value", nargs="?",
                   help="e.g. 100, or 30s, 2h, 3d for durations; a secret key's value may be "
                        f"left out (asked for, or ${VALUE_ENV}) or - (read from standard input)")
    a.add_argument("--generate", action="store_true", help="a new random security.secret")
    p.set_defaults(func=cmd_settings)

    p = sub.add_parser("dkim", help="DKIM signing keys")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    a = actions.add_parser("keygen", help="make a key, turn signing on, print the DNS record")
    a.add_argument("--domain", required=True, help="the From domain of your letters, e.g. example.org")
    a.add_argument("--selector", default=settings_mod.KEYS["mail.dkim_selector"].default,
                   help="the DNS name's first part (default vykhukhol), e.g. mail2026")
    p.set_defaults(func=cmd_dkim)

    p = sub.add_parser("db", help="DBs: folders of services that the sender locks as one")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    actions.add_parser("add", help="make a DB").add_argument("name", help=NAME_HELP)
    actions.add_parser("remove", help="remove an empty DB").add_argument("name", help=NAME_HELP)
    actions.add_parser("list", help="the DBs, one a line")
    p.set_defaults(func=cmd_db)

    p = sub.add_parser("service", help="services (mailing lists)")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    for action in ("add", "edit"):
        a = actions.add_parser(action, help=f"{action} a service")
        a.add_argument("name", help=NAME_HELP)
        if action == "add":
            a.add_argument("--db", required=True, help="the DB it belongs to, e.g. main")
            a.add_argument("--title", required=True, help='what subscribers read, e.g. "Our news"')
        else:
            a.add_argument("--title", help='what subscribers read, e.g. "Our news"')
        a.add_argument("--from-name", help='sender name of its letters, e.g. "Anna from Example"')
        a.add_argument("--from-email", help="sender address, e.g. news@example.org "
                                            "(default: the mail.from_email setting)")
        a.add_argument("--delete-finished", choices=["yes", "no"],
                       help="yes: delete a subscriber who got the whole series; no: keep as done")
        a.add_argument("--send-window", metavar="EXPR",
                       help='minutes when series letters may go, in timezone, e.g. "0 9-18 * * 1-5"')
    for action in ("enable", "disable", "remove"):
        actions.add_parser(action, help=f"{action} a service").add_argument("name", help=NAME_HELP)
    actions.add_parser("list", help="the services, a header row first")
    p.set_defaults(func=cmd_service)

    p = sub.add_parser("letter", help="letters of a series")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    a = actions.add_parser("add", help="add a letter at the end of a series")
    a.add_argument("service", help="the service's name")
    a.add_argument("--subject", required=True, help='a template, e.g. "Lesson 2 for {{ name }}"')
    a.add_argument("--delay", required=True,
                   help="after the confirmation (letter 1) or the previous letter, e.g. 2d, 12h, 0s")
    body = a.add_mutually_exclusive_group(required=True)
    body.add_argument("--body", help="the text, a template")
    body.add_argument("--body-file", help="a UTF-8 file with the text")
    a.add_argument("--html-file", help="a UTF-8 file with an HTML version (optional)")
    actions.add_parser("list", help="the series, a header row first").add_argument(
        "service", help="the service's name")
    a = actions.add_parser("remove", help="remove a letter; later letters move up")
    a.add_argument("service", help="the service's name")
    a.add_argument("number", type=int, help="its position, e.g. 2")
    p.set_defaults(func=cmd_letter)

    p = sub.add_parser("subscriber", help="subscribers")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    a = actions.add_parser("add", help="add one address")
    a.add_argument("service", help="the service's name")
    a.add_argument("email", help="e.g. anna@example.org")
    a.add_argument("--name", help='e.g. "Anna"')
    a.add_argument("--confirmed", action="store_true",
                   help="they agreed already (else: asked to confirm by mail)")
    a = actions.add_parser("remove", help="remove one address")
    a.add_argument("service", help="the service's name")
    a.add_argument("email", help="e.g. anna@example.org")
    actions.add_parser("list", help="the subscriber file's lines, its header first").add_argument(
        "service", help="the service's name")
    a = actions.add_parser("import", help="add many addresses from a file")
    a.add_argument("service", help="the service's name")
    a.add_argument("file", help="UTF-8: a CSV with an email column (and name), "
                                "email,name lines, or one address a line")
    a.add_argument("--confirmed", action="store_true",
                   help="they agreed already (else: asked to confirm by the sender's runs)")
    a = actions.add_parser("export", help="write the subscribers as CSV")
    a.add_argument("service", help="the service's name")
    a.add_argument("file", nargs="?", help="where to write (default: standard output)")
    p.set_defaults(func=cmd_subscriber)

    p = sub.add_parser("newsletter", help="letters to all subscribers of some services")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    a = actions.add_parser("create", help="make a job; prints its name")
    a.add_argument("--services", required=True, help="service names, e.g. news,offers")
    a.add_argument("--subject", required=True, help='a template, e.g. "News for {{ name }}"')
    body = a.add_mutually_exclusive_group(required=True)
    body.add_argument("--body", help="the text, a template")
    body.add_argument("--body-file", help="a UTF-8 file with the text")
    a.add_argument("--html-file", help="a UTF-8 file with an HTML version (optional)")
    a.add_argument("--at", metavar="YYYY-MM-DD HH:MM",
                   help='start time in timezone, e.g. "2026-12-01 09:00" (default: now; not in the past)')
    actions.add_parser("list", help="the jobs and their progress")
    actions.add_parser("cancel", help="stop a job and delete it").add_argument(
        "job", help="its name, as create printed it")
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
