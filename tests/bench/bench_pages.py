"""Whole CGI processes of the public pages and the idle cron tick, against the floor.

Two installed copies (lib/, cgi/, admin/ copied to a scratch folder and
initialised, bytecode compiled first with compileall, as a host runs them):
one whose service ``news`` has ``--sizes`` subscribers, for the pages, and one
whose service has as many with nothing due for ten years, for the idle tick.
Per size, ``--runs`` rounds; each round times, in turns, ``python3 -c pass``
(the floor: the venv's interpreter that runs the scripts, under the same CGI
environment) and every case once:

- ``GET subscribe``: the form (cgi/subscribe.py?service=news);
- ``POST subscribe``: a new address (form on stdin, outbox transport); the
  answer is counted until its Content-Length bytes have come, as the visitor
  waits (the lookup, the new line and the confirmation letter come after it);
- ``POST subscribe, whole``: another new address, from the process's start
  to its exit, its line stored and its confirmation letter written;
- ``GET confirm`` and ``GET unsubscribe``: a valid signed link's button page;
- ``GET manage``: the subscriber's own page (cgi/manage.py) of a signed link;
- ``GET go``: a newsletter's counted link (cgi/go.py): its 302, the click
  appended after the answer;
- ``idle tick``: the renamed cron script when nothing is due.

Wall and CPU time (user + system of the child) of each; the medians less the
floor's are what the goals are about (docs/design/startup.md#startup). On a loaded machine the least
wall time of the rounds, less the floor's least, is shown beside them: the
nearest to what the case costs when nobody else is running. After the rounds,
each case runs five times more under ``-X importtime``: the imports made
before its answer was flushed (and a POST's whole process apart), largest
first, each module's least own time.

    python tests/bench/bench_pages.py [--sizes 1k,100k] [--runs 20]

Run it with the venv's python (``.venv/bin/python``): its folder goes first on
PATH, so the scripts' ``#!/usr/bin/env python3`` and the floor are that one.
Goals above the floor: GET subscribe ≤ 40 ms, POST subscribe at 100k ≤ 90 ms
to its answer, idle tick ≤ 25 ms (confirm, unsubscribe, manage and go: as GET
subscribe); on a quiet machine a whole POST at 100k ≤ 60 ms.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from bench_subscribe import post_timed  # noqa: E402

from support import benchkit as kit  # noqa: E402
from vykhukhol import settings as settings_mod  # noqa: E402 - benchkit put lib/ on the path
from vykhukhol import tokens  # noqa: E402
from vykhukhol.newsletters import clicks  # noqa: E402

FAR = "3650d"
SETTLE = 2.5  # seconds: files written a moment ago are too fresh for the idle proof
GOALS = {"GET subscribe": 0.040, "POST subscribe": 0.090, "POST subscribe, whole": 0.060,
         "GET confirm": 0.040,
         "GET unsubscribe": 0.040, "GET manage": 0.040, "GET go": 0.040, "idle tick": 0.025}
CLICKED = "20261201-090000-abcdef"  # the newsletter whose counted link GET go follows
KNOWN = "user1@example.org"  # a subscriber of write_subscribers' files


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_get(root: Path, script: Path, query: str = "", expect: int = 200
              ) -> tuple[float, float, bytes]:
    """(wall, CPU, body) of one GET; fails unless it answers ``expect``."""
    cpu = children_cpu()
    took, status, body = kit.run_cgi(root, script, "GET", query)
    if status != expect:
        raise RuntimeError(f"GET {script.name}?{query}: {status} {body[:300]!r}")
    return took, children_cpu() - cpu, body


def floor_run(root: Path, script: Path) -> tuple[float, float]:
    environ = kit.cgi_environ(root, script)
    cpu = children_cpu()
    began = time.perf_counter()
    subprocess.run(["python3", "-c", "pass"], env=environ, check=True)
    return time.perf_counter() - began, children_cpu() - cpu


def floor_imports(root: Path, script: Path) -> list[str]:
    """What ``python3 -X importtime -c pass`` imports after ``site``: must be nothing."""
    done = subprocess.run(["python3", "-X", "importtime", "-c", "pass"], capture_output=True,
                          text=True, env=kit.cgi_environ(root, script), check=True)
    names = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line]
    return names[names.index("site") + 1:] if "site" in names else names


# The script run as itself, but saying "ANSWERED" on stderr once its answer is
# flushed (as tests/unit/test_import_budget.py does): -X importtime writes there
# too, in order, so what is above that line is what the visitor waited for.
MARKED = """
import sys  # noqa: E402
import vykhukhol.web.cgi as gateway  # noqa: E402
served = gateway.serve
def serve(app):
    served(app)
    print("ANSWERED", file=sys.stderr, flush=True)
gateway.serve = serve
watched = getattr(gateway, "_watch_after", None)  # the subscribe form's fast path: no serve
def watch_after(root):
    print("ANSWERED", file=sys.stderr, flush=True)
    watched(root)
if watched is not None:
    gateway._watch_after = watch_after
script = sys.argv[1]
with open(script, encoding="utf-8") as source:
    code = compile(source.read(), script, "exec")
exec(code, {"__name__": "__main__", "__file__": script})
"""
# The script run as itself, but with its error stream kept open after the
# answer (the web server's pipes are otherwise closed then, and -X importtime
# writes to that stream): the whole process, the work after the answer too.
WHOLE = """
import os, sys
import vykhukhol.web.cgi as gateway
def end_answer():
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(quiet, fd)
    os.close(quiet)
gateway._end_answer = end_answer
script = sys.argv[1]
with open(script, encoding="utf-8") as source:
    code = compile(source.read(), script, "exec")
exec(code, {"__name__": "__main__", "__file__": script})
"""


def import_profile(root: Path, script: Path, method: str = "GET", query: str | None = "",
                   body: bytes | None = b"", top: int = 6, tries: int = 5,
                   until_answer: bool = False, whole: bool = False, fresh=None) -> str:
    """The imports of a case under -X importtime: their total and the largest by
    own time, each module's least of ``tries`` runs (the probe's and the
    machine's noise only ever add). ``until_answer``: only those imported
    before the answer was flushed; ``whole``: those of the work after the
    answer too. ``fresh()``, when given, makes each run's (query, body), so
    that each POST is a new address."""
    least: dict[str, int] = {}
    for _ in range(tries):
        if fresh is not None:
            query, body = fresh()
        environ = kit.cgi_environ(root, script, method, query, body)
        command = [str(script)]
        if until_answer or whole:
            environ["PYTHONPATH"] = str(root / "lib")
            command = ["python3", "-c", MARKED if until_answer else WHOLE, str(script)]
        environ["PYTHONPROFILEIMPORTTIME"] = "1"
        done = subprocess.run(command, env=environ, input=body, capture_output=True,
                              cwd=script.parent, timeout=300)
        lines = done.stderr.decode().splitlines()
        if until_answer:
            if "ANSWERED" not in lines:
                raise RuntimeError(f"{script.name}: no answer: {lines[-5:]}")
            lines = lines[:lines.index("ANSWERED")]
        rows = []
        for line in lines:
            if line.startswith("import time:") and "self [us]" not in line:
                own, _total, name = (part.strip() for part in line[len("import time:"):].split("|"))
                rows.append((int(own), name))
        names = [name for _, name in rows]
        for own, name in rows[names.index("site") + 1:] if "site" in names else rows:
            least[name] = min(least.get(name, own), own)
    whole = sum(least.values()) / 1000
    largest = sorted(least.items(), key=lambda item: -item[1])[:top]
    return (f"{len(least)} modules, {whole:.1f} ms; largest own: "
            + ", ".join(f"{name} {own / 1000:.1f}" for name, own in largest))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1k,100k", help="subscribers of the service")
    parser.add_argument("--runs", type=int, default=20, help="rounds per size")
    parser.add_argument("--tmp", default=None, help="folder for the scratch data")
    args = parser.parse_args()
    sizes = kit.parse_sizes(args.sizes)

    kit.banner(f"bench_pages: sizes {args.sizes}, {args.runs} rounds each")
    base = Path(tempfile.mkdtemp(prefix="vyk-bench-pages-", dir=args.tmp))
    rows, profiles, verdicts = [], [], []
    try:
        root, data = kit.make_install(base / "pages")
        settings_mod.update(data.settings, {"subscribe_hourly_limit": "1000000", "subscribe_alarm": "0"})
        service = kit.add_service(data, "news", letters=[("Lesson 1", "1d", "Hello.\n")])
        secret = settings_mod.load(data.settings).secret
        idle_root, idle_data = kit.make_install(base / "idle")
        idle_service = kit.add_service(idle_data, "quiet", letters=[("Lesson 1", FAR, "Hello.\n")])
        for folder in (root, idle_root):
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder / "lib")], check=True)
        cgi = root / "cgi"
        cron = sorted((idle_root / "cgi").glob("cron-*.py"))[0]
        beyond = floor_imports(root, cgi / "subscribe.py")
        print(f"python3 -X importtime -c pass imports after site: {beyond or 'nothing'}")
        links = {purpose: urlencode({"s": "news", "e": KNOWN,
                                     "t": tokens.make(secret, "news", KNOWN, purpose)})
                 for purpose in ("confirm", "unsubscribe")}
        links["manage"] = urlencode({"e": KNOWN, "t": tokens.make_for_address(secret, KNOWN, "manage")})
        clicks.prepare(data, "https://lists.example.org", secret, CLICKED,
                       "Read https://example.org/spring and https://example.org/summer", None)
        links["go"] = urlencode({"l": CLICKED, "n": 2, "t": tokens.click_token(secret, CLICKED, 2)})

        for size in sizes:
            kit.write_subscribers(service.subscribers_path, size, "idle")
            kit.write_subscribers(idle_service.subscribers_path, size, "idle")
            for path in [*data.state.glob("due-*"), *idle_data.state.glob("due-*")]:
                path.unlink()
            time.sleep(SETTLE)
            kit.run_cgi(idle_root, cron)  # the full run that leaves the idle proof
            time.sleep(SETTLE)
            counter = iter(range(10**9))

            def post(size: int = size, counter=counter, whole: bool = False) -> tuple[float, float]:
                body = urlencode({"service": "news", "email": f"r{size}.{next(counter)}@example.net",
                                  "name": "Новый Читатель"}).encode()
                cpu = children_cpu()
                answer, ended, status = post_timed(root, cgi / "subscribe.py", body)
                if status != 200:
                    raise RuntimeError(f"POST subscribe: {status}")
                return ended if whole else answer, children_cpu() - cpu

            def idle() -> tuple[float, float]:
                took, cpu, body = timed_get(idle_root, cron)
                if b"nothing due before" not in body:
                    raise RuntimeError(f"the tick was not answered by the idle proof: {body!r}")
                return took, cpu

            cases = {
                "GET subscribe": lambda: timed_get(root, cgi / "subscribe.py", "service=news")[:2],
                "POST subscribe": post,
                "POST subscribe, whole": lambda: post(whole=True),
                "GET confirm": lambda: timed_get(root, cgi / "confirm.py", links["confirm"])[:2],
                "GET unsubscribe": lambda: timed_get(root, cgi / "unsubscribe.py",
                                                     links["unsubscribe"])[:2],
                "GET manage": lambda: timed_get(root, cgi / "manage.py", links["manage"])[:2],
                "GET go": lambda: timed_get(root, cgi / "go.py", links["go"], 302)[:2],
                "idle tick": idle,
            }
            for case in cases.values():  # warm-up: caches of the OS and of the catalogs
                case()
            walls = {name: [] for name in ["floor", *cases]}
            cpus = {name: [] for name in walls}
            for _ in range(args.runs):
                for name, case in [("floor", lambda: floor_run(root, cgi / "subscribe.py")),
                                   *cases.items()]:
                    wall, cpu = case()
                    walls[name].append(wall)
                    cpus[name].append(cpu)
            floor, floor_cpu = kit.median(walls["floor"]), kit.median(cpus["floor"])
            floor_least = min(walls["floor"])
            rows.append((kit.human(size), "python3 -c pass", kit.ms(floor), kit.ms(kit.p90(walls["floor"])),
                         "-", kit.ms(floor_least), "-", kit.ms(floor_cpu), "-", "-", kit.load()))
            for name in cases:
                above = kit.median(walls[name]) - floor
                goal = GOALS[name]
                met = "met" if above <= goal else "MISSED"
                if name.startswith("POST subscribe") and size != 100_000:
                    met = "(at 100k)"
                rows.append((kit.human(size), name, kit.ms(kit.median(walls[name])),
                             kit.ms(kit.p90(walls[name])), kit.ms(above), kit.ms(min(walls[name])),
                             kit.ms(min(walls[name]) - floor_least),
                             kit.ms(kit.median(cpus[name])), kit.ms(kit.median(cpus[name]) - floor_cpu),
                             f"{kit.ms(goal)} {met}", kit.load()))
                verdicts.append(met)
            print(f"# {kit.human(size)} done, load {kit.load()}", flush=True)
            if size == max(sizes):
                profiled = iter(range(10**9))

                def fresh(profiled=profiled) -> tuple[str, bytes]:
                    return "", urlencode({"service": "news",
                                          "email": f"profile{next(profiled)}@example.net"}).encode()

                for name, (script, method, query, until) in {
                    "GET subscribe": (cgi / "subscribe.py", "GET", "service=news", True),
                    "POST subscribe, until the answer": (cgi / "subscribe.py", "POST", None, True),
                    "POST subscribe, whole process": (cgi / "subscribe.py", "POST", None, False),
                    "GET confirm": (cgi / "confirm.py", "GET", links["confirm"], True),
                    "GET unsubscribe": (cgi / "unsubscribe.py", "GET", links["unsubscribe"], True),
                    "GET go": (cgi / "go.py", "GET", links["go"], True),
                    "idle tick": (cron, "GET", "", False),  # answered by idle.py, not serve
                }.items():
                    where = idle_root if script == cron else root
                    profiles.append(f"{name}: " + import_profile(
                        where, script, method, query, b"", until_answer=until,
                        whole=not until and script != cron,
                        fresh=fresh if method == "POST" else None))
    finally:
        shutil.rmtree(base, ignore_errors=True)

    print()
    print(kit.table(["subscribers", "what", "wall median ms", "wall p90 ms", "median - floor ms",
                     "wall least ms", "least - floor ms", "CPU median ms", "CPU - floor ms", "goal above floor", "load 1/5/15"], rows))
    print()
    print(f"imports under -X importtime at {kit.human(max(sizes))} (own time, least of 5 runs, ms; "
          "the probe inflates them):")
    for line in profiles:
        print(f"  {line}")
    print()
    missed = verdicts.count("MISSED")
    print(f"goals: {'all met' if not missed else f'{missed} MISSED'}; load at end {kit.load()}")


if __name__ == "__main__":
    main()
