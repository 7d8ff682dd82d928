"""``vykhukhol serve`` driven with requests (``Server``) and the form content
type, for the tests that use the served pages over HTTP (``wait_for`` is
:func:`support.webkit.wait_for`).
"""

from __future__ import annotations

import http.client
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from support.servetools import ServeProcess
from support.webtools import Page

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


class Server(ServeProcess):
    """One ``vykhukhol serve`` process (see tests/support/servetools.py), with requests."""

    def __init__(self, site: Any, port: int, folder: Path) -> None:
        super().__init__(site, port, folder, ready_path="/cgi/subscribe.py?service=news")

    # -- requests ---------------------------------------------------------------
    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> Page:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            raw = response.read()
            return Page(response.status, {k.lower(): v for k, v in response.getheaders()}, raw)
        finally:
            conn.close()

    def get(self, path: str) -> Page:
        return self.request("GET", path)

    def head(self, path: str) -> Page:
        return self.request("HEAD", path)

    def post(self, path: str, fields: dict[str, str] | bytes) -> Page:
        body = fields if isinstance(fields, bytes) else urlencode(fields).encode("utf-8")
        return self.request("POST", path, body, FORM)

    def subscribe(self, email: str, name: str = "", service: str = "news", **more: str) -> Page:
        return self.post("/cgi/subscribe.py", {"service": service, "email": email, "name": name,
                                               **more})
