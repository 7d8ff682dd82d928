"""API tokens (docs/using/api.md#api-tokens): the list (name, scopes,
addresses, rate, created, last used, expiry), a new token (shown once, on
the page that answers the form) and revoking one. Every POST carries the
session's CSRF token (:func:`.core.serve`); the file is written only by
:mod:`vykhukhol.web.api.credentials`."""

from __future__ import annotations

from datetime import datetime, timezone

from vykhukhol.errors import BadInput, NotFound
from vykhukhol.timeutil import format_time, parse_duration
from vykhukhol.web.admin.core import Admin, local_time
from vykhukhol.web.api import credentials
from vykhukhol.web.http import Response


def _when(admin: Admin, stamp: int) -> str:
    if not stamp:
        return ""
    return local_time(admin.settings, format_time(datetime.fromtimestamp(stamp, timezone.utc)))


def tokens_page(admin: Admin, args: dict, error: str = "", status: int = 200,
                made: str = "", name: str = "") -> Response:
    rows = [{"name": t.name, "scopes": sorted(t.scopes), "ips": list(t.ips), "rate": t.rate,
             "created": _when(admin, t.created), "used": _when(admin, t.last_used),
             "expires": _when(admin, t.expires)} for t in credentials.load(admin.data)]
    return admin.page("tokens.html", status, rows=rows, scopes=credentials.SCOPES, error=error,
                      made=made, name=name, rate=credentials.RATE)


def tokens_add(admin: Admin, args: dict) -> Response:
    form = admin.request.form()
    chosen = ",".join(s for s in credentials.SCOPES if form.get(f"scope-{s}") == "on")
    try:
        expires = parse_duration(form["expires"]) if form.get("expires", "").strip() else 0
        rate = int(form.get("rate") or credentials.RATE)
        token, secret = credentials.add(admin.data, form.get("name", "").strip(), chosen,
                                        form.get("ips", ""), expires, rate)
    except ValueError:
        return tokens_page(admin, args, error=admin._("The rate must be a whole number."), status=400)
    except BadInput as exc:
        return tokens_page(admin, args, error=exc.text(admin.lang), status=400)
    return tokens_page(admin, args, made=secret, name=token.name)


def tokens_revoke(admin: Admin, args: dict) -> Response:
    name = admin.request.form().get("name", "")
    if admin.request.form().get("confirm") != "yes":
        return admin.page("confirm.html", title=admin._("Revoke token {name}?", name=name),
                          warning=admin._("Programs that use it are refused from now on."),
                          action=admin.url("/tokens/revoke"), hidden={"name": name},
                          cancel=admin.url("/tokens"))
    try:
        credentials.revoke(admin.data, name)
    except NotFound as exc:
        return tokens_page(admin, args, error=exc.text(admin.lang), status=404)
    return admin.done("/tokens", admin._("Token {name} revoked.", name=name))
