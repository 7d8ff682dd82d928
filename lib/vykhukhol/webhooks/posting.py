"""One POST to a webhook receiver, over in a fixed time whatever the
receiver does: a whole-answer deadline from the connect to the last byte
(a watchdog closes the socket when it passes), no redirect followed, at most
:data:`MAX_ANSWER` bytes of the answer read."""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time

from vykhukhol.webhooks.guards import Target

MAX_ANSWER = 64 * 1024
USER_AGENT = "Vykhukhol-Webhooks/1"


class Answer:
    """What a delivery came to: the HTTP status (None when none came), the
    reason when it failed, and how long it took in milliseconds."""

    def __init__(self, status: int | None, problem: str, millis: int) -> None:
        self.status, self.problem, self.millis = status, problem, millis

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300 and not self.problem

    def text(self) -> str:
        if self.ok:
            return f"{self.status}"
        if self.status is not None:
            return f"{self.status} {self.problem}".strip()
        return self.problem


class _Connection(http.client.HTTPSConnection):
    """Connects to the checked address; TLS names the URL's host."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout,
                         context=ssl.create_default_context())
        self._target = target

    def connect(self) -> None:
        sock = socket.create_connection((self._target.address, self._target.port), self.timeout)
        if self._target.scheme == "https":
            sock = self._context.wrap_socket(sock, server_hostname=self._target.host)  # type: ignore[attr-defined]  # set by HTTPSConnection
        self.sock = sock


def post(target: Target, body: bytes, headers: dict[str, str], deadline: float) -> Answer:
    """POST ``body`` to ``target``; over in ``deadline`` seconds at most."""
    start = time.monotonic()
    conn = _Connection(target, timeout=max(deadline, 0.1))
    timer = threading.Timer(max(deadline, 0.1), _cut, (conn,))
    timer.daemon = True
    timer.start()
    try:
        conn.putrequest("POST", target.path, skip_accept_encoding=True)
        for name, value in {"Content-Type": "application/json", "User-Agent": USER_AGENT,
                            "Content-Length": str(len(body)), **headers}.items():
            conn.putheader(name, value)
        conn.endheaders(body)
        response = conn.getresponse()
        response.read(MAX_ANSWER)
        status = response.status
        problem = ""
        if 300 <= status < 400:
            problem = "redirect not followed"
        elif not 200 <= status < 300:
            problem = response.reason[:80]
        return Answer(status, problem, _millis(start))
    except (OSError, http.client.HTTPException, ValueError) as exc:
        late = time.monotonic() - start >= deadline
        return Answer(None, "no answer in time" if late else _reason(exc), _millis(start))
    finally:
        timer.cancel()
        conn.close()


def _cut(conn: http.client.HTTPConnection) -> None:
    """The deadline passed: the socket is shut, so whatever waits on it ends."""
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return "".join(c if c.isprintable() else "?" for c in text)[:120]


def _millis(start: float) -> int:
    return int((time.monotonic() - start) * 1000)
