"""World-readable personal data.

``files.atomic_write`` chmodded every new file to 0644 even under ``umask
077``, so state/sessions, state/logins, subscriber files and outbox letters
could be read by every other user of the host. Now every file in data/ is
created 0600 and every folder 0700, and nothing is ever wider than the umask.

The installation is made and used the way an owner does it, each process
under the umask being tried: `vykhukhol init` and the other commands,
a subscription and an admin log-in (a wrong one, then the right one) through
a real `vykhukhol serve`, a newsletter and cron runs. Then every file and
folder in data/ is looked at.
"""

from __future__ import annotations

import http.client
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest

from support.servetools import PASSWORD, ServeProcess, subprocess_env

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cli(root: Path, umask: int, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(root), *args],
                          capture_output=True, text=True, timeout=120, env=subprocess_env(),
                          umask=umask)
    assert done.returncode == 0, f"vykhukhol {' '.join(args)}: {done.stderr}"
    return done.stdout


def _post(port: int, path: str, fields: dict[str, str]) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", path, body=urlencode(fields).encode(), headers=FORM)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


class _Site:
    def __init__(self, root: Path, cgi_dir: Path) -> None:
        self.root, self.cgi_dir = root, cgi_dir


def _serve_under(site: _Site, umask: int, folder: Path) -> ServeProcess:
    server = ServeProcess(site, free_port(), folder)
    old = os.umask(umask)  # the serve child inherits it
    try:
        server.start()
    finally:
        os.umask(old)
    return server


def _too_wide(root: Path, umask: int) -> list[str]:
    found = []
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & 0o077 or mode & umask:
            found.append(f"{oct(mode)} {path.relative_to(root.parent)}")
    return found


@pytest.mark.parametrize("umask", [0o022, 0o077], ids=oct)
def test_every_file_in_data_is_the_owners_alone_whatever_the_umask(tmp_path, umask):
    cgi_dir = tmp_path / "cgi"
    cgi_dir.mkdir()
    (cgi_dir / "cron.py").write_text("# shipped cron script\n")
    root = tmp_path / "data"
    _cli(root, umask, "init", "--admin-email", "admin@example.org", "--password", PASSWORD,
         "--cgi-dir", str(cgi_dir), "--site-url", "https://lists.example.org")
    for args in (("db", "add", "main"), ("service", "add", "news", "--db", "main", "--title", "News"),
                 ("letter", "add", "news", "--subject", "Hello", "--delay", "0s", "--body", "Hi {{ name }}"),
                 ("service", "enable", "news"), ("mode", "working"),
                 ("subscriber", "add", "news", "asks@example.org", "--name", "Asks"),
                 ("subscriber", "add", "news", "reads@example.org", "--name", "Reads", "--confirmed")):
        _cli(root, umask, *args)

    server = _serve_under(_Site(root, cgi_dir), umask, tmp_path / "serve")
    try:
        status, _ = _post(server.port, "/cgi/subscribe.py",
                          {"service": "news", "email": "web@example.org", "name": "Web"})
        assert status == 200
        assert _post(server.port, "/admin/login", {"password": "wrong"})[0] == 403
        assert _post(server.port, "/admin/login", {"password": PASSWORD})[0] == 303
    finally:
        server.stop()

    _cli(root, umask, "cron")
    _cli(root, umask, "newsletter", "create", "--services", "news", "--subject", "All", "--body", "News")
    _cli(root, umask, "cron")
    export = tmp_path / "export.csv"
    _cli(root, umask, "subscriber", "export", "news", str(export))

    assert list((root / "outbox").glob("*.eml")), "the test should have made outbox letters"
    assert (root / "state" / "sessions").exists() and (root / "state" / "logins").exists()
    assert list(root.rglob("*.lock")), "the test should have made lock files"
    assert _too_wide(root, umask) == []
    assert stat.S_IMODE(export.stat().st_mode) == 0o600 & ~umask
