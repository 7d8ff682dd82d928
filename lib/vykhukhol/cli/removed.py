"""``vykhukhol removed``: the addresses a bounce deleted, kept 90 days
(:mod:`vykhukhol.members.removed`) — list them, or restore one into every
service it left, as it was, with its suppression taken away."""

from __future__ import annotations

import json

from vykhukhol.addresses import check_email
from vykhukhol.cli.common import Context
from vykhukhol.members import removed
from vykhukhol.timeutil import format_time, now


def cmd_removed(ctx: Context, args) -> None:
    settings = ctx.settings()
    moment = now()
    if args.action == "list":
        removed.prune(ctx.data, moment)  # nothing older than KEEP_DAYS is shown, nor kept
        found = removed.removals(ctx.data, moment)
        if args.json:
            print(json.dumps([as_json(removal) for removal in found], ensure_ascii=False,
                             indent=1))
            return
        print(removed.HEADER)
        for removal in found:
            for kept in removal.lines:
                print(kept.to_line())
    elif args.action == "restore":
        from vykhukhol.bounces import counts  # only a restore forgets the soft counts

        email = check_email(args.email)
        done = removed.restore(ctx.data, settings, email, moment, settle=counts.forget_counts)
        print(f"{done.address} restored to {len(done.services)} service(s)"
              + "".join(f"; {name}" for name in done.services) + "; not suppressed any more")
        for name in done.already:
            print(f"{name}: {done.address} was subscribed again meanwhile; its line is kept as it is")
        for name in done.missing:
            print(f"{name}: the service is gone or the kept line does not read; not restored")


def as_json(removal: removed.Removal) -> dict:
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
