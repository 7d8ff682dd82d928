"""Slowloris against ``vykhukhol serve``. 120 connections,
each sending one header line every few seconds, kept the subscribe page from
answering for as long as they went on (waitress's 100-connection limit; its
``channel_timeout`` only drops silent connections). Now every request has a
deadline for its headers and the connection limit follows the machine's
open-file limit, evicting the oldest unfinished request when full.
"""

from __future__ import annotations

import http.client
import socket
import time

from support import webkit
from vykhukhol.web.guard import HEADER_SECONDS

served = webkit.served  # the fixture: a real `vykhukhol serve`

ATTACKERS = 120
ANSWER_WITHIN = 10.0  # seconds; before the fix it did not answer for as long as the attack went on


def _slow_clients(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that have sent the start of a request and no end."""
    clients = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(b"GET /cgi/subscribe.py?service=news HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        clients.append(sock)
    return clients


def _drip(clients: list[socket.socket], n: int) -> int:
    """One more header line on every connection still open; how many are."""
    alive = 0
    for sock in clients:
        try:
            sock.sendall(f"X-Slow-{n}: still here\r\n".encode())
            alive += 1
        except OSError:
            pass
    return alive


def _closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(0.2)
    try:
        return sock.recv(1024) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def test_the_subscribe_page_answers_while_120_slow_clients_hold_connections(site, served):
    site.service("news", enabled=True)
    clients = _slow_clients(served.port, ATTACKERS)
    try:
        _drip(clients, 0)
        began = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=ANSWER_WITHIN + 5)
        conn.request("GET", "/cgi/subscribe.py?service=news")
        answer = conn.getresponse()
        body = answer.read()
        took = time.monotonic() - began
        conn.close()
        assert answer.status == 200 and b"<form" in body, (answer.status, body[:300])
        assert took < ANSWER_WITHIN, f"the subscribe page took {took:.1f} s under the attack"

        # The slow requests have their deadline: dripping a line every second
        # does not keep them open past HEADER_SECONDS (plus a check's second).
        deadline = began + HEADER_SECONDS + 8
        n = 1
        while time.monotonic() < deadline and not all(_closed_by_server(s) for s in clients[:5]):
            _drip(clients, n)
            n += 1
            time.sleep(1)
        still_open = [i for i, s in enumerate(clients[:5]) if not _closed_by_server(s)]
        assert not still_open, f"slow requests still open after {HEADER_SECONDS + 8:.0f} s"
    finally:
        for sock in clients:
            sock.close()


def test_a_flood_beyond_the_connection_limit_still_lets_a_quick_client_in(site, tmp_path, monkeypatch):
    """With the open-file limit lowered to 200 the server keeps at most 68
    connections; 150 slow ones do not keep the 151st, a quick one, out: the
    oldest unfinished request makes room."""
    import resource
    import subprocess

    from support.servetools import ServeProcess

    site.service("news", enabled=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    site.set(language="en", site_url=f"http://127.0.0.1:{port}")
    server = ServeProcess(site, port, tmp_path / "serve")
    real_popen = subprocess.Popen

    def low_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200))

    def popen(*args, **kwargs):
        return real_popen(*args, preexec_fn=low_files, **kwargs)

    with monkeypatch.context() as patch:  # only for this start
        patch.setattr(subprocess, "Popen", popen)
        server.start()
    clients: list[socket.socket] = []
    try:
        clients = _slow_clients(port, 150)
        began = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=ANSWER_WITHIN + 5)
        conn.request("GET", "/cgi/subscribe.py?service=news")
        answer = conn.getresponse()
        answer.read()
        took = time.monotonic() - began
        conn.close()
        assert answer.status == 200
        assert took < ANSWER_WITHIN, f"the quick client waited {took:.1f} s"
        assert any(_closed_by_server(s) for s in clients[:60]), "no slow connection was evicted"
    finally:
        for sock in clients:
            sock.close()
        code, _, err = server.stop()
        assert code == 0, err
