"""The cron URL: one sender run, its report as text/plain (SPEC 5, 11).

With ``cron_allow`` set, only those addresses may start a run; others get 403
"Only local allowed", as in the original. The caller's address is the one
``clients.client_address`` trusts (X-Forwarded-For only from trusted_proxies).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from vykhukhol import sender
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import DataDir
from vykhukhol.errors import NoSecret
from vykhukhol.web.http import Request, Response, text, wsgi_app


def allowed(remote: str, networks: str) -> bool:
    if not networks:
        return True
    try:
        address = ipaddress.ip_address(remote.split("%")[0])
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(net, strict=False) for net in networks.split())


def app(data: DataDir) -> Callable:
    def handle(request: Request) -> Response:
        if request.method not in ("GET", "HEAD", "POST"):
            return text("method not allowed\n", 405)
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
