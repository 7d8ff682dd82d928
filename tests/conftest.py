"""Fixtures shared by every test: a fresh installation in a temporary folder.

``site`` is a real data directory made by ``vykhukhol init``; its helpers
write services, letters and subscribers the way the admin would, and read
back what the sender did (outbox, log, files). ``site.cli(...)`` runs the real
command in a subprocess; ``site.call(...)`` runs it in-process (fast).
"""

from __future__ import annotations

import contextlib
import email
import email.policy
import fcntl  # noqa: F401 - the record lock imports it on first use; a pyfakefs session must not be the first
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from support import lanes
from support.servetools import subprocess_env
from vykhukhol import cli
from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import DataDir
from vykhukhol.members import membership
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now

# Property tests judge what comes out, never how fast: on a shared 2-core
# machine one example can take past Hypothesis's 200 ms deadline and fail a
# test whose property held.
hypothesis_settings.register_profile("vykhukhol", deadline=None)
hypothesis_settings.load_profile("vykhukhol")

ADMIN = "admin@example.org"
PASSWORD = "correct-horse-1"


def pytest_configure(config: pytest.Config) -> None:
    """Scripts started through their ``#!/usr/bin/env python3`` line (the CGI
    scripts) run on the interpreter running the tests, as in an activated venv:
    the manual's test command (docs/development/tests.md#dev-tests) runs
    .venv/bin/python without activating the venv, and only the venv holds the dependencies."""
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")


_LANES = pytest.StashKey[Path]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """(pytest-xdist's controller) Every worker locks the same folder
    (support/lanes.py: the tests that run alone)."""
    stash = node.config.stash
    if _LANES not in stash:
        stash[_LANES] = Path(tempfile.mkdtemp(prefix="vykhukhol-lanes-"))
    node.workerinput["vykhukhol_lanes"] = str(stash[_LANES])


def pytest_unconfigure(config: pytest.Config) -> None:
    if _LANES in config.stash:
        shutil.rmtree(config.stash[_LANES], ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Under pytest-xdist, a test runs beside another one only if neither is
    one of support/lanes.py's ``ALONE``."""
    folder = getattr(item.config, "workerinput", {}).get("vykhukhol_lanes")
    if folder is None:
        return (yield)
    with lanes.lane(Path(folder), lanes.runs_alone(item.nodeid)):
        return (yield)


@dataclass
class Site:
    root: Path
    cgi_dir: Path

    @property
    def data(self) -> DataDir:
        return DataDir(self.root)

    # -- commands ---------------------------------------------------------
    def cli(self, *args: str, check: bool = True, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [sys.executable, "-m", "vykhukhol", "--data", str(self.root), *args],
            capture_output=True, text=True, timeout=timeout, env=subprocess_env(), **kw)
        if check and result.returncode != 0:
            raise AssertionError(f"vykhukhol {' '.join(args)} failed ({result.returncode}): {result.stderr}")
        return result

    def call(self, *args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(["--data", str(self.root), *args])
        return code, out.getvalue(), err.getvalue()

    def ok(self, *args: str) -> str:
        code, out, err = self.call(*args)
        assert code == 0, f"vykhukhol {' '.join(args)} → {code}: {err}"
        return out

    # -- set-up -----------------------------------------------------------
    def set(self, **values: object) -> None:
        """Settings by key; ``mail__smtp_port=…`` means ``mail.smtp_port``."""
        settings_mod.update(self.data.settings, {k.replace("__", "."): str(v) for k, v in values.items()})

    def settings(self) -> settings_mod.Settings:
        return settings_mod.load(self.data.settings)

    def use_smtp(self, port: int) -> None:
        self.set(mail__transport="smtp", mail__smtp_host="127.0.0.1", mail__smtp_port=port,
                 mail__from_email="list@example.org")

    def service(self, name: str, db: str = "main", letters: list[tuple[str, str, str]] | None = None,
                enabled: bool = True, **fields: str) -> svc.Service:
        if not self.data.db(db).exists():
            svc.add_db(self.data, db)
        service = svc.add_service(self.data, name, db, {"title": name.title(), **fields})
        for subject, delay, body in letters or []:
            svc.add_letter(service, subject, delay, body)
        if enabled:
            svc.edit_service(self.data, name, {"enabled": "yes"})
        return svc.find_service(self.data, name)

    def subscriber(self, service: str, email: str, name: str = "", state: str = "active",
                   ago: float = 3600, sent: int = 0, last_sent_ago: float | None = None,
                   reminders: int = 0, last_reminder_ago: float | None = None,
                   failures: int = 0) -> None:
        """Write one subscriber line, with times ``ago`` seconds back."""
        moment = now()
        back = lambda seconds: None if seconds is None else moment - timedelta(seconds=seconds)  # noqa: E731
        sub = Subscriber(
            email=email, name=name, state=SubscriberState(state), subscribed=back(ago),
            confirmed=None if state == "new" else back(ago), sent=sent,
            last_sent=back(last_sent_ago), reminders=reminders,
            last_reminder=back(last_reminder_ago), failures=failures, ip="127.0.0.1")
        subs.add(svc.find_service(self.data, service).subscribers_path, sub)

    def subscribers(self, service: str) -> dict[str, Subscriber]:
        path = svc.find_service(self.data, service).subscribers_path
        return {s.email: s for s in subs.subscribers(path)}

    def subscribe(self, service: str, email: str, **kw) -> str:
        return membership.subscribe(self.data, self.settings(), service, email, **kw)

    def run_at(self, moment: datetime | None = None) -> str:
        """One in-process run and its report; ``moment`` is the time the run believes it is."""
        from vykhukhol import sender

        if moment is None:
            return self.ok("cron")
        return sender.run(self.data, self.settings(), now=lambda: moment).text()

    @staticmethod
    def sent_counts(report: str) -> dict[str, int]:
        """``{target: letters}`` from a run report's ``sent N for X`` lines."""
        return {m.group(2): int(m.group(1))
                for m in re.finditer(r"^handed over (\d+) for (\S+)$", report, re.M)}

    # -- what happened ----------------------------------------------------
    def outbox(self) -> list[email.message.EmailMessage]:
        folder = self.data.outbox
        if not folder.exists():
            return []
        return [email.message_from_bytes(p.read_bytes(), policy=email.policy.default)
                for p in sorted(folder.glob("*.eml"))]

    def log(self) -> str:
        path = self.data.log / "run.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def pages_log(self) -> str:
        path = self.data.log / "pages.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""


def _init(tmp_path: Path, working: bool) -> Site:
    cgi_dir = tmp_path / "cgi"
    cgi_dir.mkdir()
    (cgi_dir / "cron.py").write_text("# shipped cron script\n")
    site = Site(tmp_path / "data", cgi_dir)
    site.ok("init", "--admin-email", ADMIN, "--password", PASSWORD, "--cgi-dir", str(cgi_dir),
            "--site-url", "https://lists.example.org")
    if working:
        site.ok("mode", "working")
    return site


@pytest.fixture
def site(tmp_path: Path) -> Site:
    """An initialised installation in working mode, outbox transport."""
    return _init(tmp_path, working=True)


@pytest.fixture
def fresh_site(tmp_path: Path) -> Site:
    """An initialised installation as `init` leaves it: debug mode."""
    return _init(tmp_path, working=False)


@pytest.fixture
def when() -> datetime:
    return now()
