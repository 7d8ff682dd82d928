"""What the web attacks of tests/security/ are run through: a real ``vykhukhol serve``
(``served``), the checkout's real CGI scripts as processes (``run_cgi``), a
small HTTP client that keeps cookies like a browser (``Browser``), and a mail
server on loopback that takes seconds to greet (``slow_mail_server``: whether
an answer waited for a letter).

Used by test_login.py, test_sessions.py, test_subscribe_abuse.py,
test_after_answer.py, test_malformed_requests.py and test_request_limits.py. The CGI scripts run
from this checkout with ``VYKHUKHOL_DATA`` naming the site's data directory
(what a host's ``SetEnv`` does), so nothing is copied.
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from support.servetools import PASSWORD, ServeProcess, subprocess_env

CHECKOUT = Path(__file__).resolve().parents[2]
FORM = "application/x-www-form-urlencoded"
TRACEBACK = "Traceback"
SLOW_HELLO = 3.0  # seconds the slow mail server waits before refusing a session


class Answer:
    """One HTTP answer: status, headers (names lower-cased, Set-Cookie kept apart), body."""

    def __init__(self, status: int, headers: list[tuple[str, str]], raw: bytes, stderr: str = "") -> None:
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.cookies = [v for k, v in headers if k.lower() == "set-cookie"]
        self.raw = raw
        self.stderr = stderr

    @property
    def body(self) -> str:
        return self.raw.decode("utf-8", "replace")

    def field(self, name: str) -> str:
        found = re.search(rf'name="{re.escape(name)}" value="([^"]*)"', self.body)
        assert found, f"no field {name} in {self!r}"
        return found.group(1)

    def __repr__(self) -> str:
        return f"Answer({self.status}, {self.body[:400]!r})"


class Browser:
    """HTTP/1.1 to one serve, one connection a request, with a cookie jar."""

    def __init__(self, port: int, headers: dict[str, str] | None = None) -> None:
        self.port = port
        self.jar: dict[str, str] = {}
        self.headers = dict(headers or {})

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None, timeout: float = 30) -> Answer:
        sent = dict(self.headers)
        if body is not None:
            sent.setdefault("Content-Type", FORM)
        if self.jar:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.jar.items())
        sent.update(headers or {})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=sent)
            response = conn.getresponse()
            answer = Answer(response.status, response.getheaders(), response.read())
        finally:
            conn.close()
        for line in answer.cookies:
            cookie = SimpleCookie()
            cookie.load(line)
            for name, morsel in cookie.items():
                if morsel["max-age"] == "0":
                    self.jar.pop(name, None)
                else:
                    self.jar[name] = morsel.value
        return answer

    def get(self, path: str, **kw: Any) -> Answer:
        return self.request("GET", path, **kw)

    def post(self, path: str, fields: dict[str, str], **kw: Any) -> Answer:
        return self.request("POST", path, urlencode(fields).encode(), **kw)

    def log_in(self, password: str = PASSWORD, **kw: Any) -> Answer:
        """The login form, its POST as a browser on this site sends it, and
        (when it succeeds) the page it leads to; the POST's answer."""
        form = self.get("/admin/login", **kw)
        assert form.status == 200, form
        headers = {"Origin": f"http://127.0.0.1:{self.port}", "Sec-Fetch-Site": "same-origin",
                   **kw.pop("headers", {})}
        answer = self.post("/admin/login", {"password": password}, headers=headers, **kw)
        if answer.status == 303:
            self.get(answer.headers["location"], **kw)
        return answer

    def csrf(self, path: str = "/admin/settings") -> str:
        page = self.get(path)
        assert page.status == 200, page
        return page.field("csrf")

    def import_from(self, service: str, form: list[tuple[str, str]], filename: str,
                    content_type: str, content: bytes) -> Answer:
        """The admin's import form of ``service`` posted as a browser sends it:
        multipart, the session's CSRF token, ``form``'s fields, then the file."""
        csrf = self.csrf(f"/admin/services/{service}/subscribers")
        boundary = "----vykhukhol-test-boundary"
        fields = "".join(f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n"
                         f"{value}\r\n" for name, value in [("csrf", csrf), *form])
        body = (fields + f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
                f"filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n").encode() \
            + content + f"\r\n--{boundary}--\r\n".encode()
        return self.request("POST", f"/admin/services/{service}/import-from", body,
                            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})


@pytest.fixture
def served(site: Any, tmp_path: Path) -> Iterator[ServeProcess]:
    """``vykhukhol serve`` over ``site`` (English pages); stopped cleanly, no traceback."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    site.set(language="en", site_url=f"http://127.0.0.1:{port}")
    running = ServeProcess(site, port, tmp_path / "serve")
    running.start()
    yield running
    code, out, err = running.stop()
    assert code == 0, f"serve did not stop cleanly (exit {code}): {err}"
    assert TRACEBACK not in err, err


def run_cgi(site: Any, script: str, method: str = "GET", query: str = "", body: bytes = b"",
            content_type: str = FORM, remote: str = "127.0.0.1", path_info: str = "",
            **extra: str) -> Answer:
    """One request to the checkout's ``script`` (``cgi/subscribe.py``, ``admin/index.py``)
    as a CGI process, read the way mod_cgi reads it."""
    path = CHECKOUT / script
    environ = cgi_environ(site, script, method, query, remote, path_info)
    if body or method == "POST":
        environ["CONTENT_TYPE"] = content_type
        environ["CONTENT_LENGTH"] = str(len(body))
    environ.update(extra)
    done = subprocess.run([str(path)], env=environ, input=body, capture_output=True,
                          cwd=path.parent, timeout=60)
    assert done.returncode == 0, f"{script} exited {done.returncode}: {done.stderr.decode()}"
    return parse_cgi(done.stdout, done.stderr.decode(errors="replace"))


def cgi_environ(site: Any, script: str, method: str = "GET", query: str = "",
                remote: str = "127.0.0.1", path_info: str = "") -> dict[str, str]:
    path = CHECKOUT / script
    environ = {
        "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_SOFTWARE": "test", "SERVER_NAME": "localhost",
        "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": method,
        "SCRIPT_NAME": f"/{script}", "SCRIPT_FILENAME": str(path), "QUERY_STRING": query,
        "PATH_INFO": path_info, "REMOTE_ADDR": remote, "PATH": os.environ["PATH"],
        "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
        "VYKHUKHOL_DATA": str(site.root),
    }
    environ["PYTHONPATH"] = subprocess_env()["PYTHONPATH"]  # the shared site-packages
    return environ


def parse_cgi(stdout: bytes, stderr: str = "") -> Answer:
    head, sep, body = stdout.partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = stdout.partition(b"\n\n")
    assert sep, f"no header/body separator: {stdout[:500]!r} (stderr: {stderr[-2000:]!r})"
    headers = []
    for line in head.decode("latin-1").splitlines():
        name, _, value = line.partition(":")
        headers.append((name.strip(), value.strip()))
    status = int(dict((k.lower(), v) for k, v in headers).get("status", "200").split()[0])
    return Answer(status, headers, body, stderr)


def wait_for(condition: Callable[[], Any], timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


def outbox_to(site: Any, address: str) -> list[Any]:
    return [m for m in site.outbox() if address in str(m["To"])]


class SlowMailServer:
    """What ``slow_mail_server`` yields: its port, and when each session came
    (``time.monotonic()``, one a letter tried)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.greeted: list[float] = []


@pytest.fixture
def slow_mail_server() -> Iterator[SlowMailServer]:
    """A mail server on loopback that waits SLOW_HELLO seconds, then refuses
    the session (554): each letter costs its sender those seconds."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    server = SlowMailServer(listener.getsockname()[1])
    stop = threading.Event()

    def greet_late(conn: socket.socket) -> None:
        server.greeted.append(time.monotonic())
        time.sleep(SLOW_HELLO)
        try:
            conn.sendall(b"554 not today\r\n")
        finally:
            conn.close()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=greet_late, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server
    stop.set()
    thread.join()
    listener.close()
