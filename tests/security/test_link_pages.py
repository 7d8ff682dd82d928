"""The confirm page echoed any text from the link's ``e``.

``/cgi/confirm.py?s=news&e=<anything>&t=<anything>`` showed "Confirm the
subscription of <anything> to News" under the site's name: a stranger could
make the site print a phishing line. The unsubscribe page did the same. Now a
link's GET page shows the address and the service's title only when the token
verifies; any other link gets the generic "This link is not valid" page. (The
unsubscribe POST answers one page whatever the token, as before:
tests/integration/test_web_flow.py holds it.)

Replayed through a real ``vykhukhol serve`` (outbox transport, pages in
English).
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from support.servetools import ServeProcess
from support.webtools import Page, assert_clean_page, free_port
from vykhukhol import tokens

BAIT = "Your account is locked, call +1 555 0100"
FORGED = "0" * tokens.TOKEN_LENGTH


class Server(ServeProcess):
    def request(self, method: str, path: str, body: bytes | None = None) -> Page:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            headers = {"Content-Type": "application/x-www-form-urlencoded"} if body else {}
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return Page(response.status, {k.lower(): v for k, v in response.getheaders()},
                        response.read())
        finally:
            conn.close()


@pytest.fixture
def server(site: Any, tmp_path: Path) -> Iterator[Server]:
    site.service("news", title="Weekly News")
    site.set(language="en")
    running = Server(site, free_port(), tmp_path / "serve", ready_path="/cgi/subscribe.py?service=news")
    running.start()
    yield running
    running.stop()


def link(script: str, email: str, token: str) -> str:
    return f"/cgi/{script}.py?" + urlencode({"s": "news", "e": email, "t": token})


@pytest.mark.parametrize("script", ["confirm", "unsubscribe"])
def test_a_link_page_shows_no_text_its_token_does_not_sign(site, server, script):
    anna = tokens.make(site.settings().secret, "news", "anna@example.org", script)
    for email, token in ((BAIT, FORGED), (BAIT, anna), ("anna@example.org", FORGED),
                         (BAIT, "")):
        for method in ("GET", "HEAD"):
            page = server.request(method, link(script, email, token))
            assert page.status == 400, (email, token, page)
            assert BAIT not in page.body and "anna@example.org" not in page.body, page
            assert "Weekly News" not in page.body, page
            if method == "GET":
                assert "This link is not valid" in page.body, page
                assert_clean_page(page)
                assert not page.forms(), page

    # The link the site sent still shows its address and its one button.
    page = server.request("GET", link(script, "anna@example.org", anna))
    assert page.status == 200 and "anna@example.org" in page.body, page
    assert "Weekly News" in page.body, page
    [form] = page.forms()
    assert form.action == f"{script}.py", page

