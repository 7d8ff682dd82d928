"""Where a letter's time goes, seen from the SMTP server: the gaps between
one letter's DATA and the next MAIL, MAIL and RCPT, RCPT and the letter's
end, for one `vykhukhol cron` run and for the bare smtplib loop of
bench_throughput (the same letters, one connection, no PIPELINING), and the
CPU each side used (getrusage of the finished child).

Each gap holds the server's own work and the client's; the server's is the
same for both, so a difference between the two is the client's. Per-letter
percentiles are robust where a run's total is not: one slow second of the
host moves a total, not a median of 2,000.

    python tests/bench/bench_gaps.py [--letters 2000] [--rounds 4] [--no-sync-too]

``--no-sync-too`` adds ours with the journal's fsync off (what it costs).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import bench_throughput as bt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from support import benchkit as kit  # noqa: E402

#: The sink: aiosmtpd noting when each MAIL, RCPT and DATA reached its handler.
SINK = r"""
import json, sys, time  # noqa: E402
from aiosmtpd.controller import Controller  # noqa: E402
clock = time.perf_counter

class Sink:
    def __init__(self):
        self.events = []
    async def handle_MAIL(self, server, session, envelope, address, options):
        self.events.append(("MAIL", clock()))
        envelope.mail_from = address
        return "250 OK"
    async def handle_RCPT(self, server, session, envelope, address, options):
        self.events.append(("RCPT", clock()))
        envelope.rcpt_tos.append(address)
        return "250 OK"
    async def handle_DATA(self, server, session, envelope):
        self.events.append(("DATA", clock()))
        return "250 Message accepted"
    def answer(self, command):
        events, self.events = self.events, []
        return json.dumps(events)

""" + kit.SINK_SERVE

GAPS = (("DATA", "MAIL"), ("MAIL", "RCPT"), ("RCPT", "DATA"))
NO_SYNC = bt.RUN_WITHOUT_SYNC


class GapSink(kit.SmtpSink):
    def __init__(self) -> None:  # noqa: D107 - the sink above instead of the counting one
        super().__init__(script=SINK)

    def events(self) -> list[tuple[str, float]]:
        return json.loads(self._ask("events"))


def gaps(events: list[tuple[str, float]]) -> dict[str, list[float]]:
    """Microseconds between consecutive events, by kind of gap."""
    found: dict[str, list[float]] = {f"{a}->{b}": [] for a, b in GAPS}
    for (a, at), (b, bt_) in zip(events, events[1:], strict=False):
        if f"{a}->{b}" in found:
            found[f"{a}->{b}"].append((bt_ - at) * 1e6)
    return found


def timed_child(argv: list[str]) -> float:
    """Run ``argv``; the CPU seconds (user + system) it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=kit.subprocess_env(), capture_output=True, check=True, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--letters", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds")
    parser.add_argument("--no-sync-too", action="store_true")
    args = parser.parse_args()
    kit.banner(f"bench_gaps: {args.letters} letters, {args.rounds} rounds")
    kit.compile_lib()
    base = Path(tempfile.mkdtemp(prefix="vyk-bench-gaps-"))
    sides = ["ours", "bare"] + (["ours, no fsync"] if args.no_sync_too else [])
    seen: dict[str, dict[str, list[list[float]]]] = {side: {} for side in sides}
    cpu: dict[str, list[float]] = {side: [] for side in sides}
    try:
        with GapSink() as sink:
            data, service = bt.prepare(base, sink.port, args.letters)
            bt.reset(data, service, args.letters)
            letters = base / "letters.bin"
            bt.write_letters(letters, bt.prebuilt(data, service, args.letters))
            ours = [sys.executable, "-m", "vykhukhol", "--data", str(data.root), "cron"]
            argv = {"ours": ours,
                    "bare": [sys.executable, "-c", bt.BARE, str(sink.port), str(letters)],
                    "ours, no fsync": [sys.executable, "-c", NO_SYNC, *ours[3:]]}
            for _ in range(args.rounds):
                for side in sides:
                    bt.reset(data, service, args.letters)
                    sink.events()
                    cpu[side].append(timed_child(argv[side]))
                    for name, values in gaps(sink.events()).items():
                        seen[side].setdefault(name, []).append(values)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    rows = []
    for side in sides:
        totals = []
        for name, rounds in seen[side].items():
            p50 = statistics.median(kit.median(r) for r in rounds)
            p90 = statistics.median(kit.p90(r) for r in rounds)
            mean = statistics.median(statistics.fmean(r) for r in rounds)
            totals.append((p50, mean))
            rows.append((side, name, f"{p50:.0f}", f"{p90:.0f}", f"{mean:.0f}"))
        rows.append((side, "a letter", f"{sum(t[0] for t in totals):.0f}", "",
                     f"{sum(t[1] for t in totals):.0f}"))
        rows.append((side, "CPU a letter", "", "",
                     f"{statistics.median(cpu[side]) / args.letters * 1e6:.0f}"))
    print()
    print("per letter, us (medians over the rounds of each round's figure)")
    print(kit.table(["sender", "gap", "p50", "p90", "mean"], rows))
    print(f"\nload at end {kit.load()}")


if __name__ == "__main__":
    main()
