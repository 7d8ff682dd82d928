"""The checkout as an admin uploads it, for the tests that run the CGI scripts
themselves: the ``install`` fixture (the copy initialised, working mode,
service ``news`` with one letter due at once), ``parse_cgi`` to read an
answer as mod_cgi reads it, and the ``vykhukhol`` command in-process.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from support.webtools import (
    Page,
    parse_message,
)
from vykhukhol import cli
from vykhukhol import services as svc
from vykhukhol.datadir import DataDir
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber

CHECKOUT = Path(__file__).resolve().parents[2]


SITE_URL = "http://localhost"


FORM = "application/x-www-form-urlencoded"


@dataclass
class Install:
    """A copied installation and the data directory its vykhukhol.path names."""

    root: Path
    data_root: Path
    init_output: str

    @property
    def cgi(self) -> Path:
        return self.root / "cgi"

    @property
    def data(self) -> DataDir:
        return DataDir(self.data_root)

    def cron_script(self) -> Path:
        scripts = sorted(self.cgi.glob("cron-*.py"))
        assert len(scripts) == 1, scripts
        return scripts[0]

    def run(self, script: str | Path, method: str = "GET", query: str = "", body: bytes = b"",
            content_type: str = FORM, remote: str = "127.0.0.1", **extra: str) -> Page:
        """Start one script as a CGI request and read its answer."""
        path = Path(script) if Path(script).is_absolute() else self.root / script
        rel = path.relative_to(self.root).as_posix()
        environ = {
            "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_SOFTWARE": "test", "SERVER_NAME": "localhost",
            "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": method,
            "SCRIPT_NAME": f"/{rel}", "SCRIPT_FILENAME": str(path), "QUERY_STRING": query,
            "REMOTE_ADDR": remote, "PATH": os.environ["PATH"], "PYTHONPATH": "",
            "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
        }
        if body or method == "POST":
            environ["CONTENT_TYPE"] = content_type
            environ["CONTENT_LENGTH"] = str(len(body))
        environ.update(extra)
        done = subprocess.run([str(path)], env=environ, input=body, capture_output=True,
                              cwd=path.parent, timeout=60)
        assert done.returncode == 0, f"{rel} exited {done.returncode}: {done.stderr.decode()}"
        return parse_cgi(done.stdout, done.stderr)

    def subscribers(self, service: str = "news") -> dict[str, Subscriber]:
        found = svc.find_service(self.data, service).subscribers_path
        return {s.email: s for s in subs.subscribers(found)}

    def outbox(self) -> list[Any]:
        return [parse_message(p.read_bytes()) for p in sorted(self.data.outbox.glob("*.eml"))]

    def mails_to(self, address: str) -> list[Any]:
        return [m for m in self.outbox() if str(m["To"]).endswith(f"<{address}>")
                or str(m["To"]) == address]


def parse_cgi(stdout: bytes, stderr: bytes = b"") -> Page:
    """A CGI answer: ``Status:`` and other headers, a blank line, the body."""
    head, sep, body = stdout.partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = stdout.partition(b"\n\n")
    assert sep, f"no header/body separator in CGI output: {stdout[:500]!r} (stderr: {stderr[-2000:]!r})"
    headers: dict[str, str] = {}
    for line in head.decode("latin-1").splitlines():
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    status = int(headers.get("status", "200").split()[0])
    return Page(status, headers, body, stderr.decode(errors="replace"))


def copy_checkout(target: Path) -> None:
    for folder in ("lib", "cgi", "admin"):
        shutil.copytree(CHECKOUT / folder, target / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "vykhukhol.path",
                                                      "cron-*.py", "*.egg-info"))


def vykhukhol(*args: str) -> str:
    """The ``vykhukhol`` command, in-process; its standard output."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    assert code == 0, f"vykhukhol {' '.join(args)} → {code}: {err.getvalue()}"
    return out.getvalue()


@pytest.fixture
def install(tmp_path: Path) -> Install:
    """The checkout copied to tmp_path/install, initialised by ``vykhukhol init --cgi-dir
    install/cgi``, working mode, service ``news`` with one letter due at once."""
    root = tmp_path / "install"
    copy_checkout(root)
    data_root = tmp_path / "data"
    printed = vykhukhol("--data", str(data_root), "init", "--cgi-dir", str(root / "cgi"),
                        "--admin-email", "admin@example.org", "--password", "correct-horse-1",
                        "--site-url", SITE_URL)
    (root / "cgi" / "vykhukhol.path").write_text(f"{data_root}\n", encoding="utf-8")
    vykhukhol("--data", str(data_root), "mode", "working")
    vykhukhol("--data", str(data_root), "settings", "set", "language", "en")
    data = DataDir(data_root)
    svc.add_db(data, "main")
    service = svc.add_service(data, "news", "main", {"title": "News"})
    svc.add_letter(service, "Lesson 1", "0s", "Hello {{ name }}, lesson one.\n")
    svc.edit_service(data, "news", {"enabled": "yes"})
    return Install(root, data_root, printed)


def query_of(url: str) -> str:
    return urlsplit(url).query
