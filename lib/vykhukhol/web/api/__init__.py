"""The API (docs/using/api.md#api): JSON in and out under ``/v1/``, at
``cgi/api.py/v1/...`` under Apache and ``/api/v1/...`` under ``serve``.

Each call, in order, each refusal a JSON body ``{"error": {"code",
"message"}}`` and nothing changed: the path and method (404, 405), the
token (401; from ``Authorization: Bearer`` or ``X-Api-Key``), its IP
allow-list and scope (403), its rate (429 with ``Retry-After``), the body
(413 past :data:`~vykhukhol.web.api.body.MAX_BODY`, 400 not JSON, 422 an unknown field, a wrong type
or a missing one), then the endpoint's own checks (400 a value that does not
fit one of the site's fields, 404, 409, 422). Every
call is logged in ``log/api.log`` with the token's name, never the token.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections.abc import Callable

from vykhukhol import files
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import DataDir
from vykhukhol.errors import VykhukholError
from vykhukhol.web.api import credentials as tokens
from vykhukhol.web.api.body import read_body
from vykhukhol.web.api.routes import ROUTES, Call, Refused, Route
from vykhukhol.web.http import Request, Response, wsgi_app

LOG_BYTES = 1024 * 1024


def answer(status: int, body: dict, headers: list[tuple[str, str]] | None = None) -> Response:
    return Response(json.dumps(body, ensure_ascii=False), status, "application/json; charset=utf-8",
                    headers=[("Cache-Control", "no-store"), *(headers or [])])


def refusal(status: int, code: str, message: str, headers: list[tuple[str, str]] | None = None) -> Response:
    return answer(status, {"error": {"code": code, "message": message}}, headers)


def _route(request: Request) -> tuple[Route, dict[str, str]]:
    path = request.path.rstrip("/") or "/"
    allowed = []
    for route in ROUTES:
        found = route.pattern.match(path)
        if found:
            if route.method == request.method:
                return route, {k: _unquote(v) for k, v in found.groupdict().items()}
            allowed.append(route.method)
    if allowed:
        raise Refused(405, "method", f"{request.method} is not allowed here; {', '.join(allowed)} is")
    raise Refused(404, "path", "no such endpoint; the API's paths begin with /v1/")


def _unquote(text: str) -> str:
    from urllib.parse import unquote

    return unquote(text)


def _token(request: Request, data: DataDir) -> tokens.Token:
    given = request.environ.get("HTTP_X_API_KEY", "")
    scheme, _, value = request.environ.get("HTTP_AUTHORIZATION", "").partition(" ")
    if not given and scheme.lower() == "bearer":
        given = value.strip()
    if not given:
        raise Refused(401, "token", "no token: send it as Authorization: Bearer <token> or X-Api-Key")
    token = tokens.find(data, given)
    if token is None:
        raise Refused(401, "token", "the token is not valid (wrong, revoked or expired)")
    return token


def _log(data: DataDir, token: tokens.Token | None, request: Request, status: int) -> None:
    path = data.log / "api.log"
    try:
        files.rotate(path, LOG_BYTES, keep=2)
        clean = "".join(c if c.isprintable() and c != "\t" else "?" for c in request.path)[:200]
        files.append_line(path, "\t".join((time.strftime("%Y-%m-%d %H:%M:%S"), token.name if token else "-",
                                           request.remote or "-", request.method, clean, str(status))),
                          sync=False)
    except VykhukholError:
        pass


def app(data: DataDir) -> Callable:
    def handle(request: Request) -> Response:
        token, response = _handle(request, data)
        _log(data, token, request, response.status)
        return response

    return wsgi_app(handle)


def _handle(request: Request, data: DataDir) -> tuple[tokens.Token | None, Response]:
    token = None
    try:
        if not data.settings.exists():
            raise Refused(503, "not_ready", "the site is not initialised")
        route, params = _route(request)
        token = _token(request, data)
        moment = time.time()
        if not token.allows(request.remote):
            raise Refused(403, "ip", "this token may not be used from this address")
        if route.scope not in token.scopes:
            raise Refused(403, "scope", f"this call needs the {route.scope} scope")
        wait = tokens.over_rate(data, token, moment)
        if wait:
            raise Refused(429, "rate", f"over {token.rate} calls a minute", [("Retry-After", str(wait))])
        tokens.touch(data, token, moment)
        call = Call(data, settings_mod.load(data.settings), params, read_body(request, route),
                    request.remote or "-", token.scopes)
        status, body = route.handler(call)
        return token, answer(status, body)
    except Refused as exc:
        extra = [("WWW-Authenticate", 'Bearer realm="vykhukhol"')] if exc.status == 401 else []
        return token, refusal(exc.status, exc.code, exc.message, extra + exc.headers)
    except VykhukholError as exc:
        status = 422 if exc.status == 400 else exc.status
        code = {404: "not_found", 409: "conflict", 422: "invalid", 403: "forbidden"}.get(status, "error")
        return token, refusal(status, code, exc.text("en"))
    except Exception:  # noqa: BLE001 - a program gets JSON, the server's log the traceback
        traceback.print_exc(file=sys.stderr)
        return token, refusal(500, "internal", "an internal error; the server's log says more")
