"""Wall time of one idle cron run, as the web server starts it.

An installed copy (lib/, cgi/, admin/ copied to a scratch folder, `vykhukhol
init --cgi-dir` renaming cgi/cron.py to cgi/cron-<random>.py) with 10 enabled
services in one DB, totalling each of ``--sizes`` subscribers, all of them
either ``done`` or waiting for a letter due in ten years. One cron run first
(it may compute the per-service next-due summaries, and it writes the
bytecode caches), then ``--runs`` timed runs of the renamed cron script as a
CGI process (a GET with a CGI environment, as mod_cgi starts it).

Beside each size: the start-up of a bare ``python3 -c pass`` under the same
environment (the floor on this machine), timed in turns with our runs so both
see the same load, the difference of the two medians, how many services had a
next-due summary after the first run, and how many timed runs were answered by
the idle proof (lib/vykhukhol/sender/idle.py) rather than a full run.

    python tests/bench/bench_idle_cron.py [--sizes 1k,100k,1M] [--runs 20]

Goals (docs/performance.md#performance-table): median ≤ 40 ms above ``python3 -c pass``; 1M ≤ 1.2 × 1k.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from support import benchkit as kit  # noqa: E402

SERVICES = 10
FAR = "3650d"  # letter 1's delay: nothing is due for ten years
GOAL = 0.040   # seconds above python3 -c pass
SETTLE = 2.5   # seconds: idle.RACY, so the first run may write its proof


def children_cpu() -> float:
    """User + system seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bare_start(root, script) -> tuple[float, float]:
    """One ``python3 -c pass`` under the CGI environment: (wall, CPU) seconds."""
    environ = kit.cgi_environ(root, script)
    cpu = children_cpu()
    began = time.perf_counter()
    subprocess.run(["python3", "-c", "pass"], env=environ, check=True)
    return time.perf_counter() - began, children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1k,100k,1M", help="total subscribers, comma-separated")
    parser.add_argument("--runs", type=int, default=20, help="timed idle runs per size")
    parser.add_argument("--tmp", default=None, help="folder for the scratch data")
    args = parser.parse_args()
    sizes = kit.parse_sizes(args.sizes)

    kit.banner(f"bench_idle_cron: {SERVICES} services, sizes {args.sizes}, {args.runs} runs each")
    base = Path(tempfile.mkdtemp(prefix="vyk-bench-idle-", dir=args.tmp))
    rows = []
    medians, above, cpu_medians, floor_medians = {}, {}, {}, {}
    try:
        root, data = kit.make_install(base)
        services = [kit.add_service(data, f"list{i}", letters=[("Lesson 1", FAR, "Hello.\n")])
                    for i in range(SERVICES)]
        script = sorted((root / "cgi").glob("cron-*.py"))[0]
        for size in sizes:
            for service, count in zip(services, kit.spread(size, SERVICES), strict=True):
                kit.write_subscribers(service.subscribers_path, count, "idle",
                                      prefix=f"{service.name}-user")
            for path in data.state.glob("due-*"):
                path.unlink()
            time.sleep(SETTLE)  # files written a moment ago are too fresh to prove anything on
            first, status, body = kit.run_cgi(root, script)
            if status != 200 or b"\nsent " in body:
                raise RuntimeError(f"the first run was not idle: {status} {body.decode()}")
            summaries = sum(1 for s in services if (data.state / f"due-{s.name}").exists())
            times, floors, cpus, floor_cpus, outcomes, quick = [], [], [], [], set(), 0
            for _ in range(args.runs):
                wall, cpu = bare_start(root, script)
                floors.append(wall)
                floor_cpus.append(cpu)
                cpu = children_cpu()
                took, status, body = kit.run_cgi(root, script)
                cpus.append(children_cpu() - cpu)
                if status != 200 or b"\nsent " in body:
                    raise RuntimeError(f"a run was not idle: {status} {body.decode()}")
                times.append(took)
                quick += b"\nnothing due before " in body
                outcomes.add(body.decode().strip().rsplit(": ", 1)[-1])
            floor = kit.median(floors)
            medians[size] = kit.median(times)
            above[size] = medians[size] - floor
            cpu_medians[size], floor_medians[size] = kit.median(cpus), floor
            rows.append((kit.human(size), kit.ms(first), f"{summaries}/{SERVICES}",
                         f"{quick}/{args.runs}", kit.ms(kit.median(times)), kit.ms(kit.p90(times)),
                         kit.ms(min(times)), kit.ms(floor), kit.ms(above[size]),
                         f"{kit.ms(kit.median(cpus))} / {kit.ms(kit.median(floor_cpus))}",
                         ",".join(sorted(outcomes)), kit.load()))
            print(f"# {kit.human(size)} done, load {kit.load()}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    print()
    print(kit.table(["subscribers", "first run ms", "summaries", "idle proof", "median ms",
                     "p90 ms", "min ms", "python3 -c pass ms", "median - floor ms",
                     "CPU ms ours / floor", "runs ended", "load 1/5/15"], rows))
    print()
    worst = max(above.values())
    print(f"goal median <= {kit.ms(GOAL)} ms above python3 -c pass: "
          f"{'met' if worst <= GOAL else 'MISSED'} (worst {kit.ms(worst)} ms above)")
    if len(sizes) > 1:
        small, large = medians[min(sizes)], medians[max(sizes)]
        verdict = "met" if large <= 1.2 * small else "MISSED"
        print(f"goal {kit.human(max(sizes))} <= 1.2 x {kit.human(min(sizes))}: {verdict} "
              f"({large / small:.2f}x)")
        big, little = max(sizes), min(sizes)
        # The load moves the floor itself between sizes; these ratios leave it out.
        print(f"  same ratio of: the floor {floor_medians[big] / floor_medians[little]:.2f}x, "
              f"median - floor {above[big] / max(above[little], 1e-9):.2f}x, "
              f"CPU {cpu_medians[big] / cpu_medians[little]:.2f}x")
    print(f"load at end {kit.load()}")


if __name__ == "__main__":
    main()
