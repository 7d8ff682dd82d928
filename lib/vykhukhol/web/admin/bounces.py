"""Bounces: what the bounce mailbox's letters did, and the messages kept for the admin."""

from __future__ import annotations

from vykhukhol.errors import NotFound
from vykhukhol.web.admin.core import Admin, local_time, route
from vykhukhol.web.http import Response

BOUNCES_SHOWN = 200     # newest bounce results and kept messages listed


def _bounce_kind(admin: Admin, kind: str) -> str:
    labels = {
        "permanent": admin._("permanent failure"), "temporary": admin._("temporary failure"),
        "complaint": admin._("spam complaint: unsubscribed"),
        "unsubscribe": admin._("unsubscribed by mail"), "auto-reply": admin._("automatic reply"),
        "kept": admin._("kept for the admin"), "refused": admin._("not read (too big or broken)"),
        "unknown tag": admin._("a tag that matches nobody"),
        "deleted": admin._("subscriber deleted"), "problem": admin._("mailbox problem"),
    }
    return labels.get(kind, kind)


def _bounce_target(admin: Admin, target: str) -> str:
    kind, _, name = target.partition(" ")
    if kind == "service" and name:
        return admin._("service {name}", name=name)
    if kind == "newsletter" and name:
        return admin._("newsletter {name}", name=name)
    return target


@route("GET", "/bounces")
def bounces_page(admin: Admin, args: dict) -> Response:
    from vykhukhol.bounces import record

    rows = [{"when": local_time(admin.settings, line.time), "kind": _bounce_kind(admin, line.kind),
             "target": _bounce_target(admin, line.target), "address": line.address,
             "source": line.source, "reason": line.reason}
            for line in record.recent(admin.data, BOUNCES_SHOWN)]
    kept = record.kept_messages(admin.data)[:BOUNCES_SHOWN]
    return admin.page("bounces.html", rows=rows, kept=kept,
                      mailbox=bool(admin.settings["mail.bounce_mailbox"]))


@route("GET", "/bounces/kept/(?P<file>[0-9]{8}-[0-9]{6}-[0-9a-f]{16}\\.eml)")
def bounce_kept(admin: Admin, args: dict) -> Response:
    from vykhukhol.bounces import record

    text = record.read_kept(admin.data, args["file"])
    if text is None:
        raise NotFound(admin._("No such message."))
    return admin.page("bounce_kept.html", file=args["file"], text=text)
