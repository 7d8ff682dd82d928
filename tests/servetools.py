"""One ``vykhukhol serve`` subprocess for tests that drive it over HTTP.

Shared by tests/integration/test_web_flow.py and tests/browser/conftest.py;
importable as ``servetools`` because tests/conftest.py puts tests/ on sys.path.
Output goes to files (no pipe to fill); ``stop`` sends SIGTERM and returns
the exit code and output, so a test can check the server stopped cleanly.
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

LIB = Path(__file__).resolve().parents[1] / "lib"
START_WITHIN = 20.0  # seconds serve may take to answer its first request
STOP_WITHIN = 10.0   # seconds serve may take to stop after SIGTERM


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a ``python -m vykhukhol`` child: this checkout's lib/ first."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(LIB) + os.pathsep + env.get("PYTHONPATH", "")
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
