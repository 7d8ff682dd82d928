"""Wall time of one subscribe POST, as the web server starts it.

An installed copy (lib/, cgi/, admin/ copied to a scratch folder and
initialised; outbox transport, so the confirmation request is written to
data/outbox/) with one service of each of ``--sizes`` subscribers. For each
size, one warm-up POST (it writes the bytecode caches), then ``--posts``
POSTs of new addresses to cgi/subscribe.py, each a CGI process with the
urlencoded form on stdin. Every POST must answer 200 and add its address.

Two times per POST: "answer", until the whole answer (its headers and the
Content-Length bytes of its body) has reached the web server's end of the
pipe — what the visitor waits for, since the confirmation letter goes out
after it — and "process", until the process has exited.
Beside them, ``python3 -c pass`` under the same environment, timed in turns
with the POSTs so both see the same load.

    python tests/bench/bench_subscribe.py [--sizes 1k,100k,1M] [--posts 20]

Goal (docs/performance.md#performance-table): answer median ≤ 60 ms above ``python3 -c pass`` at 100k.
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
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from support import benchkit as kit  # noqa: E402
from vykhukhol import settings as settings_mod  # noqa: E402 - benchkit put lib/ on the path

GOAL = 0.060  # seconds above python3 -c pass, answer complete, at 100k


def post_timed(root: Path, script: Path, body: bytes) -> tuple[float, float, int]:
    """One POST as a CGI process: (seconds to the complete answer, seconds to
    the exit, HTTP status)."""
    environ = kit.cgi_environ(root, script, "POST", body=body)
    began = time.perf_counter()
    child = subprocess.Popen([str(script)], env=environ, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=script.parent)
    child.stdin.write(body)
    child.stdin.close()
    received, answered, status = b"", None, 0
    while answered is None:
        chunk = os.read(child.stdout.fileno(), 65536)
        if not chunk:
            break
        received += chunk
        head, sep, payload = received.partition(b"\r\n\r\n")
        if sep:
            fields = dict(line.split(":", 1) for line in head.decode("latin-1").splitlines()
                          if ":" in line)
            fields = {k.strip().lower(): v.strip() for k, v in fields.items()}
            length = int(fields.get("content-length", "-1"))
            status = int(fields.get("status", "200").split()[0])
            if 0 <= length <= len(payload):
                answered = time.perf_counter() - began
    child.stdout.read()
    # A plain wait: with a timeout, Popen.wait polls with sleeps that double up
    # to 50 ms, and a process still working (a POST's child writing the letter)
    # is seen to end up to that much late.
    child.wait()
    ended = time.perf_counter() - began
    return (ended if answered is None else answered), ended, status


def bare_start(root: Path, script: Path) -> float:
    environ = kit.cgi_environ(root, script)
    began = time.perf_counter()
    subprocess.run(["python3", "-c", "pass"], env=environ, check=True)
    return time.perf_counter() - began


def count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1k,100k,1M", help="subscribers of the service")
    parser.add_argument("--posts", type=int, default=20, help="timed POSTs per size")
    parser.add_argument("--tmp", default=None, help="folder for the scratch data")
    args = parser.parse_args()
    sizes = kit.parse_sizes(args.sizes)

    kit.banner(f"bench_subscribe: sizes {args.sizes}, {args.posts} POSTs each")
    base = Path(tempfile.mkdtemp(prefix="vyk-bench-sub-", dir=args.tmp))
    rows = []
    medians = {}
    try:
        root, data = kit.make_install(base)
        # Every POST comes from one address: lift the hourly cap.
        settings_mod.update(data.settings, {"subscribe_hourly_limit": "1000000", "subscribe_alarm": "0"})
        service = kit.add_service(data, "news", letters=[("Lesson 1", "1d", "Hello.\n")])
        script = root / "cgi" / "subscribe.py"

        def post(address: str) -> tuple[float, float]:
            body = urlencode({"service": "news", "email": address, "name": "Новый Читатель"})
            answer, process, status = post_timed(root, script, body.encode())
            if status != 200:
                raise RuntimeError(f"POST {address}: status {status}")
            return answer, process

        for size in sizes:
            kit.write_subscribers(service.subscribers_path, size, "idle")
            for path in data.state.glob("due-*"):
                path.unlink()
            shutil.rmtree(data.outbox, ignore_errors=True)
            data.outbox.mkdir()
            before = count_lines(service.subscribers_path)
            first, _ = post(f"warm.up.{size}@example.net")
            answers, processes, floors = [], [], []
            for n in range(args.posts):
                floors.append(bare_start(root, script))
                answer, process = post(f"reader.{size}.{n}@example.net")
                answers.append(answer)
                processes.append(process)
            added = count_lines(service.subscribers_path) - before
            letters = len(list(data.outbox.glob("*.eml")))
            if added != args.posts + 1 or letters != args.posts + 1:
                raise RuntimeError(f"{added} lines added and {letters} letters written, "
                                   f"{args.posts + 1} expected")
            floor = kit.median(floors)
            medians[size] = kit.median(answers) - floor
            rows.append((kit.human(size), kit.ms(first), kit.ms(kit.median(answers)),
                         kit.ms(kit.p90(answers)), kit.ms(kit.median(processes)), kit.ms(floor),
                         kit.ms(medians[size]), kit.ms(kit.median(processes) - floor), kit.load()))
            print(f"# {kit.human(size)} done, load {kit.load()}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    print()
    print(kit.table(["subscribers", "warm-up ms", "answer median ms", "answer p90 ms",
                     "process median ms", "python3 -c pass ms", "answer - floor ms",
                     "process - floor ms", "load 1/5/15"], rows))
    print()
    if 100_000 in medians:
        got = medians[100_000]
        print(f"goal answer <= {kit.ms(GOAL)} ms above python3 -c pass at 100k: "
              f"{'met' if got <= GOAL else 'MISSED'} ({kit.ms(got)} ms above)")
    print(f"load at end {kit.load()}")


if __name__ == "__main__":
    main()
