"""What comes back: ``bounce`` (one returned message), ``hooks`` (the mail
providers' callbacks) and ``removed`` (the addresses a bounce deleted), each
command's arguments beside its code.

The bounces and members modules, and the hooks guide, are imported inside
the handlers: every command line loads this module, and ``vykhukhol cron``,
run every few minutes, needs none of them."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from vykhukhol.addresses import check_email
from vykhukhol.bounces import counts
from vykhukhol.cli.common import (
    EMAIL_HELP,
    Context,
    Parser,
    actions,
    add_command,
    numbered,
    print_table,
)
from vykhukhol.errors import VykhukholError
from vykhukhol.timeutil import format_time, now

if TYPE_CHECKING:
    from vykhukhol.members.removed import Kept, Removal


def cmd_bounce(ctx: Context, args) -> None:
    """One returned message on standard input, for a mail server's "pipe to a
    program": exit code 0 whatever it is (a failure is a line in bounces.log),
    so the mail server never bounces the bounce."""
    from vykhukhol.bounces import record, sources  # off the command line's start

    try:
        print(sources.read_stdin(ctx.data, ctx.settings(), sys.stdin.buffer))
    except Exception as exc:  # noqa: BLE001 - exit 0 is the contract with the mail server
        reason = exc.message if isinstance(exc, VykhukholError) else f"{type(exc).__name__}: {exc}"
        record.problem(ctx.data, record.PIPE, f"not processed: {reason}")
        print(f"not processed: {reason}")


def hooks_arguments(p: Parser) -> None:
    p.add_argument("--new-key", action="store_true", help="make a new key first (old URLs stop working)")


def cmd_hooks(ctx: Context, args) -> None:
    """The URLs carry ``hooks.key``, so they are printed only to the owner at
    the terminal; ``--new-key`` makes a fresh key (the old URLs stop working
    at once)."""
    from vykhukhol.cli.hooks import new_key, text  # off the command line's start

    settings = ctx.settings()
    key = new_key(ctx.data.settings) if args.new_key else None
    if key:
        print("a new hooks.key is set; paste the new URLs into each provider's console.")
    print(text(settings, key), end="")


def removed_arguments(p: Parser) -> None:
    what = actions(p)
    a = add_command(what, "list", "who was removed, when, why and from which service, "
                    "a table (the kept subscriber lines: --json)")
    a.add_argument("--json", action="store_true", help="a JSON list, one object per address")
    add_command(what, "restore", "put an address back into every service it left, "
                "as it was, and off the suppression list",
                "vykhukhol removed restore anna@example.org").add_argument("email", help=EMAIL_HELP)


def cmd_removed(ctx: Context, args) -> None:
    """The addresses a bounce deleted, kept 90 days (:mod:`vykhukhol.members.removed`):
    list them, or restore one into every service it left, as it was, with its
    suppression taken away."""
    from vykhukhol.members import removed  # off the command line's start

    settings = ctx.settings()
    moment = now()
    if args.action == "list":
        removed.prune(ctx.data, moment)  # nothing older than KEEP_DAYS is shown, nor kept
        found = removed.removals(ctx.data, moment)
        if args.json:
            print(json.dumps([as_json(removal) for removal in found], ensure_ascii=False,
                             indent=1))
            return
        print_table(TABLE, [row(kept) for removal in found for kept in removal.lines])
    elif args.action == "restore":
        email = check_email(args.email)
        done = removed.restore(ctx.data, settings, email, moment, settle=counts.forget_counts)
        print(f"{done.address} restored to {numbered(len(done.services), 'service')}"
              + "".join(f"; {name}" for name in done.services) + "; not suppressed any more")
        for name in done.already:
            print(f"{name}: {done.address} was subscribed again meanwhile; its line is kept as it is")
        for name in done.missing:
            print(f"{name}: the service is gone or the kept line does not read; not restored")


TABLE = ("removed (UTC)", "address", "service", "cause", "source", "was", "the server said")
WORDS_SHOWN = 60  # characters of the server's words in the table (--json has them all)


def row(kept: Kept) -> tuple[str, ...]:
    """One kept line as the table shows it: the subscriber line read, not printed."""
    sub = kept.subscriber
    was = f"{sub.state.value}, {numbered(sub.sent, 'letter')} sent" if sub else "?"
    words = kept.words if len(kept.words) <= WORDS_SHOWN else kept.words[:WORDS_SHOWN - 1] + "…"
    return (f"{kept.when:%Y-%m-%d %H:%M}", kept.address, kept.service, kept.cause,
            kept.source, was, words or "-")


def as_json(removal: Removal) -> dict:
    """One address for ``--json``: when, why, the words, and each service's line."""
    latest = removal.latest
    services = []
    for kept in removal.lines:
        sub = kept.subscriber
        services.append({"service": kept.service, "when": format_time(kept.when),
                         "cause": kept.cause, "source": kept.source, "words": kept.words,
                         "state": sub.state.value if sub else None,
                         "sent": sub.sent if sub else None, "line": kept.line})
    return {"address": removal.address, "when": format_time(removal.when),
            "cause": latest.cause, "source": latest.source, "words": latest.words,
            "services": services}
