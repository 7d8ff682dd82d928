"""Letters per second of a newsletter run to a relay 10 ms away, with one and
several SMTP connections, pipelined or not (docs/reference/transports.md#transports-pipelining).

The relay is aiosmtpd offering PIPELINING (RFC 2920; its ``handle_EHLO`` hook
adds the keyword, and it reads pipelined commands from its buffer in order);
in front of it a small asyncio TCP proxy holds every chunk 10 ms in each
direction — a simulated network round trip of 20 ms (the kernel here has no
netem). Both run in one separate process.

Measured, each a real ``vykhukhol cron`` subprocess sending one newsletter to
``--letters`` recipients through the proxy, against the baseline measured in
the same run: a bare serial smtplib loop (``sendmail`` per letter, one
connection) over the same proxy.

    python tests/bench/bench_relay.py [--letters 400] [--delay 0.010]
    python tests/bench/bench_relay.py --dkim-rounds 3 [--letters 400] [--connections 8]

Goals (whole process against the whole loop): 8 connections + pipelining
≥ 5 × bare; 1 connection + pipelining ≥ 1.5 × bare. The sending phase (first
to last letter at the server) is printed beside, start-up and the final
rewrite left out.

With ``--dkim-rounds N`` it measures instead what DKIM signing costs through
the relay: N rounds of the same newsletter over
``--connections`` pipelining connections with signing off, then on (a key
from `vykhukhol dkim keygen`), alternating; the medians and their ratio.
Goal: on ≥ 0.90 × off (signing costs at most 10%).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import smtplib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from support import benchkit as kit  # noqa: E402
from vykhukhol import newsletters  # noqa: E402

RELAY = r"""
import asyncio, json, sys, threading, time  # noqa: E402
from aiosmtpd.controller import Controller  # noqa: E402

smtp_port, proxy_port, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])

class Sink:
    def __init__(self):
        self.count, self.first, self.last = 0, None, None
        self.pipelining = True
        self.lock = threading.Lock()

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        session.host_name = hostname
        if self.pipelining:
            return [*responses[:-1], "250-PIPELINING", responses[-1]]
        return responses

    async def handle_DATA(self, server, session, envelope):
        moment = time.time()
        with self.lock:
            self.count += 1
            if self.first is None:
                self.first = moment
            self.last = moment
        return "250 Message accepted"

async def pipe(reader, writer):
    # every chunk leaves `delay` seconds after it came, in order
    queue = asyncio.Queue()
    async def read():
        while True:
            chunk = await reader.read(65536)
            await queue.put((time.monotonic() + delay, chunk))
            if not chunk:
                return
    async def write():
        while True:
            due, chunk = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if not chunk:
                writer.close()
                return
            writer.write(chunk)
            await writer.drain()
    try:
        await asyncio.gather(read(), write())
    except (ConnectionError, OSError):
        writer.close()

async def client(reader, writer):
    up_reader, up_writer = await asyncio.open_connection("127.0.0.1", smtp_port)
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer),
                         return_exceptions=True)

sink = Sink()
controller = Controller(sink, hostname="127.0.0.1", port=smtp_port)
controller.start()

def proxy():
    async def main():
        server = await asyncio.start_server(client, "127.0.0.1", proxy_port)
        async with server:
            await server.serve_forever()
    asyncio.run(main())

threading.Thread(target=proxy, daemon=True).start()
time.sleep(0.3)
print("ready", flush=True)
for line in sys.stdin:
    command = line.split()
    if command[0] == "stats":
        with sink.lock:
            print(json.dumps({"count": sink.count, "first": sink.first, "last": sink.last}),
                  flush=True)
    elif command[0] == "reset":
        with sink.lock:
            sink.count, sink.first, sink.last = 0, None, None
            sink.pipelining = command[1] == "pipelining"
        print("ok", flush=True)
    elif command[0] == "quit":
        break
controller.stop()
"""


class Relay:
    """The relay process: aiosmtpd and, in front of it, the delaying proxy."""

    def __init__(self, delay: float) -> None:
        self.smtp_port, self.port = kit.free_port(), kit.free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-c", RELAY, str(self.smtp_port), str(self.port), str(delay)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=kit.subprocess_env())
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError("the relay did not start")

    def _ask(self, command: str) -> str:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def reset(self, pipelining: bool) -> None:
        self._ask("reset " + ("pipelining" if pipelining else "plain"))

    def stats(self) -> dict:
        return json.loads(self._ask("stats"))

    def stop(self) -> None:
        self._ask("quit")
        self.process.wait(timeout=10)


def prepare(base: Path, port: int, letters: int):
    data = kit.make_data(base / "data", news_per_run=letters, time_limit="3600s",
                         mail__transport="smtp", mail__smtp_host="127.0.0.1",
                         mail__smtp_port=port, mail__from_email="list@example.org")
    service = kit.add_service(data, "news", enabled=False)
    kit.write_subscribers(service.subscribers_path, letters, "due")
    return data


def run_ours(data, relay: Relay, letters: int, connections: int, pipelining: bool,
             lib: Path | None = None) -> dict:
    for job in newsletters.list_jobs(data):
        newsletters.delete(data, job.name)
    for path in data.state.glob("*.journal"):
        path.unlink()
    kit.vykhukhol("--data", str(data.root), "settings", "set", "mail.smtp_connections",
                  str(connections))
    newsletters.create(data, ["news"], "Edition 1",
                       "Hello {{ name or 'friend' }}, here is the news.\n" * 20)
    relay.reset(pipelining)
    began = time.perf_counter()
    env = kit.subprocess_env() if lib is None else kit.servetools.subprocess_env(lib=lib)
    done = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(data.root), "cron"],
                          capture_output=True, text=True, env=env, timeout=1800)
    wall = time.perf_counter() - began
    stats = relay.stats()
    if done.returncode != 0 or stats["count"] < letters:
        raise RuntimeError(f"the run sent {stats['count']} of {letters}:\n{done.stdout}{done.stderr}")
    return {"wall": wall, "rate": letters / wall, "span": stats["last"] - stats["first"],
            "load": kit.load()}


def run_bare(relay: Relay, letters: int) -> dict:
    payload = (b"From: list@example.org\r\nTo: someone@example.org\r\nSubject: Edition 1\r\n\r\n"
               + b"Hello friend, here is the news.\r\n" * 20)
    relay.reset(True)
    began = time.perf_counter()
    conn = smtplib.SMTP("127.0.0.1", relay.port, timeout=20)
    conn.ehlo()
    for i in range(letters):
        conn.sendmail("list@example.org", [f"user{i}@example.org"], payload)
    conn.quit()
    wall = time.perf_counter() - began
    stats = relay.stats()
    return {"wall": wall, "rate": letters / wall, "span": stats["last"] - stats["first"],
            "load": kit.load()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--letters", type=int, default=400, help="newsletter recipients")
    parser.add_argument("--delay", type=float, default=0.010,
                        help="seconds the proxy holds each chunk, each way")
    parser.add_argument("--tmp", default=None, help="folder for the scratch data")
    parser.add_argument("--dkim-rounds", type=int, default=0,
                        help="measure DKIM off against on instead, this many rounds")
    parser.add_argument("--connections", type=int, default=8,
                        help="SMTP connections of the DKIM rounds")
    parser.add_argument("--compare", default=None, metavar="CHECKOUT",
                        help="DKIM rounds: also sign with another checkout's lib/, in turns")
    args = parser.parse_args()
    if args.dkim_rounds:
        dkim_rounds(args)
        return

    kit.banner(f"bench_relay: {args.letters} letters, proxy delay {args.delay * 1000:.0f} ms "
               "each way")
    base = Path(tempfile.mkdtemp(prefix="vyk-bench-relay-", dir=args.tmp))
    relay = Relay(args.delay)
    rows, rates = [], {}
    try:
        data = prepare(base, relay.port, args.letters)
        cases = [("bare smtplib, serial", None, None), ("ours, 1 connection", 1, False),
                 ("ours, 1 connection + pipelining", 1, True),
                 ("ours, 8 connections + pipelining", 8, True)]
        for name, connections, pipelining in cases:
            if connections is None:
                got = run_bare(relay, args.letters)
            else:
                got = run_ours(data, relay, args.letters, connections, pipelining)
            rates[name] = got["rate"]
            rows.append((name, f"{got['wall']:.2f}", f"{got['rate']:.0f}",
                         f"{got['rate'] / rates['bare smtplib, serial']:.2f}",
                         f"{got['span']:.2f}", f"{(args.letters - 1) / got['span']:.0f}",
                         got["load"]))
            print(f"# {name}: {got['wall']:.2f} s", flush=True)
    finally:
        relay.stop()
        shutil.rmtree(base, ignore_errors=True)
    print()
    print(kit.table(["sender", "wall s", "letters/s", "× bare (whole)", "send span s",
                     "letters/s (span)", "load 1/5/15"], rows))
    bare = rates["bare smtplib, serial"]
    one = rates["ours, 1 connection + pipelining"] / bare
    eight = rates["ours, 8 connections + pipelining"] / bare
    print(f"\ngoal 8 connections + pipelining >= 5 x bare: {'met' if eight >= 5 else 'MISSED'} "
          f"({eight:.2f}); 1 connection + pipelining >= 1.5 x bare: "
          f"{'met' if one >= 1.5 else 'MISSED'} ({one:.2f}); load at end {kit.load()}; "
          f"pid {os.getpid()}")


def dkim_rounds(args: argparse.Namespace) -> None:
    kit.banner(f"bench_relay DKIM: {args.letters} letters, {args.connections} connections "
               f"+ pipelining, proxy delay {args.delay * 1000:.0f} ms each way, "
               f"{args.dkim_rounds} rounds")
    base = Path(tempfile.mkdtemp(prefix="vyk-bench-relay-dkim-", dir=args.tmp))
    relay = Relay(args.delay)
    cases = [("DKIM off", "", None), ("DKIM on", "example.org", None)]
    if args.compare:
        cases.append(("DKIM on, " + Path(args.compare).name, "example.org",
                      Path(args.compare) / "lib"))
    rows: list = []
    results: dict[str, list[dict]] = {name: [] for name, _, _ in cases}
    try:
        data = prepare(base, relay.port, args.letters)
        kit.vykhukhol("--data", str(data.root), "dkim", "keygen", "--domain", "example.org")
        for round_no in range(1, args.dkim_rounds + 1):
            for name, domain, lib in cases:
                kit.vykhukhol("--data", str(data.root), "settings", "set", "mail.dkim_domain",
                              domain)
                got = run_ours(data, relay, args.letters, args.connections, True, lib)
                results[name].append(got)
                rows.append((round_no, name, f"{got['wall']:.2f}", f"{got['rate']:.0f}",
                             f"{got['span']:.2f}", f"{(args.letters - 1) / got['span']:.0f}",
                             got["load"]))
                print(f"# round {round_no}, {name}: {got['wall']:.2f} s", flush=True)
    finally:
        relay.stop()
        shutil.rmtree(base, ignore_errors=True)
    print()
    print(kit.table(["round", "sender", "wall s", "letters/s", "send span s",
                     "letters/s (span)", "load 1/5/15"], rows))

    def rate(name: str, key: str) -> float:
        count = args.letters if key == "wall" else args.letters - 1
        return kit.median([count / r[key] for r in results[name]])

    summary = []
    for key, what in (("wall", "whole process"), ("span", "sending phase")):
        off = rate("DKIM off", key)
        summary.append([what, f"{off:.0f}"] + [
            f"{rate(name, key):.0f} ({rate(name, key) / off:.2f})" for name, _, _ in cases[1:]])
    print()
    print(kit.table(["median letters/s"] + [name for name, _, _ in cases]
                    , summary))
    ratio = rate("DKIM on", "wall") / rate("DKIM off", "wall")
    print(f"\ngoal on >= 0.90 x off (whole process): {'met' if ratio >= 0.9 else 'MISSED'} "
          f"({ratio:.2f}); load at end {kit.load()}; pid {os.getpid()}")


if __name__ == "__main__":
    main()
