"""Huge bodies. waitress read a 200 MB body before the app
answered 413. Now ``vykhukhol serve`` refuses a body over the app's own limit
as soon as the headers announce it, without reading it.

(Slow bodies under Apache are mod_reqtimeout's business: docs/deploying/apache.md#apache-host
enables it and tests/integration/test_apache.py runs with it.)
"""

from __future__ import annotations

import socket
import time

import pytest

from support import webkit
from vykhukhol.web.http import MAX_UPLOAD_BYTES

served = webkit.served  # the fixture: a real `vykhukhol serve`

HUGE = 200 * 1024 * 1024


@pytest.mark.parametrize("path", ["/cgi/subscribe.py", "/admin/services/news/subscribers/import"])
def test_a_200_mb_body_is_refused_before_it_is_sent(site, served, path):
    """Headers announcing 200 MB and one megabyte of it: the 413 comes at once,
    while the rest of the body has not been sent (and never is)."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall((f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Content-Type: application/x-www-form-urlencoded\r\n"
                      f"Content-Length: {HUGE}\r\n\r\n").encode())
        began = time.monotonic()
        try:
            sock.sendall(b"x" * (1024 * 1024))
        except OSError:
            pass  # the server may close its side at once; its answer is waiting
        sock.settimeout(5)
        try:
            answer = sock.recv(65536)
        except TimeoutError:
            answer = b""
        took = time.monotonic() - began
    assert answer.startswith(b"HTTP/1.1 413"), (answer[:200], f"after {took:.1f} s")


def test_a_body_within_the_limit_still_reaches_the_app(site, served):
    """The limit is the app's own: a body just over it is refused, one under it
    is read and answered by the app (here a 403: no session)."""
    for size, expected in ((MAX_UPLOAD_BYTES + 1, b"HTTP/1.1 413"), (1024, b"HTTP/1.1 403")):
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
            sock.sendall((f"POST /admin/services HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          "Content-Type: application/x-www-form-urlencoded\r\n"
                          f"Content-Length: {size}\r\nConnection: close\r\n\r\n").encode())
            if size < 10_000:
                sock.sendall(b"x" * size)
            answer = sock.recv(65536)
        assert answer.startswith(expected), (size, answer[:200])
