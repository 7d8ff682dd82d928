"""A run's cost follows the letters due, not the file size (docs/design/run.md#due-index).

One service of N subscribers, every one of them due for the first letter
(the worst case for choosing: all N lines are candidates); each run is a
whole ``vykhukhol cron`` process (outbox transport, bytecode present) that
sends ``serial_per_run`` (50) letters with ``time_limit`` 30 s. Printed per
size: the runs that read the file into its due index (a new or edited file),
then the steady runs that trust the index (median wall time, peak RSS), the
ratio of the largest size to the smallest, and ``python3 -c pass`` measured
in the same bench run. The load average is printed beside every row.

    python tests/bench/bench_index.py [--sizes 10k,1M,2M] [--runs 3] [--tmp /tmp]

The 2M file is about 200 MB; it is written in --tmp and deleted afterwards.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from support import benchkit as kit  # noqa: E402

LETTERS = 50
TIME_LIMIT = 30


def cron(data: Path) -> tuple[float, float, str]:
    """One ``vykhukhol cron`` process: (wall seconds, peak RSS MB, its report)."""
    began = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "vykhukhol", "--data", str(data), "cron"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             env=kit.subprocess_env())
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    took = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    return took, usage.ru_maxrss / 1024, out.decode(errors="replace")


def python_pass(runs: int = 10) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=kit.subprocess_env(), check=True)
        times.append(time.perf_counter() - began)
    return kit.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10k,1M,2M")
    parser.add_argument("--runs", type=int, default=3, help="steady runs per size")
    parser.add_argument("--tmp", default=None, help="folder for the scratch data")
    args = parser.parse_args()
    sizes = kit.parse_sizes(args.sizes)
    kit.banner(f"bench_index: {args.sizes} subscribers, {LETTERS} letters a run, "
               f"time_limit {TIME_LIMIT}s")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(kit.LIB)], check=True)
    start_up = python_pass()
    print(f"python3 -c pass: {kit.ms(start_up)} ms (median of 10), load {kit.load()}")
    rows, steady = [], {}
    for count in sizes:
        base = Path(tempfile.mkdtemp(prefix="vyk-bench-index-", dir=args.tmp))
        try:
            data = kit.make_data(base / "data", serial_per_run=LETTERS,
                                 time_limit=f"{TIME_LIMIT}s")
            service = kit.add_service(data, "big", letters=[("Lesson", "0s", "Hello {{ name }}\n")])
            kit.write_subscribers(service.subscribers_path, count, "due")
            size = service.subscribers_path.stat().st_size / 1e6
            label = f"{kit.human(count)} ({size:.0f} MB)"
            for number in range(1, 20):  # the runs that read the file into its index
                took, rss, report = cron(data.root)
                sent = _sent(report)
                rows.append((label, f"indexing {number}", f"{took:.2f}", f"{rss:.0f}", sent,
                             kit.load()))
                if sent:
                    break
            times, peaks = [], []
            for number in range(1, args.runs + 1):
                took, rss, report = cron(data.root)
                sent = _sent(report)
                if sent != LETTERS:
                    raise RuntimeError(f"the run sent {sent} letters, not {LETTERS}:\n{report}")
                times.append(took)
                peaks.append(rss)
                rows.append((label, f"steady {number}", f"{took:.2f}", f"{rss:.0f}", sent,
                             kit.load()))
            steady[count] = (kit.median(times), max(peaks))
        finally:
            shutil.rmtree(base, ignore_errors=True)
    print(kit.table(["subscribers", "run", "wall s", "peak RSS MB", "letters", "load 1/5/15"],
                    rows))
    for count, (took, rss) in steady.items():
        print(f"{kit.human(count)}: steady run {took:.2f} s (median of {args.runs}), "
              f"{took - start_up:.2f} s above python3 -c pass, peak RSS {rss:.0f} MB")
    small = min(steady, default=None)
    for count in sorted(steady)[1:]:
        print(f"ratio {kit.human(count)} / {kit.human(small)}: "
              f"{steady[count][0] / steady[small][0]:.2f} (goal for 1M / 10k: <= 10)")
    print(f"load at the end: {kit.load()}")


def _sent(report: str) -> int:
    for line in report.splitlines():
        if line.startswith("handed over ") and line.endswith(" for big"):
            return int(line.split()[2])
    return 0


if __name__ == "__main__":
    main()
