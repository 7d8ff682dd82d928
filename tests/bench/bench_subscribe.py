"""Wall time of one subscribe POST, as the web server starts it.

An installed copy (lib/, cgi/, admin/ copied to a scratch folder and
initialised; outbox transport, so the confirmation request is written to
data/outbox/) with one service of each of ``--sizes`` subscribers. For each
size, one warm-up POST (it writes the bytecode caches), then ``--posts``
POSTs of new addresses to cgi/subscribe.py, each a CGI process with the
urlencoded form on stdin. Every POST must answer 200 and add its address.

    python tests/bench/bench_subscribe.py [--sizes 1k,100k,1M] [--posts 20]

Goal: median ≤ 100 ms at 100k.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from urllib.parse import urlencode

import benchkit as kit

from vykhukhol import settings as settings_mod  # noqa: E402 - benchkit put lib/ on the path


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
        # Every POST comes from one address: lift the hourly cap (issue 9 item 8).
        settings_mod.update(data.settings, {"subscribe_hourly_limit": "1000000"})
        service = kit.add_service(data, "news", letters=[("Lesson 1", "1d", "Hello.\n")])
        script = root / "cgi" / "subscribe.py"

        def post(address: str) -> float:
            body = urlencode({"service": "news", "email": address, "name": "Новый Читатель"})
            took, status, page = kit.run_cgi(root, script, "POST", body=body.encode())
            if status != 200:
                raise RuntimeError(f"POST {address}: status {status}: {page[:500]!r}")
            return took

        for size in sizes:
            kit.write_subscribers(service.subscribers_path, size, "idle")
            for path in data.state.glob("due-*"):
                path.unlink()
            shutil.rmtree(data.outbox, ignore_errors=True)
            data.outbox.mkdir()
            before = count_lines(service.subscribers_path)
            first = post(f"warm.up.{size}@example.net")
            floor = kit.interpreter_start(root, script)
            times = [post(f"reader.{size}.{n}@example.net") for n in range(args.posts)]
            added = count_lines(service.subscribers_path) - before
            letters = len(list(data.outbox.glob("*.eml")))
            if added != args.posts + 1 or letters != args.posts + 1:
                raise RuntimeError(f"{added} lines added and {letters} letters written, "
                                   f"{args.posts + 1} expected")
            medians[size] = kit.median(times)
            rows.append((kit.human(size), kit.ms(first), kit.ms(kit.median(times)),
                         kit.ms(kit.p90(times)), kit.ms(min(times)), kit.ms(floor),
                         kit.ms(kit.median(times) - floor), kit.load()))
            print(f"# {kit.human(size)} done, load {kit.load()}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    print()
    print(kit.table(["subscribers", "warm-up ms", "median ms", "p90 ms", "min ms",
                     "python3 -c pass ms", "median - floor ms", "load 1/5/15"], rows))
    print()
    if 100_000 in medians:
        got = medians[100_000]
        print(f"goal median <= 100 ms at 100k: {'met' if got <= 0.100 else 'MISSED'} "
              f"({kit.ms(got)} ms)")
    print(f"load at end {kit.load()}")


if __name__ == "__main__":
    main()
