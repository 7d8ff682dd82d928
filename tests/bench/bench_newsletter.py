"""A newsletter to a million: creating the job, and one sender run over it.

Three services totalling ``--recipients`` confirmed subscribers (distinct
addresses; alternately ``done`` and ``active``, all confirmed), each a
disabled plain news list so the run does nothing but the newsletter. Then,
each as a real subprocess whose peak RSS is read from ``os.wait4``:

1. ``vykhukhol newsletter create --services … --body-file …``: wall time, peak RSS;
2. ``vykhukhol cron`` with news_per_run=50 (outbox transport): wall time,
   peak RSS, letters written; ``--runs`` such runs one after the other.

    python tests/bench/bench_newsletter.py [--recipients 1M] [--runs 2]

Goals: create ≤ 10 s and ≤ 150 MB; a run ≤ 100 MB.
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

SERVICES = 3
BODY = """Здравствуйте, {{ name or "друг" }}!

Новости месяца: выхухоль снова в Красной книге. News of the month.

Отписаться: {{ unsubscribe_url }}
"""


def measured(argv: list[str]) -> tuple[float, int, str, str]:
    """Run ``argv``; (wall seconds, peak RSS in KiB, stdout, stderr) of that one child."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=err, env=kit.subprocess_env())
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - began
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[3:])} exited {child.returncode}: {stderr}")
    return wall, usage.ru_maxrss, stdout, stderr


def newsletter_letters(outbox: Path) -> int:
    """Letters in the outbox, less the alerts to the admin ("all dispatchs is off")."""
    if not outbox.exists():
        return 0
    return sum(1 for name in os.listdir(outbox) if "admin@example.org" not in name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipients", default="1M", help="confirmed subscribers in all")
    parser.add_argument("--runs", type=int, default=2, help="sender runs after the create")
    parser.add_argument("--news-per-run", type=int, default=50)
    parser.add_argument("--tmp", default=None, help="folder for the scratch data")
    args = parser.parse_args()
    total = kit.parse_sizes(args.recipients)[0]

    kit.banner(f"bench_newsletter: {kit.human(total)} recipients in {SERVICES} services, "
               f"news_per_run {args.news_per_run}")
    base = Path(tempfile.mkdtemp(prefix="vyk-bench-news-", dir=args.tmp))
    rows = []
    try:
        data = kit.make_data(base / "data", news_per_run=args.news_per_run)
        names = []
        for i, count in enumerate(kit.spread(total, SERVICES)):
            service = kit.add_service(data, f"news{i}", letters=(), enabled=False)
            kit.write_subscribers(service.subscribers_path, count, "idle",
                                  prefix=f"{service.name}-reader")
            names.append(service.name)
        body = base / "body.txt"
        body.write_text(BODY, encoding="utf-8")
        cli = [sys.executable, "-m", "vykhukhol", "--data", str(data.root)]
        print(f"# data ready, load {kit.load()}", flush=True)

        wall, rss, stdout, stderr = measured(cli + [
            "newsletter", "create", "--services", ",".join(names),
            "--subject", "Новости — {{ name or \"друг\" }}", "--body-file", str(body)])
        job = stdout.strip().splitlines()[-1]
        ledger = data.job(job, "list")
        rows.append(("newsletter create", f"{wall:.2f}", kit.peak_rss_mb(rss), "-",
                     f"{ledger.stat().st_size / 1e6:.0f} MB ledger, {stderr.strip()}",
                     kit.load()))
        print(f"# created {job}, load {kit.load()}", flush=True)

        for run in range(1, args.runs + 1):
            before = newsletter_letters(data.outbox)
            wall, rss, stdout, _ = measured(cli + ["cron"])
            letters = newsletter_letters(data.outbox) - before
            outcome = stdout.strip().splitlines()[-1]
            rows.append((f"cron run {run}", f"{wall:.2f}", kit.peak_rss_mb(rss), letters,
                         outcome, kit.load()))
    finally:
        shutil.rmtree(base, ignore_errors=True)

    print()
    print(kit.table(["step", "wall s", "peak RSS MB", "letters", "notes", "load 1/5/15"], rows))
    print()
    create_wall, create_rss = float(rows[0][1]), float(rows[0][2])
    print(f"goal create <= 10 s: {'met' if create_wall <= 10 else 'MISSED'} ({create_wall:.2f} s)")
    print(f"goal create <= 150 MB: {'met' if create_rss <= 150 else 'MISSED'} ({create_rss:.1f} MB)")
    if len(rows) > 1:
        run_rss = max(float(r[2]) for r in rows[1:])
        print(f"goal a run <= 100 MB: {'met' if run_rss <= 100 else 'MISSED'} ({run_rss:.1f} MB)")
    print(f"load at end {kit.load()}")


if __name__ == "__main__":
    main()
