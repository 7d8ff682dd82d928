"""One sender run on a big service: with its due index vs reading the whole file.

One service of ``--subscribers`` subscribers, all due for their first
letter; each run sends ``serial_per_run`` (50) letters to the outbox and
splices them into the file. The same run is timed twice from the same file:
with the due index a previous run left (only the taken lines are read), and
with the index deleted, so the run reads every line into a new one (what a
run does after an edit by hand). In process, so start-up is left out.

    python tests/bench/bench_fold.py [--subscribers 300k] [--rounds 2]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from support import benchkit as kit  # noqa: E402
from vykhukhol import sender  # noqa: E402
from vykhukhol import settings as settings_mod  # noqa: E402


def run_once(data, parse_all: bool) -> float:
    if parse_all:
        shutil.rmtree(data.state / "index", ignore_errors=True)
    began = time.perf_counter()
    report = sender.run(data, settings_mod.load(data.settings))
    took = time.perf_counter() - began
    if "handed over 50 for big" not in report.text():
        raise RuntimeError(f"the run did not send 50 letters:\n{report.text()}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", default="300k")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tmp", default=None, help="folder for the scratch data")
    args = parser.parse_args()
    [count] = kit.parse_sizes(args.subscribers)
    kit.banner(f"bench_fold: {kit.human(count)} subscribers, {args.rounds} rounds")
    base = Path(tempfile.mkdtemp(prefix="vyk-bench-fold-", dir=args.tmp))
    rows = []
    try:
        data = kit.make_data(base / "data", serial_per_run=50, time_limit="600s")
        service = kit.add_service(data, "big", letters=[("Lesson", "0s", "Hello {{ name }}\n")])
        kit.write_subscribers(service.subscribers_path, count, "due")
        size = service.subscribers_path.stat().st_size
        run_once(data, parse_all=True)  # the index the first row uses
        keep = base / "subscribers.keep"
        shutil.copy(service.subscribers_path, keep)
        shutil.copytree(data.state / "index", base / "index.keep")
        for round_no in range(1, args.rounds + 1):
            for name, parse_all in (("with its index", False), ("index deleted", True)):
                shutil.copy(keep, service.subscribers_path)
                shutil.rmtree(data.state / "index", ignore_errors=True)
                shutil.copytree(base / "index.keep", data.state / "index")
                for path in data.state.glob("due-*"):
                    path.unlink()
                took = run_once(data, parse_all)
                rows.append((round_no, name, kit.human(count), f"{size / 1e6:.1f}",
                             f"{took:.2f}", kit.load()))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(kit.table(["round", "run", "subscribers", "file MB", "run s", "load 1/5/15"], rows))


if __name__ == "__main__":
    main()
