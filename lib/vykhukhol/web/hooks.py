"""The callback URL: ``POST …/cgi/hook.py/{provider}?key={hooks.key}``.

In order, each a clear plain-text answer that changes nothing when it
refuses: the provider's name (404 unknown), the method (405), the key in the
URL (403, compared in constant time; no key set: 403 for everyone), the
body's size (413 past :data:`~vykhukhol.bounces.reading.callbacks.MAX_BODY`), then the
provider's own reading and proof (400 a body it cannot read, 401/403 a
signature or login that fails), then the reports applied (200 with a count;
503 when they cannot be put on disk, so the provider tries again). What a
refusal after the key check says is a ``callback refused`` line in bounces.log with
the provider, for the owner setting a provider up; a stranger without the
key leaves no trace.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from vykhukhol import settings as settings_mod
from vykhukhol.bounces import record
from vykhukhol.bounces.apply import apply_reports
from vykhukhol.bounces.providers import PROVIDERS
from vykhukhol.bounces.reading.callbacks import MAX_BODY, CallbackRefused, same
from vykhukhol.datadir import DataDir
from vykhukhol.errors import StorageError, VykhukholError
from vykhukhol.web.http import Request, Response, text, wsgi_app


def app(data: DataDir) -> Callable:
    def handle(request: Request) -> Response:
        provider = request.path.strip("/")
        if provider not in PROVIDERS:
            return text("unknown provider; known: " + ", ".join(PROVIDERS) + "\n", 404)
        if request.method != "POST":
            return Response("POST only\n", 405, "text/plain; charset=utf-8",
                            headers=[("Allow", "POST")])
        if not data.settings.exists():
            return text("not initialised\n", 503)
        settings = settings_mod.load(data.settings)
        if not same(request.query.get("key", ""), settings["hooks.key"]):
            return text("wrong or missing key\n", 403)
        try:
            body = _body(request.environ)
            reports = _module(provider).read(body, request.environ, settings, data)
            return _apply(data, settings, provider, reports)
        except CallbackRefused as exc:
            _note(data, provider, "callback refused", exc.message)
            answer = text(f"refused: {exc.message}\n", exc.status)
            if exc.status == 401:
                answer.headers.append(("WWW-Authenticate", 'Basic realm="vykhukhol"'))
            return answer

    return wsgi_app(handle)


def _module(provider: str):
    return importlib.import_module(f"vykhukhol.bounces.providers.{provider}")


def _body(environ: dict) -> bytes:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise CallbackRefused(400, "bad Content-Length") from None
    if length > MAX_BODY:
        raise CallbackRefused(413, f"the body is over {MAX_BODY} bytes")
    if length <= 0:
        raise CallbackRefused(400, "an empty body")
    body = environ["wsgi.input"].read(length)
    if len(body) != length:
        raise CallbackRefused(400, "the body ended early")
    return body


def _apply(data: DataDir, settings, provider: str, reports: list) -> Response:
    note = getattr(reports, "note", "")
    if note:
        _note(data, provider, "callback", note)
    if not reports:
        return text(f"ok: {note or 'nothing to do'}\n")
    try:
        results = apply_reports(data, settings, list(reports), provider)
    except VykhukholError as exc:
        _note(data, provider, "problem", f"the results could not be written: {exc.message}")
        return text("busy or cannot write; try again later\n", 503)
    repeated = sum(1 for result in results if result.repeated)
    return text(f"ok: {len(results) - repeated} applied, {repeated} seen before\n")


def _note(data: DataDir, provider: str, kind: str, reason: str) -> None:
    try:
        record.write(data, [record.line("-", kind, "-", "-", provider, reason)])
    except (StorageError, OSError):
        pass
