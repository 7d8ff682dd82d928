"""The admin pages (SPEC 10). A placeholder until the admin pages land."""

from __future__ import annotations

from collections.abc import Callable

from vykhukhol.datadir import DataDir
from vykhukhol.web.http import Request, Response, wsgi_app


def app(data: DataDir) -> Callable:
    def handle(request: Request) -> Response:
        return Response("<!doctype html><title>Vykhukhol</title><h1>Vykhukhol admin</h1>"
                        "<p>Use the <code>vykhukhol</code> command for now.</p>")

    return wsgi_app(handle)
