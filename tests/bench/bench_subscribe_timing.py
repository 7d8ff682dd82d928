"""Whether a subscribe POST's answer time tells anything of the address
(docs/using/subscriber-pages.md#confirmation-cap): where it lies in the subscriber file, or
whether it is there at all. The median answer time of each kind, through a
real ``vykhukhol serve``.

    python tests/bench/bench_subscribe_timing.py [--posts 50] [--subscribers 1M]

A service with that many confirmed subscribers; POSTs go in turns to an
address on the file's first line (``top``), one on its middle line
(``middle``), and a new address (``absent``: it gets a confirmation letter,
outbox transport, a file per letter). Each POST is one HTTP connection,
timed from connect to the last byte of the answer, with a pause after each
(``--pause``) so that the work serve does after the answer (the lookup, the
new line, the letter) does not slow the next POST. The hourly cap is lifted
(every POST comes from 127.0.0.1).
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from support import benchkit as kit  # noqa: E402

START_WITHIN = 20.0  # seconds serve may take to answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=50, help="timed POSTs of each kind")
    parser.add_argument("--subscribers", default="1M", help="confirmed subscribers of the service")
    parser.add_argument("--pause", type=float, default=0.4,
                        help="seconds between POSTs, for the work after the last one's answer to end")
    parser.add_argument("--tmp", default=None, help="folder for the scratch data")
    args = parser.parse_args()
    [size] = kit.parse_sizes(args.subscribers)

    kit.banner(f"bench_subscribe_timing: {args.posts} POSTs of each kind, {args.subscribers} subscribers")
    base = Path(tempfile.mkdtemp(prefix="vyk-bench-timing-", dir=args.tmp))
    port = kit.free_port()
    server = None
    try:
        data = kit.make_data(base / "data", subscribe_hourly_limit=1_000_000, subscribe_alarm=0)
        service = kit.add_service(data, "news", letters=[("Lesson 1", "1d", "Hello.\n")])
        kit.write_subscribers(service.subscribers_path, size, "idle")
        lines = count_lines(service.subscribers_path)
        addresses = {"top": "user0@example.org", "middle": f"user{size // 2}@example.org"}
        out = (base / "serve.out").open("wb")
        server = subprocess.Popen(
            [sys.executable, "-m", "vykhukhol", "--data", str(data.root), "serve", "--host",
             "127.0.0.1", "--port", str(port), "--no-ticker"],
            env=kit.subprocess_env(), stdout=out, stderr=subprocess.STDOUT)
        wait_until_up(port)

        def post(address: str) -> float:
            body = urlencode({"service": "news", "email": address, "name": "Reader"}).encode()
            began = time.perf_counter()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/cgi/subscribe.py", body,
                         {"Content-Type": kit.FORM, "Connection": "close"})
            response = conn.getresponse()
            response.read()
            took = time.perf_counter() - began
            conn.close()
            if response.status != 200:
                raise RuntimeError(f"POST {address}: status {response.status}")
            return took

        fresh = iter(range(10**9))
        kinds = {"top": lambda: addresses["top"], "middle": lambda: addresses["middle"],
                 "absent": lambda: f"reader.{next(fresh)}@example.net"}
        for _ in range(5):  # warm up every path
            for address in kinds.values():
                post(address())
                time.sleep(args.pause)
        times: dict[str, list[float]] = {kind: [] for kind in kinds}
        for _ in range(args.posts):
            for kind, address in kinds.items():
                times[kind].append(post(address()))
                time.sleep(args.pause)
        time.sleep(2)  # the letters are written after the answers
        letters = len(list(data.outbox.glob("*.eml")))
        rows = [(f"{kind} ({addresses.get(kind, 'a new address')})", kit.ms(kit.median(took)),
                 kit.ms(kit.p90(took)), kit.ms(min(took)), kit.load())
                for kind, took in times.items()]
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(base, ignore_errors=True)

    print()
    print(f"{lines:,} lines in the subscriber file")
    print(kit.table(["address", "median ms", "p90 ms", "min ms", "load 1/5/15"], rows))
    medians = [kit.median(took) for took in times.values()]
    print(f"\nslowest / fastest median: {max(medians) / min(medians):.2f}; letters written: "
          f"{letters} (expected {args.posts + 5})")


def count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))


def wait_until_up(port: int) -> None:
    deadline = time.monotonic() + START_WITHIN
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/cgi/subscribe.py?service=news")
            conn.getresponse().read()
            conn.close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("serve never answered") from None
            time.sleep(0.05)


if __name__ == "__main__":
    main()
