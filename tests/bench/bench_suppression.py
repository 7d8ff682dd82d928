"""What the suppression check costs a subscribe POST (SPEC 12, issue 17 item 3).

Two installed copies alike (lib/, cgi/, admin/ copied and initialised;
outbox transport; one service of ``--subscribers`` subscribers) but for
data/suppressed.txt: empty in one, ``--suppressed`` entries in the other.
POSTs to cgi/subscribe.py (a CGI process each, the form on stdin) are timed
in turns so all see the same load: a new address on the empty list, a new
address on the long one (the check searches the file and finds nothing),
a suppressed address on the long one (nothing stored, no letter), and
``python3 -c pass`` as the floor. Times run to the complete answer (what the
visitor waits for), as bench_subscribe.py measures them.

Every POST must answer 200; each new address must be stored and mailed, no
suppressed one. Beside the processes, one in-process
``suppression.is_suppressed`` on the long list, timed alone.

    python tests/bench/bench_suppression.py [--suppressed 100k] [--posts 20]

Goal: the long list costs a new address's answer ≤ 5 ms (median against the
empty list's), and a suppressed address's answer is no slower than a new one's.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import benchkit as kit
from bench_subscribe import bare_start, count_lines, post_timed

from vykhukhol import settings as settings_mod  # noqa: E402 - benchkit put lib/ on the path
from vykhukhol import suppression  # noqa: E402
from vykhukhol.timeutil import now  # noqa: E402

GOAL = 0.005  # seconds the long list may add to a new address's answer (median)


def install(base: Path, subscribers: int):
    root, data = kit.make_install(base)
    settings_mod.update(data.settings, {"subscribe_hourly_limit": "1000000"})  # one client posts all
    service = kit.add_service(data, "news", letters=[("Lesson 1", "1d", "Hello.\n")])
    kit.write_subscribers(service.subscribers_path, subscribers, "idle")
    return root, data, service


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suppressed", default="100k", help="entries of the long list")
    parser.add_argument("--subscribers", default="1k", help="subscribers of the service")
    parser.add_argument("--posts", type=int, default=20, help="timed POSTs of each kind")
    parser.add_argument("--tmp", default=None, help="folder for the scratch data")
    args = parser.parse_args()
    [count] = kit.parse_sizes(args.suppressed)
    [subscribers] = kit.parse_sizes(args.subscribers)

    kit.banner(f"bench_suppression: {args.suppressed} suppressed, {args.subscribers} "
               f"subscribers, {args.posts} POSTs of each kind")
    base = Path(tempfile.mkdtemp(prefix="vyk-bench-suppr-", dir=args.tmp))
    try:
        plain_root, plain_data, plain_service = install(base / "empty", subscribers)
        long_root, long_data, long_service = install(base / "long", subscribers)
        secret = suppression.secret_of(settings_mod.load(long_data.settings))
        began = time.perf_counter()
        suppression.add_many(long_data, secret, (f"gone.{i}@example.net" for i in range(count)),
                             suppression.Why.COMPLAINT, "bench", now())
        written = time.perf_counter() - began
        size = suppression.path(long_data).stat().st_size
        print(f"# the long list: {count} entries, {size / 1e6:.1f} MB, written in {written:.1f} s",
              flush=True)

        def post(root: Path, address: str) -> float:
            body = urlencode({"service": "news", "email": address, "name": "Читатель"}).encode()
            answer, _, status = post_timed(root, root / "cgi" / "subscribe.py", body)
            if status != 200:
                raise RuntimeError(f"POST {address}: status {status}")
            return answer

        # warm-ups: the bytecode caches of both copies
        post(plain_root, "warm.up@example.org")
        post(long_root, "warm.up@example.org")
        before = {d.root: count_lines(s.subscribers_path)
                  for d, s in ((plain_data, plain_service), (long_data, long_service))}
        times: dict[str, list[float]] = {"empty": [], "long": [], "suppressed": [], "floor": []}
        for n in range(args.posts):
            times["floor"].append(bare_start(long_root, long_root / "cgi" / "subscribe.py"))
            times["empty"].append(post(plain_root, f"reader.{n}@example.org"))
            times["long"].append(post(long_root, f"reader.{n}@example.org"))
            times["suppressed"].append(post(long_root, f"gone.{n * 997 % count}@example.net"))
        for data, service in ((plain_data, plain_service), (long_data, long_service)):
            added = count_lines(service.subscribers_path) - before[data.root]
            letters = len(list(data.outbox.glob("*.eml")))
            if added != args.posts or letters != args.posts + 1:
                raise RuntimeError(f"{data.root}: {added} lines added, {letters} letters; "
                                   f"{args.posts} and {args.posts + 1} expected")

        lookups = []
        for n in range(50):
            began = time.perf_counter()
            suppression.is_suppressed(long_data, secret, f"nobody.{n}@example.org")
            lookups.append(time.perf_counter() - began)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    floor = kit.median(times["floor"])
    rows = [(label, kit.ms(kit.median(times[key])), kit.ms(kit.p90(times[key])),
             kit.ms(kit.median(times[key]) - floor), kit.load())
            for key, label in (("empty", "new address, empty list"),
                               ("long", f"new address, {kit.human(count)} suppressed"),
                               ("suppressed", f"suppressed address, {kit.human(count)}"),
                               ("floor", "python3 -c pass"))]
    print()
    print(kit.table(["POST", "answer median ms", "answer p90 ms", "above floor ms",
                     "load 1/5/15"], rows))
    print()
    cost = kit.median(times["long"]) - kit.median(times["empty"])
    print(f"is_suppressed alone on {kit.human(count)} entries: median "
          f"{kit.ms(kit.median(lookups))} ms, p90 {kit.ms(kit.p90(lookups))} ms (in process)")
    print(f"the long list's cost to a new address's answer: {kit.ms(cost)} ms; goal <= "
          f"{kit.ms(GOAL)} ms: {'met' if cost <= GOAL else 'MISSED'}")
    slower = kit.median(times["suppressed"]) - kit.median(times["long"])
    print(f"a suppressed address's answer against a new one's: {kit.ms(slower)} ms "
          f"({'no slower' if slower <= 0.001 else 'SLOWER'})")
    print(f"load at end {kit.load()}")


if __name__ == "__main__":
    main()
