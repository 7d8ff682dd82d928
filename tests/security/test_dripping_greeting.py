"""An SMTP server that drips its greeting cannot hold a run past time_limit.

A socket's timeout bounds each read, so a server (or anything listening on
the SMTP port) that sends its 220 greeting a byte every two seconds would
keep a run reading for as long as it likes, past the hoster's limit, with the
site's run lock held. The session's set-up — connect, greeting, EHLO — has
one deadline drawn from what the run has left
(docs/reference/transports.md#transports): the real ``vykhukhol cron`` with
time_limit 10s ends inside it, says why in the run log, and the next run
starts as usual.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from support.faultkit import cron, log_entries

TIME_LIMIT = 10  # seconds
MARGIN = 3       # seconds: the interpreter's start and the run's own wind-down
GREETING = b"220 drip.example ESMTP slowly, very slowly\r\n"


class DrippingServer:
    """Accepts every connection and sends the greeting a byte every two seconds."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        with conn:
            for byte in GREETING:
                if self.stop.wait(2.0):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


@pytest.fixture
def dripping() -> Iterator[DrippingServer]:
    server = DrippingServer()
    yield server
    server.close()


def test_a_dripped_greeting_ends_the_run_inside_time_limit_and_blocks_nothing(
        site, dripping, tmp_path) -> None:
    site.use_smtp(dripping.port)
    site.set(time_limit=f"{TIME_LIMIT}s")
    site.service("news")
    site.subscriber("news", "anna@example.org")
    (tmp_path / "body.txt").write_text("Hello.\n", encoding="utf-8")
    site.cli("newsletter", "create", "--services", "news", "--subject", "News",
             "--body-file", str(tmp_path / "body.txt"))

    first = cron(site.root)
    assert first.code == 0 and "Traceback" not in first.stderr, first.stderr
    assert first.seconds < TIME_LIMIT + MARGIN, f"{first.seconds:.1f}s:\n{first.report}"
    assert dripping.connections >= 1
    said = [entry.message for entry in log_entries(site.data)]
    assert any("did not finish its greeting" in text for text in said), said

    second = cron(site.root)
    assert second.code == 0 and "Traceback" not in second.stderr, second.stderr
    assert second.seconds < TIME_LIMIT + MARGIN, f"{second.seconds:.1f}s:\n{second.report}"
    assert second.lease and second.lease != first.lease, second.report
    assert "busy" not in second.report.lower() and "blocked" not in second.report.lower(), \
        second.report
