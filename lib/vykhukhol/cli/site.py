"""The installation and its runs: ``init``, ``serve``, ``cron``, ``status``,
``mode`` and ``password``, each command's arguments beside its code."""

from __future__ import annotations

import argparse
import os
import re
import sys
from datetime import datetime
from pathlib import Path

from vykhukhol import newsletters, sender
from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol.cli.common import (
    ASK,
    PASSWORD_ENV,
    Context,
    Parser,
    note_if_visible,
    read_secret,
    warn_http,
)
from vykhukhol.datadir import CHECKOUT
from vykhukhol.errors import BadInput, Conflict
from vykhukhol.files import RenameLock, runlog
from vykhukhol.sender import doors as locks
from vykhukhol.services import subscribers as subs
from vykhukhol.settings import password as auth
from vykhukhol.timeutil import UTC, format_time, now
from vykhukhol.watch import cronwatch, pace, selfblock

CGI_DIR_HELP = "folder of the CGI scripts (default: cgi/ of the checkout)"


def init_arguments(p: Parser) -> None:
    p.add_argument("--admin-email", help="where alerts and reports go, e.g. you@example.org")
    p.add_argument("--site-url", help="URL of the folder that holds cgi/, e.g. https://example.org/lists")
    p.add_argument("--password", nargs="?", const=ASK, metavar="P",
                   help=f"the admin password; alone: ask for it; -: read it from standard input "
                        f"(also ${PASSWORD_ENV})")
    p.add_argument("--cgi-dir", help=CGI_DIR_HELP)


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
    RenameLock(data.newsletters, newsletters.LOCK_STEM).ensure()
    script = rename_cron_script(cgi_dir)
    print(f"initialised {data.root}")
    if script:
        url = f"{raw['site_url']}/cgi/{script.name}"
        print(f"cron URL: {url}")
        print(f"crontab line: */5 * * * * wget -q -t 1 -O /dev/null {url}")
    if password is None:
        print("no admin password yet: set one with `vykhukhol password`")
    warn_http(raw["site_url"])
    note_if_visible(args.password, PASSWORD_ENV)


def rename_cron_script(cgi_dir: Path) -> Path | None:
    """cgi/cron.py → cgi/cron-<random>.py, so strangers cannot guess the URL."""
    existing = sorted(cgi_dir.glob("cron-*.py"))
    if existing:
        return existing[0]
    shipped = cgi_dir / "cron.py"
    if not shipped.exists():
        return None
    import secrets  # not at the top: `vykhukhol cron` loads this module

    target = cgi_dir / f"cron-{secrets.token_hex(8)}.py"
    os.rename(shipped, target)
    return target


def port_number(text: str) -> int:
    """``--port``: a TCP port, 1-65535."""
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number from 1 to 65535 (e.g. 8080)")
    return port


# A pattern, not compiled at import: only `serve --host` asks (every cron loads this module).
_HOST_NAME = (r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
              r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")


def host_address(text: str) -> str:
    """``--host``: an IP address (127.0.0.1, ::1, 0.0.0.0) or a host name (localhost)."""
    import ipaddress

    try:
        return str(ipaddress.ip_address(text.strip("[]")))
    except ValueError:
        pass
    if re.fullmatch(_HOST_NAME, text) and not text.replace(".", "").isdigit():
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not an IP address or a host name (e.g. 127.0.0.1)")


def serve_arguments(p: Parser) -> None:
    p.add_argument("--host", type=host_address, default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)")
    p.add_argument("--port", type=port_number, default=8080, help="TCP port, 1-65535 (default 8080)")
    p.add_argument("--no-ticker", action="store_true", help="no sender run every minute")
    p.add_argument("--cgi-dir", help=CGI_DIR_HELP)


def cmd_serve(ctx: Context, args) -> None:
    from vykhukhol.web.server import serve  # off the command line's start

    serve(ctx.data, host=args.host, port=args.port, ticker=not args.no_ticker,
          cgi_dir=Path(args.cgi_dir) if args.cgi_dir else None)


def cmd_cron(ctx: Context, args) -> None:
    import gc

    # No cyclic collection during the run: its objects are freed as they go
    # (a 2,000-letter run leaves ~400 objects of cyclic garbage in all, for
    # the collection below), and the imports, the take and the fold would
    # pay ~10 ms of collections.
    gc.disable()
    try:
        report = sender.run(ctx.data, ctx.settings())
    finally:
        gc.enable()
    sys.stdout.write(report.text())
    # The interpreter's last collections need not walk what is left (for
    # 2,000 letters, ~35 ms of exit become ~20 with this collection). The collection comes first: a frozen object is never finalized,
    # so garbage holding a file would otherwise leave its buffer unwritten.
    gc.collect()
    gc.freeze()


def status_arguments(p: Parser) -> None:
    p.add_argument("--cgi-dir", help=CGI_DIR_HELP)


def cmd_status(ctx: Context, args) -> int:
    """What the installation is doing; exits 1 while the cron is silent (for monitoring)."""
    settings = ctx.settings()
    data = ctx.data
    print(f"data: {data.root}")
    print(f"mode: {settings['mode']}")
    last = cronwatch.last_run(str(data.root))
    quiet = cronwatch.silence(str(data.root))
    print(f"last run: {format_time(datetime.fromtimestamp(last, UTC)) if last else 'never'}"
          + (" (silent: the cron seems to have stopped)" if quiet is not None else ""))
    block = selfblock.block_reason(data)
    print(f"blocked: {block.strip() if block else 'no'}")
    print(f"secret: {'refusing: missing or too short' if settings.secret_problem else 'set'}")
    from vykhukhol.watch import health  # off the command line's start

    cgi_dir = Path(args.cgi_dir) if args.cgi_dir else CHECKOUT / "cgi"
    for warning in health.warnings(data, settings, cgi_dir):
        print(f"warning: {runlog.one_line(warning)}")
    if settings["mail.dkim_domain"]:
        from vykhukhol.mail import compose, dkim  # Jinja2: only for a check of the letters

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
              f"{count['sent']}/{count['total']} handed over, {count['failed']} failed, "
              f"{count['skipped']} skipped, {count['in doubt']} in doubt")

    for line in pace.shown(data, settings, now()):
        print(f"pace {line.server}: " + (
            f"at most {line.pace} letters an hour, a tenth more each clean hour up to "
            f"{line.ceiling}" if line.binds else "back at hourly_limit")
            + f" (the server last said too many at {line.said})")
    # Runs and pages write logs of their own; the last ten lines of both, in time order.
    lines = runlog.recent(data, 10) + runlog.recent(data, 10, runlog.PAGES_LOG)
    for entry in sorted(lines, key=lambda entry: entry.time)[-10:]:
        print(f"log {entry.time} {entry.lease} {entry.level}: {runlog.one_line(entry.message)}")
    return 1 if quiet is not None else 0


def mode_arguments(p: Parser) -> None:
    p.add_argument("mode", nargs="?", choices=sorted(settings_mod.MODES),
                   help="debug: nothing is sent; working: letters go (also clears a block); "
                        "left out: print the mode")


def cmd_mode(ctx: Context, args) -> None:
    settings = ctx.settings()
    if args.mode is None:
        print(f"mode: {settings['mode']}")
        return
    cleared = locks.set_mode(ctx.data, ctx.data.settings, args.mode)
    print(f"mode: {args.mode}")
    for item in cleared:
        print(f"cleared {item}")


def password_arguments(p: Parser) -> None:
    p.add_argument("--password", metavar="P",
                   help="the new password (visible in ps); -: read it from standard input")
    factor = p.add_mutually_exclusive_group()
    factor.add_argument("--totp", action="store_true",
                        help="turn two factors on: print a QR code to scan, ask a code from the app, "
                             "print ten recovery codes once (the password stays)")
    factor.add_argument("--reset-totp", action="store_true",
                        help="turn two factors off (the way back when the phone is lost)")


def cmd_password(ctx: Context, args) -> None:
    if args.totp or args.reset_totp:
        if args.password is not None:
            raise BadInput("the password and two factors are set by separate commands: "
                           "leave out --password")
        import vykhukhol.cli.twofactor as twofactor  # pyotp and segno: only for these two

        if args.totp:
            twofactor.turn_on(ctx)
        else:
            twofactor.turn_off(ctx)
        return
    ctx.settings()
    password = read_secret(args.password, "new admin password", PASSWORD_ENV)
    settings_mod.update(ctx.data.settings, {"security.admin_password": auth.hash_password(password)})
    from vykhukhol.web import session  # a new password ends every admin session

    session.end_all(ctx.data)
    print("admin password set; every admin session has ended")
    note_if_visible(args.password, PASSWORD_ENV)
