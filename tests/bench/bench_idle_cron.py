"""Wall time of one idle cron run, as the web server starts it.

An installed copy (lib/, cgi/, admin/ copied to a scratch folder, `vykhukhol
init --cgi-dir` renaming cgi/cron.py to cgi/cron-<random>.py) with 10 enabled
services in one DB, totalling each of ``--sizes`` subscribers, all of them
either ``done`` or waiting for a letter due in ten years. One cron run first
(it may compute the per-service next-due summaries, and it writes the
bytecode caches), then ``--runs`` timed runs of the renamed cron script as a
CGI process (a GET with a CGI environment, as mod_cgi starts it).

Beside each size: the start-up of a bare ``python3 -c pass`` under the same
environment (the floor on this machine), and how many services had a
next-due summary after the first run.

    python tests/bench/bench_idle_cron.py [--sizes 1k,100k,1M] [--runs 20]

Goals: median ≤ 60 ms; 1M ≤ 1.2 × 1k.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import benchkit as kit

SERVICES = 10
FAR = "3650d"  # letter 1's delay: nothing is due for ten years


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
    medians = {}
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
            first, status, body = kit.run_cgi(root, script)
            if status != 200 or b"\nsent " in body:
                raise RuntimeError(f"the first run was not idle: {status} {body.decode()}")
            summaries = sum(1 for s in services if (data.state / f"due-{s.name}").exists())
            floor = kit.interpreter_start(root, script)
            times, outcomes = [], set()
            for _ in range(args.runs):
                took, status, body = kit.run_cgi(root, script)
                if status != 200 or b"\nsent " in body:
                    raise RuntimeError(f"a run was not idle: {status} {body.decode()}")
                times.append(took)
                outcomes.add(body.decode().strip().rsplit(": ", 1)[-1])
            medians[size] = kit.median(times)
            rows.append((kit.human(size), kit.ms(first), f"{summaries}/{SERVICES}",
                         kit.ms(kit.median(times)), kit.ms(kit.p90(times)), kit.ms(min(times)),
                         kit.ms(floor), kit.ms(kit.median(times) - floor),
                         ",".join(sorted(outcomes)), kit.load()))
            print(f"# {kit.human(size)} done, load {kit.load()}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    print()
    print(kit.table(["subscribers", "first run ms", "summaries", "median ms", "p90 ms", "min ms",
                     "python3 -c pass ms", "median - floor ms", "runs ended", "load 1/5/15"],
                    rows))
    print()
    worst = max(medians.values())
    print(f"goal median <= 60 ms: {'met' if worst <= 0.060 else 'MISSED'} "
          f"(worst median {kit.ms(worst)} ms)")
    if len(sizes) > 1:
        small, large = medians[min(sizes)], medians[max(sizes)]
        verdict = "met" if large <= 1.2 * small else "MISSED"
        print(f"goal {kit.human(max(sizes))} <= 1.2 x {kit.human(min(sizes))}: {verdict} "
              f"({large / small:.2f}x)")
    print(f"load at end {kit.load()}")


if __name__ == "__main__":
    main()
