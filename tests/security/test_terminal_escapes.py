"""Words a stranger chooses reach the owner's terminal (docs/reference/security.md#security-strangers):
a feed server's HTTP reason phrase, shown by ``vykhukhol status``, and a
delivery report's Diagnostic-Code, written to bounces.log and printed by
``vykhukhol bounce``. Their control characters (ESC, BEL) are shown as text
there, as in the run log, never handed to the terminal as commands."""

from __future__ import annotations

import socket
import threading
from datetime import timedelta

from support.bouncekit import dsn, pipe, pipe_site, tagged_sender
from vykhukhol.timeutil import now

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m"  # retitle the window, clear the screen, C1 CSI


def hostile_feed_server() -> tuple[socket.socket, str]:
    """A loopback server that answers every request with a 503 whose reason
    phrase carries terminal escapes."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(f"HTTP/1.1 503 Busy{HOSTILE}\r\nContent-Length: 0\r\n"
                             "Connection: close\r\n\r\n".encode("latin-1"))

    threading.Thread(target=serve, daemon=True).start()
    return server, f"http://127.0.0.1:{server.getsockname()[1]}/feed.xml"


def test_a_feeds_reason_phrase_reaches_status_without_its_escapes(site):
    server, url = hostile_feed_server()
    try:
        site.service("news")
        site.subscriber("news", "ann@example.org")
        site.ok("service", "feed", "news", url, "--every", "1h")
        site.run_at(now() - timedelta(minutes=1))
    finally:
        server.close()
    status = site.cli("status", check=False).stdout
    assert "The feed of news" in status and "503 Busy" in status
    for text in (status, site.log()):
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, repr(text)


def test_a_reports_diagnostic_code_reaches_the_log_and_the_terminal_without_its_escapes(site):
    pipe_site(site)
    site.subscriber("course", "ann@example.org")
    sender = tagged_sender(site, None, "s", "course", "ann@example.org")
    raw = dsn("ann@example.org", sender, "<1@example.org>", status="5.1.1",
              diagnostic=f"smtp; 550 5.1.1 no such user{HOSTILE}")
    printed = pipe(site, raw).stdout
    logged = (site.root / "log" / "bounces.log").read_text(encoding="utf-8")
    assert "no such user" in logged
    for text in (printed, logged):
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, repr(text)
