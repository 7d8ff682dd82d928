"""Shared tools of the fault campaigns (tests/faults/).

* :data:`LONG` and :func:`scale` — every campaign has a short version for CI
  and a long one run on demand with ``VYKHUKHOL_LONG=1``;
* :class:`FaultHandler` behind the ``bad_smtp`` fixture (conftest.py) — a real
  aiosmtpd server on 127.0.0.1 that can greet with 421, refuse RCPT, hang up
  in the middle of DATA, or take its time over any command, and that stamps
  every letter it keeps with the moment it took it and the run that sent it;
* cron processes started the way a crontab line starts them;
* the run log read back (in-doubt letters, a run's lines);
* :func:`assert_data_parses` — every data file of an installation still reads.

Plain functions over the standard library, so a failed check shows the data
an admin would find.
"""

from __future__ import annotations

import asyncio
import configparser
import contextlib
import email.parser
import email.policy
import io
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP

from vykhukhol import newsletters
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import DataDir
from vykhukhol.files import runlog
from vykhukhol.sender import dueindex, idle
from vykhukhol.sender.journal import EVENTS
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import HEADER, parse_line
from vykhukhol.states import LedgerState

LIB = Path(__file__).resolve().parents[2] / "lib"
ADMIN = "admin@example.org"

#: The long versions run with VYKHUKHOL_LONG=1 (any value but "" and "0").
LONG = os.environ.get("VYKHUKHOL_LONG", "") not in ("", "0")


def scale(short: Any, long: Any) -> Any:
    """``long`` when VYKHUKHOL_LONG=1, else ``short`` (what CI runs)."""
    return long if LONG else short


def campaign_seed() -> int:
    """A random seed for one campaign, or VYKHUKHOL_SEED to replay a failed one."""
    given = os.environ.get("VYKHUKHOL_SEED")
    return int(given) if given else random.SystemRandom().randrange(10**9)


def env() -> dict[str, str]:
    values = dict(os.environ)
    values["PYTHONPATH"] = str(LIB) + os.pathsep + values.get("PYTHONPATH", "")
    values.pop("VYKHUKHOL_DATA", None)
    return values


def free_port() -> int:
    """A port nobody listens on right now (aiosmtpd's Controller cannot take port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- the SMTP server -------------------------------------------------------------

DROP = "drop"                  # hang up instead of answering DATA; the letter is not kept
KEEP_AND_DROP = "keep-and-drop"  # keep the letter, then hang up before answering DATA

_HEADERS = email.parser.BytesHeaderParser(policy=email.policy.default)


@dataclass
class Letter:
    """One letter the server kept."""

    at: float       # time.time() when the server took it
    rcpt: str
    subject: str
    run: str        # its X-Vykhukhol-Run header


def _no_reply(*args: Any) -> str | None:
    return None


@dataclass
class FaultHandler:
    """Accepts everything unless told otherwise; each hook may change per letter.

    * ``on_connect()`` → a reply such as ``"421 busy"`` to greet with and hang up;
    * ``on_rcpt(address)`` → a reply to RCPT instead of 250;
    * ``on_data(recipient)`` → a reply to DATA instead of 250, or :data:`DROP` /
      :data:`KEEP_AND_DROP`;
    * ``delays`` — seconds to wait before answering ``EHLO``, ``MAIL``, ``RCPT``
      or ``DATA``.
    * ``pipelining`` — offer PIPELINING (RFC 2920) after EHLO.
    """

    letters: list[Letter] = field(default_factory=list)
    data_seen: list[tuple[str, str]] = field(default_factory=list)  # (rcpt, subject) of every
    # letter whose DATA reached the server, kept or not
    on_connect: Callable[[], str | None] = _no_reply
    on_rcpt: Callable[[str], str | None] = _no_reply
    on_data: Callable[[str], str | None] = _no_reply
    delays: dict[str, float] = field(default_factory=dict)
    connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    pipelining: bool = False

    async def _wait(self, command: str) -> None:
        seconds = self.delays.get(command, 0.0)
        if seconds:
            await asyncio.sleep(seconds)

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        await self._wait("EHLO")
        session.host_name = hostname
        if self.pipelining:
            return [*responses[:-1], "250-PIPELINING", responses[-1]]
        return responses

    async def handle_HELO(self, server, session, envelope, hostname):
        await self._wait("EHLO")
        session.host_name = hostname
        return f"250 {server.hostname}"

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        await self._wait("MAIL")
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        await self._wait("RCPT")
        reply = self.on_rcpt(address)
        if reply:
            return reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        # The letter is kept (or not) as it arrives, *then* the answer takes its
        # time: a client that dies or gives up meanwhile leaves the server holding
        # a letter it never heard was accepted — the case "in doubt" is for.
        rcpt = envelope.rcpt_tos[0] if envelope.rcpt_tos else ""
        head = _HEADERS.parsebytes(bytes(envelope.original_content))
        subject = str(head["Subject"] or "")
        with self.lock:
            self.data_seen.append((rcpt, subject))
        reply = self.on_data(rcpt)
        if reply in (None, KEEP_AND_DROP):
            with self.lock:
                self.letters.append(Letter(time.time(), rcpt, subject,
                                           str(head["X-Vykhukhol-Run"] or "")))
        await self._wait("DATA")
        if reply in (DROP, KEEP_AND_DROP):
            server.transport.close()
            return "421 closing"  # never reaches the client
        return reply or "250 Message accepted"

    # -- what the server kept ---------------------------------------------------
    def kept(self) -> list[Letter]:
        with self.lock:
            return list(self.letters)

    def counts(self, admin: bool = False) -> Counter:
        """Letters kept per (recipient, subject); the admin's left out unless asked."""
        return Counter((got.rcpt, got.subject) for got in self.kept()
                       if admin or got.rcpt != ADMIN)


class _FaultSmtp(SMTP):
    """aiosmtpd's session, with a chance to greet with an error and hang up."""

    async def _handle_client(self) -> None:
        handler = self.event_handler
        handler.connections += 1
        reply = handler.on_connect()
        if reply:
            await self.push(reply)
            if self.transport is not None:
                self.transport.close()
            return
        await super()._handle_client()


class _FaultController(Controller):
    def factory(self) -> SMTP:
        return _FaultSmtp(self.handler, **self.SMTP_kwargs)


@dataclass
class FaultServer:
    controller: Controller
    handler: FaultHandler
    port: int


def start_smtp() -> FaultServer:
    handler = FaultHandler()
    port = free_port()
    controller = _FaultController(handler, hostname="127.0.0.1", port=port)
    controller.start()
    return FaultServer(controller, handler, port)


# --- cron processes ----------------------------------------------------------------

LEASE = re.compile(r"^run ([0-9a-f]{16})$", re.M)


def start_cron(root: Path) -> subprocess.Popen:
    """One ``vykhukhol cron`` process, as a crontab line starts it."""
    return subprocess.Popen(
        [sys.executable, "-m", "vykhukhol", "--data", str(root), "cron"],
        env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@dataclass
class CronRun:
    report: str
    stderr: str
    code: int
    seconds: float  # wall time, process start to exit

    @property
    def outcome(self) -> str:
        lines = self.report.splitlines()
        return lines[-1].rsplit(": ", 1)[1] if lines and lines[-1].startswith("ended ") else "?"

    @property
    def lease(self) -> str:
        found = LEASE.search(self.report)
        return found.group(1) if found else ""


def cron(root: Path, timeout: float = 120) -> CronRun:
    """Run the sender once in its own process and wait for it."""
    began = time.monotonic()
    proc = start_cron(root)
    out, err = proc.communicate(timeout=timeout)
    return CronRun(out, err, proc.returncode, time.monotonic() - began)


def kill_now(proc: subprocess.Popen) -> bool:
    """``kill -9`` a run if it is still going; True if it was. The process is reaped
    (a zombie's pid still answers kill(pid, 0), and would look alive to the next run)."""
    killed = False
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGKILL)
            killed = True
        except ProcessLookupError:
            pass
    proc.communicate(timeout=30)
    return killed and proc.returncode == -signal.SIGKILL


def recover(root: Path) -> str:
    """What the admin does after "script is down by hoster": debug, then working.
    Returns what the commands printed (what they cleared)."""
    from vykhukhol import cli

    said = io.StringIO()
    for mode in ("debug", "working"):
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            code = cli.main(["--data", str(root), "mode", mode])
        assert code == 0, f"vykhukhol mode {mode} exited {code}: {said.getvalue()}"
    return said.getvalue()


# --- the run log -------------------------------------------------------------------

def log_entries(data: DataDir) -> list[runlog.Entry]:
    """Every line of the run log, rotated files first (oldest first)."""
    entries = []
    for name in ("run.log.3", "run.log.2", "run.log.1", "run.log"):
        path = data.log / name
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            entry = runlog.parse_line(line)
            if entry is not None:
                entries.append(entry)
    return entries


_SERIES_DOUBT = re.compile(r"^(\S+): letter (\S+) to (\S+) got no answer")
_NEWS_DOUBT = re.compile(r"^newsletter (\S+): the letter to (\S+) got no answer")


def in_doubt(data: DataDir) -> set[tuple[str, str, str]]:
    """Letters the log says are in doubt: (service or job, item, address); item is
    the letter number of a series, "news" for a newsletter."""
    found = set()
    for entry in log_entries(data):
        series = _SERIES_DOUBT.match(entry.message)
        if series:
            found.add((series.group(1), series.group(2), series.group(3)))
        news = _NEWS_DOUBT.match(entry.message)
        if news:
            found.add((news.group(1), "news", news.group(2)))
    return found


def lines_of(data: DataDir, lease: str) -> list[runlog.Entry]:
    return [entry for entry in log_entries(data) if entry.lease == lease]


# --- the data files ------------------------------------------------------------------

def subscriber_sets(data: DataDir) -> dict[str, set[str]]:
    """Every service's subscribers (addresses, lower-cased)."""
    from vykhukhol import services as svc

    return {service.name: {s.key for s in subs.subscribers(service.subscribers_path)}
            for service in svc.load_services(data)}


def assert_data_parses(data: DataDir) -> None:
    """Every data file reads back whole: subscriber lines, ledger rows, jobs,
    journals, state files, settings and the log."""
    from vykhukhol import services as svc

    problems: list[str] = []
    settings = settings_mod.load(data.settings)
    problems += [f"settings.ini: {p}" for p in settings.problems]
    for service in svc.load_services(data):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(service.ini_path.read_text(encoding="utf-8"))
            assert parser.has_section("service"), "no [service] section"
            svc.load_letters(service)
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            problems.append(f"service {service.name}: {exc}")
        path = service.subscribers_path
        lines = path.read_text(encoding="utf-8", errors="surrogateescape").split("\n")
        if lines[0] != HEADER:
            problems.append(f"{path}: header line is {lines[0][:80]!r}")
        if lines[-1] != "":
            problems.append(f"{path}: last line has no line end: {lines[-1][:80]!r}")
        for number, line in enumerate(lines[1:-1], start=2):
            try:
                parse_line(line)
            except Exception as exc:  # noqa: BLE001 - any failure is the finding
                problems.append(f"{path}:{number}: {exc}: {line[:120]!r}")
    for job in sorted(data.newsletters.glob("*.job")) if data.newsletters.is_dir() else []:
        name = job.stem
        try:
            newsletters.read_job(data, name)
            newsletters.read_letter(data, name)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"newsletter {name}: {exc}")
        ledger = data.job(name, "list")
        if not ledger.exists():
            problems.append(f"newsletter {name}: its ledger is missing")
            continue
        for number, line in enumerate(ledger.read_text(encoding="utf-8").splitlines(), start=1):
            if not line or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) not in (5, 6) or parts[2] not in {s.value for s in LedgerState}:  # 6: its why
                problems.append(f"{ledger.name}:{number}: not a ledger row: {line[:120]!r}")
    for journal in sorted(data.state.glob("*.journal")):
        lines = journal.read_text(encoding="utf-8", errors="replace").split("\n")
        for number, line in enumerate(lines[:-1], start=1):
            parts = line.split("\t")
            if len(parts) not in (6, 7, 8) or parts[0] not in EVENTS:  # as sender.journal.read reads
                problems.append(f"{journal.name}:{number}: not a journal line: {line[:120]!r}")
    if (data.state / "idle").is_file() and idle.read_proof(str(data.root)) is None:
        problems.append("state/idle: not a whole idle proof")  # written whole, or not at all
    for path in sorted(data.state.iterdir()):
        if path.is_file() and not path.name.endswith((".journal", ".lock")) \
                and path.name not in ("blocked", "idle") and not path.name.startswith("."):
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                if line and not line.startswith("#") and "\t" not in line:
                    problems.append(f"state/{path.name}: not a key<TAB>value line: {line[:80]!r}")
    for index in sorted((data.state / "index").glob("*.due")):
        if not index.read_bytes().startswith(dueindex.MAGIC):  # written whole, or not at all
            problems.append(f"state/index/{index.name}: not a due index")
    for entry_line in (data.log / "run.log").read_text(encoding="utf-8", errors="replace") \
            .splitlines() if (data.log / "run.log").exists() else []:
        if len(entry_line.split("\t", 3)) != 4:
            problems.append(f"run.log: not a log line: {entry_line[:120]!r}")
    assert not problems, "data files that do not read back:\n" + "\n".join(problems[:40])


def leftover_temp_files(data: DataDir) -> list[Path]:
    """Temporary files of rewrites that a kill cut short (harmless, but never cleaned)."""
    return sorted(p for p in data.root.rglob(".*.tmp"))
