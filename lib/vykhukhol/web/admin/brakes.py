"""The brakes on the admin pages (docs/deliverability/reputation.md#brakes): which
service or newsletter is braked and why, in the page's language, and the one
action that lets it go on (a POST with the session's CSRF token, as every
admin POST: :func:`.core.serve`)."""

from __future__ import annotations

from vykhukhol.timeutil import now
from vykhukhol.watch import brakes
from vykhukhol.web.admin.core import Admin
from vykhukhol.web.http import Response


def braked(admin: Admin, kind: str) -> dict[str, str]:
    """Name → why it is braked (the figures), for the targets of ``kind``."""
    return {brake.name: brakes.said(brake, admin._)
            for brake in brakes.status(admin.data, admin.settings, now()).values()
            if brake.kind == kind}


def resume(admin: Admin, kind: str, name: str, back: str, done: str) -> Response:
    """The button: the target goes on (a flash says so, or that it was not braked)."""
    if not brakes.resume(admin.data, admin.settings, kind, name):
        return admin.done(back, admin._("It was not braked: nothing changed."))
    return admin.done(back, done)
