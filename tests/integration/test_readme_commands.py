"""README's first set-up command, run the way a new user on Debian runs it.

The command is read out of README.txt (the first indented line under
"Set-up") and run by /bin/sh in a fresh copy of this repository, with
Debian's /usr/bin/python3 first on the PATH: a system Python that refuses a
plain `pip install` (PEP 668, "externally-managed-environment"). It must make
its .venv/ from that Python, install into it, start `vykhukhol serve` and
print the admin URL, which must lead to the log-in page. The server is then
stopped through its process group (the shell, pip and serve all share it).

The copy is a `git clone` of this checkout, so it holds what is committed
(HEAD), not uncommitted edits: commit before trusting this test on a change
to README.txt or setup.cfg. A checkout without git (an unpacked release) is
copied instead, without what a local run leaves behind.

One change to the command as printed: ` --port N` (a free port) is appended,
since 8080 may be busy on the machine running the tests; argparse takes the
last --port, so a port written in README's command would be overridden.

pip takes the dependencies from the package index (pip's own configuration
and PIP_* variables apply, e.g. a local mirror): the one test that needs more
than loopback. Measured here: 11-35 s to the admin URL (network and load).
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from support.webtools import free_port

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = Path("/usr/bin/python3")
READY_WITHIN = 180.0  # seconds for venv + pip install + serve's first line
STOP_WITHIN = 15.0    # seconds serve may take to stop after SIGTERM
ADMIN_LINE = re.compile(rb"^admin: (http://\S+)$", re.M)
LOCAL_LEFTOVERS = (".venv", "demo-data", "__pycache__", "*.egg-info", ".pytest_cache",
                   ".ruff_cache", ".hypothesis", "artifacts", "cron-*.py", "settings.ini")

pytestmark = pytest.mark.skipif(not SYSTEM_PYTHON.exists(),
                                reason="no /usr/bin/python3 (not a Debian-like system)")


def first_command(checkout: Path) -> str:
    """The first command shown under README.txt's "Set-up" heading."""
    readme = (checkout / "README.txt").read_text(encoding="utf-8")
    setup = readme.split("\nSet-up (two commands)\n---", 1)[1]
    found = re.search(r"^ {4}(\S.*)$", setup, re.M)
    assert found, "README.txt's Set-up section shows no indented command"
    return found.group(1)


def fresh_copy(target: Path) -> None:
    """A `git clone` of this checkout (HEAD), or a copy when there is no git."""
    git = shutil.which("git")
    if git and subprocess.run([git, "-C", str(ROOT), "rev-parse", "--git-dir"],
                              capture_output=True).returncode == 0:
        subprocess.run([git, "clone", "--quiet", str(ROOT), str(target)], check=True,
                       capture_output=True, timeout=120)
    else:
        shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(*LOCAL_LEFTOVERS))


def new_user_env() -> dict[str, str]:
    """This environment with /usr/bin first on PATH and nothing that points Python
    at this checkout or at another venv."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV",
                           "VYKHUKHOL_DATA")}
    env["PATH"] = os.pathsep.join(["/usr/bin", "/bin", os.environ.get("PATH", "")])
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return env


def wait_for_admin_url(process: subprocess.Popen, output: Path) -> str:
    deadline = time.monotonic() + READY_WITHIN
    while True:
        found = ADMIN_LINE.search(output.read_bytes())
        if found:
            return found.group(1).decode()
        if process.poll() is not None:
            raise AssertionError(f"the command exited {process.returncode} before printing the "
                                 f"admin URL:\n{tail(output)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no admin URL within {READY_WITHIN:.0f} s:\n{tail(output)}")
        time.sleep(0.2)


def tail(output: Path) -> str:
    return output.read_text(errors="replace")[-4000:]


def get(url: str) -> tuple[int, str, str]:
    """(status, Location header, body) of one GET, redirects not followed."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
    try:
        conn.request("GET", parts.path or "/")
        response = conn.getresponse()
        return response.status, response.getheader("Location", ""), \
            response.read().decode("utf-8", errors="replace")
    finally:
        conn.close()


def stop(process: subprocess.Popen) -> int | None:
    """SIGTERM to the whole process group; SIGKILL if it is still there after STOP_WITHIN."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        return process.wait(timeout=STOP_WITHIN)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)
        return None


def test_readme_first_command_serves_the_admin_on_debians_system_python(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    fresh_copy(checkout)
    command = first_command(checkout)
    port = free_port()
    output = tmp_path / "command.out"
    started = time.monotonic()
    with output.open("wb") as out:
        process = subprocess.Popen(["/bin/sh", "-c", f"{command} --port {port}"], cwd=checkout,
                                   env=new_user_env(), stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = wait_for_admin_url(process, output)
        ready = time.monotonic() - started
        assert url == f"http://127.0.0.1:{port}/admin/"
        status, location, body = get(url)
        if status in (302, 303):
            assert urlsplit(location).path == "/admin/login", location
            status, location, body = get(f"http://127.0.0.1:{port}/admin/login")
        assert status == 200, f"{status} {body[:500]}"
        assert 'type="password"' in body, body[:2000]
    finally:
        code = stop(process)
    assert code is not None, f"the command did not stop on SIGTERM:\n{tail(output)}"
    # The venv was made from Debian's Python and is what ran: nothing went
    # into the system Python (which would have refused it anyway).
    config = (checkout / ".venv" / "pyvenv.cfg").read_text(encoding="utf-8")
    assert re.search(r"^home = /usr/bin$", config, re.M), config
    assert (checkout / "demo-data" / "settings.ini").exists()
    print(f"README's first command: admin URL after {ready:.1f} s")
