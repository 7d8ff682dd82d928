"""The cron URL: one sender run, its report as text/plain
(docs/design/run.md#run).

A tick with nothing due is answered by :mod:`vykhukhol.sender.idle` from its proof,
without loading the settings or a service. With ``cron_allow`` set, only
those addresses may start a run; others get 403 "Only local allowed", as in
the original. The caller's address is the one ``clients.client_address``
trusts (X-Forwarded-For only from trusted_proxies).
"""

from __future__ import annotations

from collections.abc import Callable

from vykhukhol import sender
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import DataDir
from vykhukhol.errors import NoSecret
from vykhukhol.sender import idle
from vykhukhol.web.http import Request, Response, text, wsgi_app

allowed = idle.allowed  # who may start a run: decided in one place for both ways


def app(data: DataDir) -> Callable:
    def handle(request: Request) -> Response:
        if request.method not in ("GET", "HEAD", "POST"):
            return text("method not allowed\n", 405)
        quick = idle.tick(str(data.root), request.client)  # nothing due: proved in a few stats
        if quick is not None:
            return text(quick)
        if not data.settings.exists():
            return text("not initialised: run `vykhukhol init`\n", 503)
        settings = settings_mod.load(data.settings)
        if not allowed(request.client(settings["trusted_proxies"]), settings["cron_allow"]):
            return text("Only local allowed\n", 403)
        try:
            report = sender.run(data, settings)
        except NoSecret as exc:
            return text(f"refused: {exc.message}\n", 503)
        return text(report.text())

    return wsgi_app(handle)
