"""A newsletter to a segment against one to the whole service
(docs/using/newsletters.md#newsletter-segments).

One service of ``--subscribers`` confirmed subscribers, each with three
fields (``city`` text, ``age`` number, ``born`` date; a few without a city),
and a condition on all three that chooses about a third of them. In turns,
each a fresh process whose wall time and CPU are read from ``os.wait4``:

1. ``python3 -c pass``, the floor;
2. ``newsletters.create(...)`` to the whole service, called by a small
   ``python -c`` program (the job deleted afterwards, so each round starts alike);
3. the same with ``where=`` the condition;
4. ``newsletters.count_chosen(...)`` with the condition, the same way;
5. ``vykhukhol newsletter count --where COND`` and
6. ``vykhukhol newsletter create --where COND`` as the owner types them (the
   command line's imports; create counts first, then makes the job).

    python tests/bench/bench_segments.py [--subscribers 100k] [--rounds 5]

Goal: the count and a newsletter to the segment at the speed of one to the
whole service (each ≤ 1.1 × create() to the whole, above the floor, by
the medians of wall time and of CPU time).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from support import benchkit as kit  # noqa: E402
from vykhukhol.services.subscriber_line import HEADER  # noqa: E402
from vykhukhol.settings import fields  # noqa: E402

CONDITION = 'city = "Тверь" and age >= 30 and born < 2000-01-01'
CITIES = ("Тверь", "Москва", "тверь", "Тула", "ТВЕРЬ", "")
# One call in a fresh process: argv is the data folder, what to do and the condition ("": none).
CALL = """
import sys
from vykhukhol import newsletters
from vykhukhol.datadir import DataDir
from vykhukhol.newsletters import segments
data = DataDir(sys.argv[1])
where = segments.of_site(data, sys.argv[3], "ru") if sys.argv[3] else None
if sys.argv[2] == "count":
    print(newsletters.count_chosen(data, ["news"], where))
else:
    name = newsletters.create(data, ["news"], "Новости", "Здравствуйте, {{ name }}!", where=where)
    print(newsletters.read_job(data, name).values["total"])
"""


def write_people(path: Path, count: int) -> None:
    """``count`` active subscribers, each with a city (or none), an age and a birth date."""
    joined = (datetime.now(timezone.utc) - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.write(HEADER + "\n")
        for start in range(0, count, 100_000):
            rows = []
            for i in range(start, min(count, start + 100_000)):
                city = CITIES[i % len(CITIES)]
                extra = (f"\tf.city={city}" if city else "") + \
                    f"\tf.age={18 + i % 50}\tf.born={1960 + i % 50}-0{1 + i % 9}-1{i % 10}"
                rows.append(f"reader{i}@example.org\tReader {i}\tactive\t{joined}\t{joined}"
                            f"\t{i % 4}\t-\t0\t-\t0\t127.0.0.1{extra}\n")
            out.write("".join(rows))


def timed(argv: list[str]) -> tuple[float, float, str, str]:
    """(wall seconds, CPU seconds, stdout, stderr) of one child process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=err, env=kit.subprocess_env())
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - began
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(argv[:6])}… failed: {stderr}")
    return wall, usage.ru_utime + usage.ru_stime, stdout, stderr


def clear_jobs(data) -> None:
    """The jobs a round made, deleted so that every round writes into the same folder."""
    for path in data.newsletters.glob("*"):
        if path.suffix in (".job", ".list", ".letter") or path.name.endswith(".lock"):
            path.unlink()
    shutil.rmtree(data.letters, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", default="100k")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tmp", default=None, help="folder for the scratch data")
    args = parser.parse_args()
    count = kit.parse_sizes(args.subscribers)[0]
    kit.banner(f"bench_segments: {kit.human(count)} subscribers with three fields, "
               f"{args.rounds} rounds; condition {CONDITION}")
    base = Path(tempfile.mkdtemp(prefix="vyk-bench-seg-", dir=args.tmp))
    python = sys.executable
    try:
        data = kit.make_data(base / "data")
        service = kit.add_service(data, "news", letters=(), enabled=False)
        for name, kind in (("city", "text"), ("age", "number"), ("born", "date")):
            fields.add(data.root, fields.Field(name, kind))
        write_people(service.subscribers_path, count)
        kit.compile_lib()
        cli = [python, "-m", "vykhukhol", "--data", str(data.root)]
        cases = {
            "python -c pass (floor)": [python, "-c", "pass"],
            "create() to the whole service": [python, "-c", CALL, str(data.root), "create", ""],
            "create() to the segment": [python, "-c", CALL, str(data.root), "create", CONDITION],
            "count_chosen() of the segment": [python, "-c", CALL, str(data.root), "count",
                                              CONDITION],
            "newsletter count --where": cli + ["newsletter", "count", "--services", "news",
                                               "--where", CONDITION],
            "newsletter create --where (count, then create)": cli + [
                "newsletter", "create", "--services", "news", "--subject", "S", "--body",
                "Hello", "--where", CONDITION],
        }
        results: dict[str, list[tuple[float, float]]] = {case: [] for case in cases}
        chosen: dict[str, str] = {}
        print(f"# data ready, load {kit.load()}", flush=True)
        for _ in range(args.rounds):
            for case, argv in cases.items():
                wall, cpu, out, err = timed(argv)
                results[case].append((wall, cpu))
                chosen[case] = " / ".join(out.strip().splitlines()[-1:]
                                          + err.strip().splitlines()[:1])
                clear_jobs(data)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    floor = kit.median([w for w, _ in results["python -c pass (floor)"]])
    floor_cpu = kit.median([c for _, c in results["python -c pass (floor)"]])
    rows = []
    for case, runs in results.items():
        wall, cpu = kit.median([w for w, _ in runs]), kit.median([c for _, c in runs])
        rows.append((case, kit.ms(wall), kit.ms(wall - floor), kit.ms(cpu - floor_cpu),
                     kit.ms(min(w for w, _ in runs) - floor), chosen.get(case, "")))
    print()
    print(kit.table(["case", "wall ms", "above floor ms", "CPU above floor ms",
                     "least above floor ms", "said"], rows))
    whole = results["create() to the whole service"]
    for case in ("create() to the segment", "count_chosen() of the segment"):
        wall = (kit.median([w for w, _ in results[case]]) - floor) / \
            (kit.median([w for w, _ in whole]) - floor)
        cpu = (kit.median([c for _, c in results[case]]) - floor_cpu) / \
            (kit.median([c for _, c in whole]) - floor_cpu)
        print(f"{case} / create() to the whole service: wall {wall:.2f}, CPU {cpu:.2f} "
              f"({'met' if max(wall, cpu) <= 1.1 else 'MISSED'}: goal <= 1.1)")
    print(f"load at end {kit.load()}")


if __name__ == "__main__":
    main()
