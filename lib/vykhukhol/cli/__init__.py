"""The ``vykhukhol`` command (SPEC 11).

Every command validates all of its input before it changes anything. Errors
are one line on stderr: exit code 1 for errors, 2 for usage errors. Long work
shows progress on a terminal and stays quiet otherwise.

This file holds :func:`main` and the parser, the whole command line in one
place; the commands live in one module per group: :mod:`.site` (the
installation and its runs), :mod:`.configure` (settings and DKIM),
:mod:`.lists` (DBs, services, letters, subscribers, newsletters),
:mod:`.suppress` (the suppression list) and :mod:`.removed` (what bounces deleted); what they share is in :mod:`.common`.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import NamedTuple

from vykhukhol import settings as settings_mod
from vykhukhol.cli.common import ASK, PASSWORD_ENV, VALUE_ENV, Context
from vykhukhol.errors import VykhukholError

_NOT_UTF8 = re.compile("[\udc80-\udcff]")  # what Python makes of bytes that are not UTF-8

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


class _Command(NamedTuple):
    """Command ``name`` of :mod:`vykhukhol.cli.<module>`, imported when it runs:
    a command pays for its own module only (a cron run's start-up, README 16)."""

    module: str
    name: str

    def __call__(self, ctx: Context, args: argparse.Namespace) -> object:
        import importlib

        return getattr(importlib.import_module(f"vykhukhol.cli.{self.module}"), self.name)(ctx, args)


def _command(module: str, name: str) -> Callable[[Context, argparse.Namespace], object]:
    return _Command(module, name)


def cron_args(words: list[str]) -> argparse.Namespace | None:
    """``[--data DIR] cron`` read as the parser reads it, without building the
    parser: its forty-odd commands cost ~25 ms, and a host runs this one every
    minute (README 16). Any other spelling gives None: the parser reads it (a
    test holds the two to the same answer)."""
    if words == ["cron"]:
        data = None
    elif len(words) == 3 and words[0] == "--data" and words[2] == "cron" \
            and not words[1].startswith("-"):
        data = words[1]
    elif len(words) == 2 and words[0].startswith("--data=") and words[1] == "cron":
        data = words[0][len("--data="):]
    else:
        return None
    return argparse.Namespace(data=data, command="cron", func=_command("site", "cmd_cron"))


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
    p.set_defaults(func=_command("site", "cmd_init"))

    p = sub.add_parser("serve", help="serve the pages and run the sender every minute")
    p.add_argument("--host", type=host_address, default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)")
    p.add_argument("--port", type=port_number, default=8080, help="TCP port, 1-65535 (default 8080)")
    p.add_argument("--no-ticker", action="store_true", help="no sender run every minute")
    p.add_argument("--cgi-dir", help="folder of the CGI scripts (default: cgi/ of the checkout)")
    p.set_defaults(func=_command("site", "cmd_serve"))

    sub.add_parser("cron", help="one run of the sender").set_defaults(func=_command("site", "cmd_cron"))
    p = sub.add_parser("status", help="mode, block, warnings, locks, services, jobs")
    p.add_argument("--cgi-dir", help="folder of the CGI scripts (default: cgi/ of the checkout)")
    p.set_defaults(func=_command("site", "cmd_status"))
    p = sub.add_parser("doctor", help="check SPF, DKIM, DMARC, MX, https and one-click for every service")
    p.add_argument("--json", action="store_true", help="the findings as JSON")
    p.set_defaults(func=_command("doctor", "cmd_doctor"))
    sub.add_parser("bounce", help="read one returned message on standard input").set_defaults(
        func=_command("site", "cmd_bounce"))
    from vykhukhol.cli import hooks as hooks_guide  # its logic lives in the hooks package

    hooks_guide.register(sub)

    p = sub.add_parser("mode", help="debug (off) or working")
    p.add_argument("mode", choices=sorted(settings_mod.MODES),
                   help="debug: nothing is sent; working: letters go (also clears a block)")
    p.set_defaults(func=_command("site", "cmd_mode"))

    p = sub.add_parser("password", help="set the admin password (asked for, or $VYKHUKHOL_PASSWORD)")
    p.add_argument("--password", metavar="P",
                   help="the new password (visible in ps); -: read it from standard input")
    p.set_defaults(func=_command("site", "cmd_password"))

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
    p.set_defaults(func=_command("configure", "cmd_settings"))

    p = sub.add_parser("dkim", help="DKIM signing keys")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    a = actions.add_parser("keygen", help="make a key, turn signing on, print the DNS record")
    a.add_argument("--domain", required=True, help="the From domain of your letters, e.g. example.org")
    a.add_argument("--selector", default=settings_mod.KEYS["mail.dkim_selector"].default,
                   help="the DNS name's first part (default vykhukhol), e.g. mail2026")
    p.set_defaults(func=_command("configure", "cmd_dkim"))

    p = sub.add_parser("db", help="DBs: folders of services that the sender locks as one")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    actions.add_parser("add", help="make a DB").add_argument("name", help=NAME_HELP)
    actions.add_parser("remove", help="remove an empty DB").add_argument("name", help=NAME_HELP)
    actions.add_parser("list", help="the DBs, one a line")
    p.set_defaults(func=_command("lists", "cmd_db"))

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
        a.add_argument("--public", choices=["yes", "no"],
                       help="yes (the default): every subscriber's own page offers it with a join "
                            "button; no: shown there only to its subscribers")
        a.add_argument("--confirm-subject", metavar="TEMPLATE",
                       help="the confirmation request's subject (empty: the default)")
        a.add_argument("--confirm-body", metavar="TEMPLATE",
                       help="the confirmation request's text; must contain {{ confirm_url }} "
                            "(empty: the default)")
    for action in ("enable", "disable", "remove"):
        actions.add_parser(action, help=f"{action} a service").add_argument("name", help=NAME_HELP)
    actions.add_parser("resume", help="let a braked service send again (README, Reputation)"
                       ).add_argument("name", help=NAME_HELP)
    a = actions.add_parser("feed", help="follow the site's feed: each new item becomes a "
                                        "newsletter (SPEC 14); alone: what it follows")
    a.add_argument("name", help="the service's name")
    a.add_argument("url", nargs="?", help="the feed (RSS 2.0 or Atom), e.g. https://example.org/feed.xml")
    a.add_argument("--every", default="1h", help="how often it is read, at least 10m (default 1h)")
    a.add_argument("--template", metavar="FILE", help="the letter: a Subject: line, a blank line, "
                   "the text; templates with title, link, summary (default: a plain one)")
    a.add_argument("--off", action="store_true", help="follow no feed any more")
    a.set_defaults(func=_command("intake", "cmd_feed"))
    actions.add_parser("list", help="the services, a header row first")
    p.set_defaults(func=_command("lists", "cmd_service"))

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
    a.add_argument("--public", action="store_true",
                   help="publish it in the service's archive once it has gone out (Public: yes)")
    a.add_argument("--clicks", action="store_true",
                   help="count its links' clicks through cgi/go.py (Clicks: yes; no address, no IP)")
    actions.add_parser("list", help="the series, a header row first").add_argument(
        "service", help="the service's name")
    a = actions.add_parser("remove", help="remove a letter; later letters move up")
    a.add_argument("service", help="the service's name")
    a.add_argument("number", type=int, help="its position, e.g. 2")
    p.set_defaults(func=_command("lists", "cmd_letter"))

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
    p.set_defaults(func=_command("lists", "cmd_subscriber"))

    p = sub.add_parser("import-from", help="move a list in from another tool's export (SPEC 14)")
    p.add_argument("tool", choices=["mailchimp", "phplist", "listmonk", "csv"],
                   help="the tool that wrote FILE (csv: any CSV with an email column)")
    p.add_argument("file", help="its export as it wrote it (Mailchimp: the zip or one of its "
                                "CSVs); -: standard input")
    p.add_argument("--service", required=True, help="the service they join, e.g. news")
    p.add_argument("--dry-run", action="store_true",
                   help="only say what it would do, by state, and the refused lines")
    p.set_defaults(func=_command("intake", "cmd_import_from"))

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
    a.add_argument("--public", action="store_true",
                   help="publish it in its services' archives once it has gone out")
    a.add_argument("--clicks", action="store_true",
                   help="count its links' clicks through cgi/go.py (no address, no IP; off by default)")
    actions.add_parser("list", help="the jobs and their progress")
    a = actions.add_parser("history", help="every newsletter: handed over, failed, bounced, "
                                           "complaints, unsubscribed (newest first)")
    a.add_argument("--json", action="store_true", help="a JSON list of objects")
    actions.add_parser("cancel", help="stop a job and delete it").add_argument(
        "job", help="its name, as create printed it")
    actions.add_parser("resume", help="let a braked job send again (README, Reputation)"
                       ).add_argument("job", help="its name, as create printed it")
    p.set_defaults(func=_command("lists", "cmd_newsletter"))

    p = sub.add_parser("archive", help="a service's public archive of letters (web pages and a feed)")
    p.add_argument("action", choices=["on", "off", "build"],
                   help="on: publish its public letters; off: remove its pages; build: write them again")
    p.add_argument("service", help="the service's name")
    p.set_defaults(func=_command("lists", "cmd_archive"))

    p = sub.add_parser("suppress", help="the suppression list: addresses never written to again")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    a = actions.add_parser("list", help="the list's lines, its header first")
    a.add_argument("--search", metavar="TEXT", help="only lines that hold TEXT, e.g. example.org")
    a = actions.add_parser("add", help="suppress addresses (all are checked first)")
    a.add_argument("email", nargs="+", help="e.g. anna@example.org")
    actions.add_parser("remove", help="take an address off the list").add_argument(
        "email", help="e.g. anna@example.org")
    a = actions.add_parser("import", help="suppress many addresses from a file")
    a.add_argument("file", help="UTF-8: a CSV with an email column, or one address a line; "
                                "-: standard input")
    a = actions.add_parser("export", help="write the list as CSV")
    a.add_argument("file", nargs="?", help="where to write (default: standard output)")
    p.set_defaults(func=_command("suppress", "cmd_suppress"))

    p = sub.add_parser("removed", help="addresses a bounce deleted (kept 90 days): list, restore")
    actions = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    a = actions.add_parser("list", help="the kept lines, a header first")
    a.add_argument("--json", action="store_true", help="a JSON list, one object per address")
    actions.add_parser("restore", help="put an address back into every service it left, "
                       "as it was, and off the suppression list").add_argument(
        "email", help="e.g. anna@example.org")
    p.set_defaults(func=_command("removed", "cmd_removed"))
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
        args = cron_args(words) or build_parser().parse_args(words)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        code = args.func(Context(args.data), args)
    except VykhukholError as exc:
        print(f"vykhukhol: {exc.message}", file=sys.stderr)
        return 1
    except ImportError as exc:  # a host that vendored too little: one line, not a traceback
        from vykhukhol.errors import MissingModule

        print(f"vykhukhol: {MissingModule.of(exc).message}", file=sys.stderr)
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
    return code if isinstance(code, int) else 0  # a command may say "something is wrong" (status)
