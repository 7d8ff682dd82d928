"""What the public archive costs a run (docs/using/archive.md#archive), in process.

One service with its archive on and N published letters (series letters
and kept newsletters, half each). Printed: the time to write the whole
archive (``archive.pages.build``: N pages, the index, the feed), the cost of the
sender's hook on a run that published nothing (``archive.publish.after_run``; every
run pays it) and on a run that published one letter (it rebuilds the
archive), each the median of ``--runs``, with the load average.

    python tests/bench/bench_archive.py [--letters 10,100,500] [--runs 5] [--tmp /tmp]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(os.environ.get("VYKHUKHOL_BENCH_CHECKOUT", Path(__file__).resolve().parents[2])) / "lib"))

from vykhukhol import archive, settings  # noqa: E402
from vykhukhol import services as svc  # noqa: E402
from vykhukhol.archive import pages, publish  # noqa: E402
from vykhukhol.datadir import DataDir  # noqa: E402
from vykhukhol.files.runlog import RunLog  # noqa: E402
from vykhukhol.sender.runtime import Report  # noqa: E402
from vykhukhol.timeutil import format_time, now  # noqa: E402

BODY = ("Hello {{ name }},\n\n" + "A paragraph of the letter, with a link https://example.org/x.\n" * 40
        + "\nOnline: {{ web_url }}\nLeave: {{ unsubscribe_url }}\n")


def site(root: Path, letters: int) -> tuple[DataDir, settings.Settings]:
    data = DataDir(root / "data")
    data.make_skeleton()
    config = settings.Settings({"site_url": "https://lists.example.org", "language": "ru",
                                "archive_dir": str(root / "archive"), "security.secret": "s" * 40})
    svc.add_db(data, "main")
    service = svc.add_service(data, "news", "main", {"title": "News", "archive": "yes"})
    series = min(letters // 2, svc.MAX_LETTERS - 1)
    for number in range(1, series + 2):
        svc.add_letter(service, f"Lesson {number} for {{{{ name }}}}", "1d", BODY, public=True)
    stamp = format_time(now())
    entries = [archive.Entry(stamp, "letter", str(n)) for n in range(1, series + 1)]
    for index in range(letters - series):
        job = f"20261201-000000-{index:06x}"
        archive.keep_newsletter(data, job, ["news"], f"News {index}", BODY, None, True)
        (data.letters / f"{job}.publish").unlink()
        entries.append(archive.Entry(stamp, "news", job))
    archive.add_entries(data, "news", entries)
    return data, config


def fake_run(data: DataDir, config: settings.Settings, item: str | None) -> SimpleNamespace:
    report = Report("bench", now())
    if item is not None:
        report.items["news"].add(item)
        report.sent["news"] += 1
    return SimpleNamespace(data=data, settings=config, report=report, now=now,
                           log=RunLog(data, "bench"))


def hook(run: SimpleNamespace) -> None:
    """The sender's call at the end of a run."""
    publish.after_run(run.data, run.settings, run.report.items, run.report.sent, run.now, run.log)


def median_ms(action, runs: int) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        action()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def measure(root: Path, letters: int, runs: int) -> tuple[float, float, float]:
    """(build, hook with nothing to publish, hook publishing one letter), in ms."""
    data, config = site(root, letters)
    service = svc.find_service(data, "news")
    build = median_ms(lambda: pages.build(data, config, service), runs)
    idle = median_ms(lambda: hook(fake_run(data, config, None)), runs)
    last = str(min(letters // 2, svc.MAX_LETTERS - 1) + 1)

    def publish_one() -> None:  # the last series letter unpublished, then published by a run
        kept = [e for e in archive.entries(data, "news") if e.ref != last]
        archive.entries_path(data, "news").write_text(
            "".join(f"{e.time}\t{e.kind}\t{e.ref}\n" for e in kept))
        hook(fake_run(data, config, last))
    return build, idle, median_ms(publish_one, runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--letters", default="10,100,500")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tmp", default=None)
    args = parser.parse_args()
    print(f"{'letters':>8} {'build ms':>10} {'hook, nothing ms':>17} {'hook, one ms':>13}  load")
    for letters in (int(n) for n in args.letters.split(",")):
        root = Path(tempfile.mkdtemp(prefix="vykhukhol-bench-archive-", dir=args.tmp))
        try:
            build, idle, one = measure(root, letters, args.runs)
            load = "/".join(f"{x:.2f}" for x in os.getloadavg())
            print(f"{letters:>8} {build:>10.1f} {idle:>17.2f} {one:>13.1f}  {load}")
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
