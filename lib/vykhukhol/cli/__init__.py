"""The ``vykhukhol`` command: every command in one table, each row naming the
group module that holds its arguments and its code.

Every command validates all of its input before it changes anything. Errors
are one line on stderr: exit code 1 for errors, 2 for usage errors (a word
that is no command gets the nearest one). Long work shows progress on a
terminal and stays quiet otherwise. What the groups share is in :mod:`.common`.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import NamedTuple

from vykhukhol.cli import (
    bounces,
    configure,
    fields,
    newsletters,
    services,
    site,
    subscribers,
    tokens,
    webhooks,
)
from vykhukhol.cli.common import Context, Parser, UsageError, add_command
from vykhukhol.cli.cron_words import cron_args
from vykhukhol.errors import MissingModule, VykhukholError

_NOT_UTF8 = re.compile("[\udc80-\udcff]")  # what Python makes of bytes that are not UTF-8


class Command(NamedTuple):
    """``vykhukhol <name>``: what it does (one line), then, in its group
    module, the function that adds its arguments and the one that runs it."""

    name: str
    what: str
    arguments: Callable[[Parser], None] | None
    handler: Callable[[Context, argparse.Namespace], object]


COMMANDS = (
    # name, what it does (its line in --help); then, in its group module,
    # the function that adds its arguments and the one that runs it
    Command("init", "create the data directory and rename the cron script",
            site.init_arguments, site.cmd_init),
    Command("serve", "serve the pages and run the sender every minute",
            site.serve_arguments, site.cmd_serve),
    Command("cron", "one run of the sender",
            None, site.cmd_cron),
    Command("status", "mode, block, warnings, locks, services, jobs; exit 1 when the cron is silent",
            site.status_arguments, site.cmd_status),
    Command("doctor", "check SPF, DKIM, DMARC, MX, https and one-click for every service",
            configure.doctor_arguments, configure.cmd_doctor),
    Command("bounce", "read one returned message on standard input",
            None, bounces.cmd_bounce),
    Command("hooks", "the mail providers' callback URLs and how to set them up",
            bounces.hooks_arguments, bounces.cmd_hooks),
    Command("mode", "print the mode, or switch it: debug (nothing is sent) or working",
            site.mode_arguments, site.cmd_mode),
    Command("password", "set the admin password (asked for, or $VYKHUKHOL_PASSWORD); two factors",
            site.password_arguments, site.cmd_password),
    Command("settings", "read or change a setting",
            configure.settings_arguments, configure.cmd_settings),
    Command("dkim", "make a DKIM signing key and print its DNS record",
            configure.dkim_arguments, configure.cmd_dkim),
    Command("db", "DBs: folders of services that the sender locks as one",
            services.db_arguments, services.cmd_db),
    Command("service", "services (mailing lists): add, change, switch on and off, list",
            services.service_arguments, services.cmd_service),
    Command("letter", "the letters of a service's series: add, list, remove",
            services.letter_arguments, services.cmd_letter),
    Command("subscriber", "a service's subscribers: add, remove, list, import, export",
            subscribers.subscriber_arguments, subscribers.cmd_subscriber),
    Command("field", "the site's fields, what is kept about a reader: add, list, remove",
            fields.field_arguments, fields.cmd_field),
    Command("import-from", "move a list in from another tool's export",
            subscribers.import_from_arguments, subscribers.cmd_import_from),
    Command("newsletter", "letters to all subscribers of some services: create, follow, cancel",
            newsletters.newsletter_arguments, newsletters.cmd_newsletter),
    Command("archive", "a service's public archive of letters (web pages and a feed)",
            services.archive_arguments, services.cmd_archive),
    Command("suppress", "the suppression list: addresses never written to again",
            subscribers.suppress_arguments, subscribers.cmd_suppress),
    Command("held", "confirmation requests held by a wave of sign-ups: list, release, drop",
            subscribers.held_arguments, subscribers.cmd_held),
    Command("removed", "addresses a bounce deleted (kept 90 days): list, restore",
            bounces.removed_arguments, bounces.cmd_removed),
    Command("token", "the API's tokens: add (shown once), list, revoke",
            tokens.token_arguments, tokens.cmd_token),
    Command("webhook", "URLs told of the list's events (signed): add, list, test, log",
            webhooks.webhook_arguments, webhooks.cmd_webhook),
)


def build_parser() -> Parser:
    """The whole command line (the manual's command reference is drawn from it)."""
    parser = Parser(prog="vykhukhol", description="Flat-file mailing-list manager.",
                    epilog="`vykhukhol COMMAND --help` tells more of each.")
    parser.add_argument("--data", metavar="DIR", help="the data directory")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        p = add_command(sub, command.name, command.what)
        if command.arguments:
            command.arguments(p)
        p.set_defaults(func=command.handler)
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
