"""What the benchmarks in tests/bench/ share: installations, fast subscriber
files, a CGI runner, an SMTP sink in its own process, statistics and tables.

Not a test module: the benchmarks are plain scripts, run on demand
(``python tests/bench/bench_<name>.py``), never collected by pytest. Every
figure is printed with ``os.getloadavg()`` beside it, because the machine may
be shared.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

# The checkout measured: this one, or another named by VYKHUKHOL_BENCH_CHECKOUT
# (a copy with a proposed change, measured side by side with this one).
ROOT = Path(os.environ.get("VYKHUKHOL_BENCH_CHECKOUT") or Path(__file__).resolve().parents[2])
LIB = ROOT / "lib"
if str(LIB) not in sys.path:
    sys.path.insert(0, str(LIB))

TESTS = Path(__file__).resolve().parents[1]  # on the path already: the scripts import support from it

from support import servetools  # noqa: E402
from vykhukhol import cli  # noqa: E402
from vykhukhol import services as svc  # noqa: E402
from vykhukhol.datadir import DataDir  # noqa: E402
from vykhukhol.services.subscriber_line import HEADER  # noqa: E402

FORM = "application/x-www-form-urlencoded"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


# --- the machine -------------------------------------------------------------

def load() -> str:
    """The 1, 5 and 15 minute load averages, as printed beside every figure."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}/{five:.2f}/{fifteen:.2f}"


def checkout_state() -> str:
    """The commit measured, and the files of lib/ changed from it (the tree may be live)."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                                  timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return "?"
    head = git("rev-parse", "--short", "HEAD").strip()
    if not head or head == "?":
        return "not a git checkout"
    changed = [line[3:] for line in git("status", "--porcelain", "--", "lib").splitlines()]
    return head + (
        f" + uncommitted {', '.join(changed)}" if changed else " (lib/ clean)")


def banner(title: str) -> None:
    print(f"# {title}")
    print(f"# python {sys.version.split()[0]} ({sys.executable}), {os.cpu_count()} CPUs, "
          f"load {load()} at start, {time.strftime('%Y-%m-%d %H:%M:%S')}")
    print(f"# checkout {ROOT}: {checkout_state()}")


def subprocess_env(**extra: str) -> dict[str, str]:
    """tests/support/servetools.py's child environment, with the measured checkout's lib/,
    and bytecode allowed as on a host (a shell that sets PYTHONDONTWRITEBYTECODE
    would otherwise time the compiling of every module, ~60 ms a process)."""
    env = servetools.subprocess_env(lib=LIB, **extra)
    if "PYTHONDONTWRITEBYTECODE" not in extra:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_lib(lib: Path = LIB) -> None:
    """Write the bytecode of ``lib`` before anything is timed, as a host has it."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(lib)], check=True,
                   env=subprocess_env())


def python_dir() -> str:
    """The folder of the running interpreter, first on PATH for `#!/usr/bin/env python3`
    (a pyenv shim would add its own start-up to every CGI figure)."""
    return str(Path(sys.executable).parent)


# --- statistics and tables ---------------------------------------------------

def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def p90(values: Sequence[float]) -> float:
    """Nearest-rank 90th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for index, row in enumerate(cells):
        lines.append("  ".join(c.rjust(w) if index and _numeric(c) else c.ljust(w)
                               for c, w in zip(row, widths, strict=True)).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _numeric(cell: str) -> bool:
    return cell.replace(".", "", 1).replace("-", "", 1).replace("%", "").isdigit()


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def peak_rss_mb(kib: int) -> str:
    return f"{kib / 1024:.1f}"


def human(count: int) -> str:
    for size, unit in ((1_000_000, "M"), (1_000, "k")):
        if count >= size and count % size == 0:
            return f"{count // size}{unit}"
    return str(count)


def parse_sizes(text: str) -> list[int]:
    """``1k,100k,1M`` → [1000, 100000, 1000000]."""
    result = []
    for item in text.split(","):
        item = item.strip()
        factor = {"k": 1_000, "K": 1_000, "m": 1_000_000, "M": 1_000_000}.get(item[-1:], 1)
        result.append(int(float(item.rstrip("kKmM")) * factor))
    return result


# --- installations -----------------------------------------------------------

def vykhukhol(*args: str) -> str:
    """The ``vykhukhol`` command in-process (for set-up only); its standard output."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    if code != 0:
        raise RuntimeError(f"vykhukhol {' '.join(args)} → {code}: {err.getvalue()}")
    return out.getvalue()


def make_data(data_root: Path, cgi_dir: Path | None = None, **settings: object) -> DataDir:
    """An initialised data directory in working mode; ``mail__x=…`` sets ``mail.x``."""
    if cgi_dir is None:
        cgi_dir = data_root.parent / f"{data_root.name}-cgi"
        cgi_dir.mkdir(parents=True, exist_ok=True)
    vykhukhol("--data", str(data_root), "init", "--cgi-dir", str(cgi_dir),
              "--admin-email", "admin@example.org", "--password", "correct-horse-1",
              "--site-url", "https://lists.example.org")
    vykhukhol("--data", str(data_root), "mode", "working")
    for key, value in settings.items():
        vykhukhol("--data", str(data_root), "settings", "set", key.replace("__", "."), str(value))
    return DataDir(data_root)


def copy_checkout(target: Path) -> None:
    """lib/, cgi/ and admin/ as an admin uploads them (what tests/support/cgikit.py does)."""
    for folder in ("lib", "cgi", "admin"):
        shutil.copytree(ROOT / folder, target / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "vykhukhol.path",
                                                      "cron-*.py", "*.egg-info"))


def make_install(base: Path, **settings: object) -> tuple[Path, DataDir]:
    """A copied installation in ``base/install`` whose cgi/vykhukhol.path names
    ``base/data``, initialised with ``init --cgi-dir`` (the cron script renamed)."""
    root = base / "install"
    copy_checkout(root)
    data = make_data(base / "data", root / "cgi", **settings)
    (root / "cgi" / "vykhukhol.path").write_text(f"{data.root}\n", encoding="utf-8")
    return root, data


def add_service(data: DataDir, name: str, db: str = "main",
                letters: Sequence[tuple[str, str, str]] = (("Lesson 1", "0s", "Hello {{ name }}.\n"),),
                enabled: bool = True) -> svc.Service:
    if not data.db(db).exists():
        svc.add_db(data, db)
    service = svc.add_service(data, name, db, {"title": name.title()})
    for subject, delay, body in letters:
        svc.add_letter(service, subject, delay, body)
    if enabled:
        svc.edit_service(data, name, {"enabled": "yes"})
    return svc.find_service(data, name)


def stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime(TIME_FORMAT)


def write_subscribers(path: Path, count: int, kind: str, prefix: str = "user",
                      domain: str = "example.org", letters: int = 1) -> None:
    """``count`` subscriber lines written straight in the subscribers.txt format.

    kind: ``due``    — active, confirmed an hour ago, no letter yet (letter 1 due
                       when its delay is 0s);
          ``idle``   — alternately ``done`` (the whole series of ``letters``
                       received) and active with nothing sent yet (for a series
                       whose first delay is far in the future);
          ``done``   — all ``done``.
    """
    hour_ago = stamp(datetime.now(timezone.utc) - timedelta(hours=1))
    day_ago = stamp(datetime.now(timezone.utc) - timedelta(days=1))
    done = f"\t\tdone\t{day_ago}\t{day_ago}\t{letters}\t{day_ago}\t0\t-\t0\t127.0.0.1\n"
    active = f"\t\tactive\t{hour_ago}\t{hour_ago}\t0\t-\t0\t-\t0\t127.0.0.1\n"
    if kind == "due":
        tails = (active,)
    elif kind == "idle":
        tails = (done, active)
    elif kind == "done":
        tails = (done,)
    else:
        raise ValueError(kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    step = 100_000
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.write(HEADER + "\n")
        for start in range(0, count, step):
            out.write("".join(f"{prefix}{i}@{domain}{tails[i % len(tails)]}"
                              for i in range(start, min(count, start + step))))


def spread(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal whole numbers."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


# --- CGI ---------------------------------------------------------------------

def cgi_environ(root: Path, script: Path, method: str = "GET", query: str = "",
                body: bytes = b"", content_type: str = FORM) -> dict[str, str]:
    """What mod_cgi hands a script (as tests/integration/test_cgi.py builds it),
    except that bytecode may be written: a host runs the scripts over and over."""
    rel = script.relative_to(root).as_posix()
    environ = {
        "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_SOFTWARE": "bench", "SERVER_NAME": "localhost",
        "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": method,
        "SCRIPT_NAME": f"/{rel}", "SCRIPT_FILENAME": str(script), "QUERY_STRING": query,
        "REMOTE_ADDR": "127.0.0.1",
        "PATH": python_dir() + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONPATH": "", "PYTHONNOUSERSITE": "1",
    }
    if body or method == "POST":
        environ["CONTENT_TYPE"] = content_type
        environ["CONTENT_LENGTH"] = str(len(body))
    return environ


def run_cgi(root: Path, script: Path, method: str = "GET", query: str = "",
            body: bytes = b"") -> tuple[float, int, bytes]:
    """Start ``script`` as a CGI request; (wall seconds, HTTP status, body)."""
    environ = cgi_environ(root, script, method, query, body)
    began = time.perf_counter()
    done = subprocess.run([str(script)], env=environ, input=body, capture_output=True,
                          cwd=script.parent, timeout=300)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"{script.name} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    head, _, payload = done.stdout.partition(b"\r\n\r\n")
    status = 200
    for line in head.decode("latin-1").splitlines():
        if line.lower().startswith("status:"):
            status = int(line.split(":", 1)[1].split()[0])
    return took, status, payload


def interpreter_start(root: Path, script: Path, runs: int = 10) -> float:
    """Median wall time of ``python3 -c pass`` under the same CGI environment:
    the floor no CGI script can go below on this machine."""
    environ = cgi_environ(root, script)
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(["python3", "-c", "pass"], env=environ, check=True)
        times.append(time.perf_counter() - began)
    return median(times)


# --- an SMTP sink in its own process -----------------------------------------

#: The end of every sink script: its ``Sink`` (an aiosmtpd handler with an
#: ``answer(command)`` method) served on the port in argv[1]; each line on
#: stdin is a command, answered on one line of stdout, until "quit".
SINK_SERVE = r"""
sink = Sink()
controller = Controller(sink, hostname="127.0.0.1", port=int(sys.argv[1]))
controller.start()
print("ready", flush=True)
for line in sys.stdin:
    command = line.strip()
    if command == "quit":
        break
    print(sink.answer(command), flush=True)
controller.stop()
"""

SINK = r"""
import asyncio, json, sys, threading, time
from aiosmtpd.controller import Controller

class Sink:
    pipelining = len(sys.argv) > 2 and sys.argv[2] == "pipelining"

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        session.host_name = hostname
        if self.pipelining:  # RFC 2920, as Postfix and Exim offer it
            return [*responses[:-1], "250-PIPELINING", responses[-1]]
        return responses

    def __init__(self):
        self.count = 0
        self.first = None
        self.last = None
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        moment = time.time()
        with self.lock:
            self.count += 1
            if self.first is None:
                self.first = moment
            self.last = moment
        return "250 Message accepted"

    def answer(self, command):
        with self.lock:
            if command == "stats":
                return json.dumps({"count": self.count, "first": self.first, "last": self.last})
            if command == "reset":
                self.count, self.first, self.last = 0, None, None
                return "ok"
        return "unknown command"
""" + SINK_SERVE


def free_port() -> int:
    """A port nobody listens on right now (Controller cannot take port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SmtpSink:
    """aiosmtpd accepting everything, in a separate process; counts the letters
    and notes when the first and the last DATA were answered (``script``:
    another sink, ending in :data:`SINK_SERVE`)."""

    def __init__(self, pipelining: bool = False, script: str = SINK) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-c", script, str(self.port)] + (["pipelining"] if pipelining else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, env=subprocess_env())
        ready = self.process.stdout.readline().strip()
        if ready != "ready":
            self.stop()
            raise RuntimeError(f"the SMTP sink did not start: {ready!r}")

    def _ask(self, command: str) -> str:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def stats(self) -> dict:
        return json.loads(self._ask("stats"))

    def reset(self) -> None:
        self._ask("reset")

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                self.process.stdin.write("quit\n")
                self.process.stdin.flush()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> SmtpSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
