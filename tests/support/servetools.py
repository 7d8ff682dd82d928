"""One ``vykhukhol serve`` subprocess for tests that drive it over HTTP, and
in-process WSGI calls (``environ``, ``call``, ``log_in``) for tests that drive
an app directly.

The subprocess is shared by tests/integration/test_web_flow.py and
tests/browser/conftest.py; the WSGI helpers by tests/faults/test_fuzz.py and
tests/integration/test_calendar_ends.py;
importable as ``support.servetools`` (pyproject.toml puts tests/ on the path).
Output goes to files (no pipe to fill); ``stop`` sends SIGTERM and returns
the exit code and output, so a test can check the server stopped cleanly.
"""

from __future__ import annotations

import http.client
import io
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

LIB = Path(__file__).resolve().parents[2] / "lib"
PASSWORD = "correct-horse-1"  # tests/conftest.py's installation
START_WITHIN = 20.0  # seconds serve may take to answer its first request
STOP_WITHIN = 10.0   # seconds serve may take to stop after SIGTERM


def subprocess_env(lib: Path = LIB, **extra: str) -> dict[str, str]:
    """The environment for a ``python -m vykhukhol`` child: ``lib`` (this
    checkout's lib/ unless a benchmark names another) first."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(lib) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("VYKHUKHOL_DATA", None)
    env.update(extra)
    return env


class ServeProcess:
    def __init__(self, site: Any, port: int, folder: Path, ready_path: str = "/admin/login") -> None:
        self.site = site
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.ready_path = ready_path
        folder.mkdir(exist_ok=True)
        self.out_path, self.err_path = folder / "serve.out", folder / "serve.err"
        self.proc: subprocess.Popen | None = None
        self.exit: tuple[int | None, str, str] | None = None

    def start(self) -> None:
        env = subprocess_env()
        with self.out_path.open("wb") as out, self.err_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "vykhukhol", "--data", str(self.site.root), "serve",
                 "--host", "127.0.0.1", "--port", str(self.port), "--no-ticker",
                 "--cgi-dir", str(self.site.cgi_dir)],
                env=env, stdout=out, stderr=err)
        deadline = time.monotonic() + START_WITHIN
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited {self.proc.returncode}: {self.stderr()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", self.ready_path)
                conn.getresponse().read()
                conn.close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"serve never answered: {self.stderr()}") from None
                time.sleep(0.05)

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def stdout(self) -> str:
        return self.out_path.read_text(errors="replace")

    def stop(self) -> tuple[int | None, str, str]:
        """SIGTERM; (exit code or None if it hung, stdout, stderr). Idempotent."""
        if self.exit is None:
            assert self.proc is not None
            self.proc.terminate()
            try:
                code: int | None = self.proc.wait(timeout=STOP_WITHIN)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                code = None
            self.exit = (code, self.stdout(), self.stderr())
        return self.exit


# --- in-process WSGI calls ---------------------------------------------------

def environ(method: str, path: str, query: str, body: bytes, ctype: str, length: str,
            script: str = "", **extra: str) -> dict[str, Any]:
    env = {
        "REQUEST_METHOD": method, "SCRIPT_NAME": script, "PATH_INFO": path, "QUERY_STRING": query,
        "SERVER_NAME": "localhost", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "wsgi.input": io.BytesIO(body), "wsgi.errors": io.StringIO(),
        "wsgi.url_scheme": "http", "wsgi.version": (1, 0), "wsgi.multithread": False,
        "wsgi.multiprocess": False, "wsgi.run_once": False,
    }
    if ctype:
        env["CONTENT_TYPE"] = ctype
    if length != "missing":
        env["CONTENT_LENGTH"] = length
    env.update(extra)
    return env


def call(app: Callable, env: dict[str, Any]) -> tuple[int, dict[str, str], str, str]:
    """(status, headers, body, what went to wsgi.errors)."""
    answer: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        answer.extend([int(status.split()[0]), dict(headers)])

    body = b"".join(app(env, start_response))
    return answer[0], answer[1], body.decode("utf-8", "replace"), env["wsgi.errors"].getvalue()


def log_in(app: Callable, password: str = PASSWORD) -> tuple[str, str]:
    """(session cookie, CSRF token), the way a browser gets them."""
    body = urlencode({"password": password}).encode()
    status, headers, page, errors = call(app, environ(
        "POST", "/login", "", body, "application/x-www-form-urlencoded", str(len(body)),
        script="/admin"))
    assert status == 303, page
    cookie = headers["Set-Cookie"].split(";")[0]
    status, _, page, _ = call(app, environ("GET", "/settings", "", b"", "", "missing",
                                           script="/admin", HTTP_COOKIE=cookie))
    assert status == 200, page
    return cookie, re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def admin_client(site: Any) -> Callable[..., tuple[int, dict[str, str], str]]:
    """The admin app in-process, logged in: ``request(method, path, fields=None,
    token=True)`` → (status, headers, page); a POST carries the session's CSRF
    token unless ``token`` is False, its fields form-encoded."""
    from vykhukhol.web import admin as admin_mod

    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, csrf = log_in(app)

    def request(method: str, path: str, fields: dict | None = None,
                token: bool = True) -> tuple[int, dict[str, str], str]:
        body = urlencode({**({"csrf": csrf} if token else {}), **(fields or {})}).encode() \
            if method == "POST" else b""
        status, headers, page, _ = call(app, environ(
            method, path, "", body, "application/x-www-form-urlencoded" if method == "POST" else "",
            str(len(body)) if method == "POST" else "missing", script="/admin", HTTP_COOKIE=cookie))
        return status, headers, page

    return request
