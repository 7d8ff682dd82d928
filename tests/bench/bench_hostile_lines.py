"""Newsletter creation over a subscriber file holding one hostile line.

Each case is a service whose ``subscribers.txt`` holds one valid subscriber
and one line of ``--size`` characters built to make a backtracking pattern
work hard: a line of ``@`` only (the attack: 20k of them took 5.4 s before the
fix, growing with the square of the length), the same followed by a tab, ``@``
between letters, a name made of ``@``, a good line with a last field of ``@``
that is not UTF-8, and a valid subscriber whose address is ``--size`` long.
Each is timed as a real ``vykhukhol newsletter create`` subprocess (median of
``--runs``), beside a bare ``python3 -c pass`` (the interpreter's start-up)
and the same command on a file without the hostile line.

    python tests/bench/bench_hostile_lines.py [--size 1M] [--runs 3]

Goal: every case within a second of the file without the hostile line. Do not
point VYKHUKHOL_BENCH_CHECKOUT at code before the fix with the default size
(a quadratic reader needs hours for 1M); ``--size 20k`` shows it in seconds.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from support import benchkit as kit  # noqa: E402

T = "2026-11-01T10:00:00Z"
TAIL = f"\tName\tactive\t{T}\t{T}\t0\t-\t0\t-\t0\t-"  # every field after the address


def cases(size: int) -> dict[str, str]:
    """Name → the hostile line, ``size`` characters or about."""
    return {
        "none (valid line only)": "",
        "@ × size": "@" * size,
        "@ × size, then a tab": "@" * size + "\t",
        "a@a@…": "a" + "@a" * (size // 2),
        "name of @, 3 fields": "x@y\t" + "@" * size + "\tactive",
        "@<tab> × size/2": "@\t" * (size // 2),
        "good line, ip of @ not UTF-8": "a@b" + TAIL[:-1] + "@" * size + "\udcff",
        "valid, address of @": "@" * size + TAIL,
    }


def timed(argv: list[str], runs: int) -> float:
    """Median wall seconds of ``argv`` (which must succeed)."""
    walls = []
    for _ in range(runs):
        began = time.perf_counter()
        result = subprocess.run(argv, capture_output=True, env=kit.subprocess_env())
        walls.append(time.perf_counter() - began)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[3:])} exited {result.returncode}: "
                               f"{result.stderr.decode(errors='replace')}")
    return kit.median(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1M", help="characters in the hostile line (k, M)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each case; the median is shown")
    parser.add_argument("--tmp", default=None, help="folder for the scratch data")
    args = parser.parse_args()
    size = kit.parse_sizes(args.size)[0]

    kit.banner(f"bench_hostile_lines: newsletter create, one hostile line of {kit.human(size)}, "
               f"median of {args.runs}")
    base = Path(tempfile.mkdtemp(prefix="vyk-bench-hostile-", dir=args.tmp))
    try:
        data = kit.make_data(base / "data")
        bare = timed([sys.executable, "-c", "pass"], args.runs)
        rows = []
        for index, (name, hostile) in enumerate(cases(size).items()):
            service = kit.add_service(data, f"case{index}", letters=(), enabled=False)
            lines = [kit.HEADER, f"good@example.org{TAIL}", *([hostile] if hostile else [])]
            service.subscribers_path.write_bytes(
                ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
            wall = timed([sys.executable, "-m", "vykhukhol", "--data", str(data.root),
                          "newsletter", "create", "--services", service.name,
                          "--subject", "Hi", "--body", "Hello"], args.runs)
            rows.append((name, f"{len(hostile):,}", f"{wall:.3f}", f"{bare:.3f}", kit.load()))
        print(kit.table(("hostile line", "characters", "create s", "python3 -c pass s", "load"),
                        rows))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
