"""What the suppression check costs a subscribe POST
(docs/deliverability/suppression.md#suppression-list).

Two installed copies alike (lib/, cgi/, admin/ copied and initialised;
outbox transport; one service of ``--subscribers`` subscribers) but for
data/suppressed.txt: empty in one, ``--suppressed`` entries in the other.
POSTs to cgi/subscribe.py (a CGI process each, the form on stdin) are timed
in turns so all see the same load: a new address on the empty list, a new
address on the long one (the check searches the file and finds nothing),
a suppressed address on the long one (nothing stored, no letter), and
``python3 -c pass`` as the floor. Times run to the complete answer (what the
visitor waits for), as bench_subscribe.py measures them.

Every POST must answer 200; each new address must be stored and mailed, no
suppressed one. Beside the processes, one in-process
``suppression.is_suppressed`` on the long list, timed alone.

    python tests/bench/bench_suppression.py [--suppressed 100k] [--posts 20]

Beside each answer time, the process's CPU time (user + system, from
``os.wait4``): on a shared machine the wall times swing by a hundred ms
from one POST to the next, the CPU times far less.

Goal: the long list costs a new address's POST ≤ 5 ms of CPU (medians against
the empty list's), and a suppressed address's costs no more than a new one's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from bench_subscribe import bare_start, count_lines  # noqa: E402

from support import benchkit as kit  # noqa: E402
from vykhukhol import settings as settings_mod  # noqa: E402 - benchkit put lib/ on the path
from vykhukhol.members import suppression  # noqa: E402
from vykhukhol.timeutil import now  # noqa: E402

GOAL = 0.005  # seconds the long list may add to a new address's answer (median)


def post_timed(root: Path, script: Path, body: bytes) -> tuple[float, float, int]:
    """One POST as a CGI process: (seconds to the complete answer, the
    process's CPU seconds, user and system, from os.wait4, HTTP status). CPU
    time is what a busy shared machine disturbs least."""
    environ = kit.cgi_environ(root, script, "POST", body=body)
    began = time.perf_counter()
    child = subprocess.Popen([str(script)], env=environ, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=script.parent)
    child.stdin.write(body)
    child.stdin.close()
    received, answered, status = b"", None, 0
    while answered is None:
        chunk = os.read(child.stdout.fileno(), 65536)
        if not chunk:
            break
        received += chunk
        head, sep, payload = received.partition(b"\r\n\r\n")
        if sep:
            fields = dict(line.split(":", 1) for line in head.decode("latin-1").splitlines()
                          if ":" in line)
            fields = {k.strip().lower(): v.strip() for k, v in fields.items()}
            length = int(fields.get("content-length", "-1"))
            status = int(fields.get("status", "200").split()[0])
            if 0 <= length <= len(payload):
                answered = time.perf_counter() - began
    child.stdout.read()
    _, _, usage = os.wait4(child.pid, 0)
    child.returncode = 0  # reaped here: Popen must not wait for it again
    ended = time.perf_counter() - began
    return (ended if answered is None else answered), usage.ru_utime + usage.ru_stime, status


def install(base: Path, subscribers: int):
    root, data = kit.make_install(base)
    settings_mod.update(data.settings, {"subscribe_hourly_limit": "1000000", "subscribe_alarm": "0"})  # one client posts all
    service = kit.add_service(data, "news", letters=[("Lesson 1", "1d", "Hello.\n")])
    kit.write_subscribers(service.subscribers_path, subscribers, "idle")
    return root, data, service


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suppressed", default="100k", help="entries of the long list")
    parser.add_argument("--subscribers", default="1k", help="subscribers of the service")
    parser.add_argument("--posts", type=int, default=20, help="timed POSTs of each kind")
    parser.add_argument("--tmp", default=None, help="folder for the scratch data")
    args = parser.parse_args()
    [count] = kit.parse_sizes(args.suppressed)
    [subscribers] = kit.parse_sizes(args.subscribers)

    kit.banner(f"bench_suppression: {args.suppressed} suppressed, {args.subscribers} "
               f"subscribers, {args.posts} POSTs of each kind")
    base = Path(tempfile.mkdtemp(prefix="vyk-bench-suppr-", dir=args.tmp))
    try:
        plain_root, plain_data, plain_service = install(base / "empty", subscribers)
        long_root, long_data, long_service = install(base / "long", subscribers)
        secret = suppression.secret_of(settings_mod.load(long_data.settings))
        began = time.perf_counter()
        suppression.add_many(long_data, secret, (f"gone.{i}@example.net" for i in range(count)),
                             suppression.Why.COMPLAINT, "bench", now())
        written = time.perf_counter() - began
        size = suppression.path(long_data).stat().st_size
        print(f"# the long list: {count} entries, {size / 1e6:.1f} MB, written in {written:.1f} s",
              flush=True)

        cpu: dict[str, list[float]] = {"empty": [], "long": [], "suppressed": []}

        def post(root: Path, address: str, kind: str = "") -> float:
            body = urlencode({"service": "news", "email": address, "name": "Читатель"}).encode()
            answer, used, status = post_timed(root, root / "cgi" / "subscribe.py", body)
            if status != 200:
                raise RuntimeError(f"POST {address}: status {status}")
            if kind:
                cpu[kind].append(used)
            return answer

        # warm-ups: the bytecode caches of both copies
        post(plain_root, "warm.up@example.org")
        post(long_root, "warm.up@example.org")
        before = {d.root: count_lines(s.subscribers_path)
                  for d, s in ((plain_data, plain_service), (long_data, long_service))}
        times: dict[str, list[float]] = {"empty": [], "long": [], "suppressed": [], "floor": []}
        for n in range(args.posts):
            times["floor"].append(bare_start(long_root, long_root / "cgi" / "subscribe.py"))
            times["empty"].append(post(plain_root, f"reader.{n}@example.org", "empty"))
            times["long"].append(post(long_root, f"reader.{n}@example.org", "long"))
            times["suppressed"].append(post(long_root, f"gone.{n * 997 % count}@example.net",
                                            "suppressed"))
        for data, service in ((plain_data, plain_service), (long_data, long_service)):
            added = count_lines(service.subscribers_path) - before[data.root]
            letters = len(list(data.outbox.glob("*.eml")))
            if added != args.posts or letters != args.posts + 1:
                raise RuntimeError(f"{data.root}: {added} lines added, {letters} letters; "
                                   f"{args.posts} and {args.posts + 1} expected")

        lookups = []
        for n in range(50):
            began = time.perf_counter()
            suppression.is_suppressed(long_data, secret, f"nobody.{n}@example.org")
            lookups.append(time.perf_counter() - began)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    floor = kit.median(times["floor"])
    rows = [(label, kit.ms(kit.median(times[key])), kit.ms(kit.p90(times[key])),
             kit.ms(kit.median(times[key]) - floor),
             kit.ms(kit.median(cpu[key])) if key in cpu else "-", kit.load())
            for key, label in (("empty", "new address, empty list"),
                               ("long", f"new address, {kit.human(count)} suppressed"),
                               ("suppressed", f"suppressed address, {kit.human(count)}"),
                               ("floor", "python3 -c pass"))]
    print()
    print(kit.table(["POST", "answer median ms", "answer p90 ms", "above floor ms",
                     "CPU median ms", "load 1/5/15"], rows))
    print()
    cost = kit.median(cpu["long"]) - kit.median(cpu["empty"])
    wall = kit.median(times["long"]) - kit.median(times["empty"])
    print(f"is_suppressed alone on {kit.human(count)} entries: median "
          f"{kit.ms(kit.median(lookups))} ms, p90 {kit.ms(kit.p90(lookups))} ms (in process)")
    print(f"the long list's cost to a new address's POST: {kit.ms(cost)} ms of CPU "
          f"({kit.ms(wall)} ms of answer time); goal <= {kit.ms(GOAL)} ms of CPU: "
          f"{'met' if cost <= GOAL else 'MISSED'}")
    slower = kit.median(cpu["suppressed"]) - kit.median(cpu["long"])
    print(f"a suppressed address's POST against a new one's: {kit.ms(slower)} ms of CPU "
          f"({'no more' if slower <= 0.001 else 'MORE'})")
    print(f"load at end {kit.load()}")


if __name__ == "__main__":
    main()
