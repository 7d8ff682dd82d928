"""Whether a subscribe POST's answer time tells a known address from a new one
(docs/using/subscriber-pages.md#confirmation-cap): the median answer time of each, through a real
``vykhukhol serve``.

    python tests/bench/bench_subscribe_timing.py [--posts 200] [--subscribers 10k]

A service with that many confirmed subscribers; POSTs alternate between a
known (confirmed) address, which gets no letter, and a new address, which gets
a confirmation letter (outbox transport: a file per letter). Each POST is one
HTTP connection, timed from connect to the last byte of the answer, with a
pause after each (``--pause``) so that the letter a new address gets, which
serve writes after the answer, does not slow the next POST. The hourly cap is
lifted (every POST comes from 127.0.0.1).
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
    parser.add_argument("--posts", type=int, default=200, help="timed POSTs of each kind")
    parser.add_argument("--subscribers", default="10k", help="confirmed subscribers of the service")
    parser.add_argument("--pause", type=float, default=0.05,
                        help="seconds between POSTs, for the letter of the last one to go out")
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
        known = next(line.split("\t", 1)[0] for line in
                     service.subscribers_path.read_text(encoding="utf-8").splitlines()[1:3]
                     if line and not line.startswith("#"))
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

        for n in range(20):  # warm up both paths
            post(known)
            post(f"warm.{n}@example.net")
        known_times, new_times = [], []
        for n in range(args.posts):
            known_times.append(post(known))
            time.sleep(args.pause)
            new_times.append(post(f"reader.{n}@example.net"))
            time.sleep(args.pause)
        time.sleep(1)  # the letters are written after the answers
        letters = len(list(data.outbox.glob("*.eml")))
        rows = [("known (confirmed, no letter)", kit.ms(kit.median(known_times)),
                 kit.ms(kit.p90(known_times)), kit.ms(min(known_times)), kit.load()),
                ("new (confirmation letter)", kit.ms(kit.median(new_times)),
                 kit.ms(kit.p90(new_times)), kit.ms(min(new_times)), kit.load())]
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(base, ignore_errors=True)

    print()
    print(kit.table(["address", "median ms", "p90 ms", "min ms", "load 1/5/15"], rows))
    ratio = kit.median(new_times) / kit.median(known_times)
    print(f"\nnew / known medians: {ratio:.2f}; letters written: {letters} "
          f"(expected {args.posts + 20})")


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
