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

from vykhukhol.files.runlog import one_line
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

    def __init__(self, target: Target, timeout: float, watch: _Watch) -> None:
        super().__init__(target.host, target.port, timeout=timeout,
                         context=ssl.create_default_context())
        self._target, self._watch = target, watch

    def connect(self) -> None:
        sock = socket.create_connection((self._target.address, self._target.port), self.timeout)
        self._watch.watch(sock)  # a deadline passed during the connect shuts it now
        if self._target.scheme == "https":
            sock = self._context.wrap_socket(sock, server_hostname=self._target.host)  # type: ignore[attr-defined]  # set by HTTPSConnection
        self.sock = sock


class _Watch:
    """The whole answer's deadline: at it the connection's socket is shut (the
    plain socket's shutdown, never an SSL socket's, which would unwrap it under
    the reading thread), and a read blocked on it ends at once."""

    def __init__(self, seconds: float) -> None:
        self._sock: socket.socket | None = None
        self._passed = False
        self._guard = threading.Lock()
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket) -> None:
        with self._guard:
            self._sock = sock
            if self._passed:
                self._shut()

    def cancel(self) -> None:
        self._timer.cancel()

    def _cut(self) -> None:
        with self._guard:
            self._passed = True
            self._shut()

    def _shut(self) -> None:
        if self._sock is not None:
            try:
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)
            except OSError:
                pass


def post(target: Target, body: bytes, headers: dict[str, str], deadline: float) -> Answer:
    """POST ``body`` to ``target``; over in ``deadline`` seconds at most."""
    start = time.monotonic()
    watch = _Watch(max(deadline, 0.1))
    conn = _Connection(target, max(deadline, 0.1), watch)
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
        watch.cancel()
        conn.close()


def _reason(exc: BaseException) -> str:
    return one_line(getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)[:120]


def _millis(start: float) -> int:
    return int((time.monotonic() - start) * 1000)
