"""Held confirmation requests (docs/using/subscriber-pages.md#subscriber-alarm):
the addresses a wave of sign-ups past ``subscribe_alarm`` left waiting, and the
two ways out, each a POST with the session's CSRF token (:func:`.core.serve`):
release them (they go with the next run) or drop them (the addresses, still
unconfirmed, leave their lists unasked). Either ends the hold."""

from __future__ import annotations

from vykhukhol.members import held
from vykhukhol.timeutil import format_time
from vykhukhol.web.admin.core import Admin, local_time
from vykhukhol.web.http import Response


def held_page(admin: Admin, args: dict) -> Response:
    since = held.hold_since(admin.data) if held.holding(admin.data) else None
    return admin.page("held.html", rows=held.held(admin.data),
                      since=local_time(admin.settings, format_time(since)) if since else "",
                      alarm=admin.settings["subscribe_alarm"])


def held_release(admin: Admin, args: dict) -> Response:
    count = held.release(admin.data)
    return admin.done("/held", admin._n(
        "{n} request released: it goes with the next run.",
        "{n} requests released: they go with the next run.", count))


def held_drop(admin: Admin, args: dict) -> Response:
    count = held.drop(admin.data)
    return admin.done("/held", admin._n(
        "{n} held address left its list unasked.",
        "{n} held addresses left their lists unasked.", count))
