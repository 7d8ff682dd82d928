"""The worst message's intake time: what one message mailed to the bounce
address can cost the reader (docs/performance.md#performance).

``python tests/bench/bench_intake.py [--rounds 5] [--pipe-rounds 3]``

Two kinds of message. Bombs (refused before parsing by bounces/reading/limits.py):
2 MB of empty lines, a part nested 400 deep, 5,000 parts, 1,000 bare
boundaries, a 100 kB header of encoded words. And the worst messages still
accepted, each at one of intake's limits: the most lines of the most bytes,
lines just under the longest field, 198 parts, 20 levels of nesting, a
header of 15 kB of encoded words. For each: in process, the refusal check
and (when accepted) the classification, median of ``--rounds``; and end to
end, one ``vykhukhol bounce`` process fed the message on standard input
(Python's start, the journal, the log line and the kept copy included),
median of ``--pipe-rounds``.

Before these limits (then in bounces/intake.py): 2 MB of empty lines took
28-53 s in ``vykhukhol bounce``, a part nested 400 deep 81 s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from support import benchkit  # noqa: E402
from vykhukhol.bounces.reading import limits  # noqa: E402
from vykhukhol.bounces.reading.classify import classify  # noqa: E402

HEAD = b"From: MAILER-DAEMON@example.org\r\nTo: list+x@example.org\r\nSubject: Undelivered\r\n"


def nested(depth: int) -> bytes:
    out = HEAD + b"MIME-Version: 1.0\r\n"
    for level in range(depth):
        out += b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (level, level)
    out += b"Content-Type: text/plain\r\n\r\nhi\r\n"
    return out + b"".join(b"--b%d--\r\n" % level for level in reversed(range(depth)))


def parts(count: int) -> bytes:
    out = HEAD + b'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n'
    return out + b"--b\r\nContent-Type: text/plain\r\n\r\npart\r\n" * count + b"--b--\r\n"


def messages() -> list[tuple[str, bytes]]:
    width = limits.MAX_BYTES // limits.MAX_LINES - 3
    return [
        ("bomb: 2 MB of empty lines", HEAD + b"\r\n" * 1_000_000),
        ("bomb: nested 400 deep", nested(400)),
        ("bomb: 5,000 parts", parts(5000)),
        ("bomb: 1,000 bare boundaries",
         HEAD + b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n' + b"--b\r\n" * 1000),
        ("bomb: 100 kB of encoded words",
         HEAD + b"X-Long: " + b"=?utf-8?q?a?= " * 7000 + b"\r\n\r\nhi\r\n"),
        ("accepted: most lines of most bytes", HEAD + b"\r\n" + (b"y" * width + b"\r\n")
         * (limits.MAX_LINES - 10)),
        ("accepted: lines of 15.9 kB", HEAD + b"\r\n" + (b"z" * 15_900 + b"\r\n")
         * (limits.MAX_BYTES // 15_902 - 1)),
        ("accepted: 198 parts", parts(198)),
        ("accepted: nested 20 deep", nested(20)),
        ("accepted: 15 kB of encoded words",
         HEAD.replace(b"Subject: Undelivered", b"Subject: " + b"=?utf-8?q?a?= " * 1100)
         + b"\r\nhi\r\n"),
    ]


def in_process(raw: bytes) -> tuple[float, str]:
    started = time.perf_counter()
    refused = limits.refusal(raw)
    if refused is None:
        classify(raw, "+")
    return time.perf_counter() - started, refused or "accepted"


def piped(data: Path, raw: bytes) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(data), "bounce"], input=raw,
                   capture_output=True, check=True, env=benchkit.subprocess_env(), timeout=300)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pipe-rounds", type=int, default=3)
    args = parser.parse_args()
    benchkit.banner("intake of one message: refusal check and classification, and vykhukhol bounce")
    print(f"# limits: {limits.MAX_BYTES} bytes, {limits.MAX_LINES} lines, {limits.MAX_FIELD} bytes "
          f"a field, {limits.MAX_PARTS} parts, {limits.MAX_NESTING} levels")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        data = benchkit.make_data(Path(folder) / "data", mail__from_email="list@example.org")
        baseline = [piped(data.root, b"Subject: hello\r\n\r\nhi\r\n") for _ in range(args.pipe_rounds)]
        for name, raw in messages():
            times, verdict = [], ""
            for _ in range(args.rounds):
                seconds, verdict = in_process(raw)
                times.append(seconds)
            # A different byte each round: the journal would call a repeat "read before".
            pipe = [piped(data.root, raw + b"\r\n" * (i + 1)) for i in range(args.pipe_rounds)]
            rows.append((name, f"{len(raw):,}", benchkit.ms(benchkit.median(times)),
                         benchkit.ms(benchkit.median(pipe)), verdict.split(":")[0]))
    print(benchkit.table(("message", "bytes", "in process ms", "vykhukhol bounce ms", "verdict"),
                         rows))
    print(f"# vykhukhol bounce of a 3-line message: {benchkit.ms(benchkit.median(baseline))} ms "
          f"(Python's start and the command's own work); load {benchkit.load()} at the end")


if __name__ == "__main__":
    main()
