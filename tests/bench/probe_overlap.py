"""Does a busy SMTP client overlap with a local SMTP server on this machine?

bench_throughput.py compares our run with a bare smtplib loop against an
aiosmtpd server on the same machine. Our run does ~0.3 ms of CPU work per
letter (making the next letter, journalling) and does it while the server
handles the current one, which pays off only if the server really works in
parallel with a busy client. This probe sends letters over one connection
and, after each letter's text, either spins or sleeps for a while before
reading the answer: if the server works meanwhile, the answer is waiting by
then (a short "answer wait"); if it does not, the wait stays as long as with
no pause at all.

    python tests/bench/probe_overlap.py [--letters 1000]
"""

from __future__ import annotations

import argparse
import smtplib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from support import benchkit as kit  # noqa: E402

PAYLOAD = b"Subject: probe\r\n\r\n" + b"y" * 2400 + b"\r\n.\r\n"


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--letters", type=int, default=1000)
    args = parser.parse_args()
    kit.banner(f"probe_overlap: {args.letters} letters per row")
    rows = []
    with kit.SmtpSink() as sink:
        conn = smtplib.SMTP("127.0.0.1", sink.port, timeout=20)
        conn.ehlo()
        for how, pause in (("none", 0.0), ("spin", 130e-6), ("sleep", 130e-6),
                           ("spin", 300e-6), ("sleep", 300e-6)):
            began, waited = time.perf_counter(), 0.0
            for _ in range(args.letters):
                for verb, arg in (("mail", "FROM:<a@example.org>"), ("rcpt", "TO:<b@example.org>"),
                                  ("data", "")):
                    conn.putcmd(verb, arg)
                    conn.getreply()
                conn.send(PAYLOAD)
                if how == "spin":
                    spin(pause)
                elif how == "sleep":
                    time.sleep(pause)
                t = time.perf_counter()
                conn.getreply()
                waited += time.perf_counter() - t
            per = (time.perf_counter() - began) / args.letters
            rows.append((how, f"{pause * 1e6:.0f}", f"{per * 1e6:.0f}",
                         f"{waited / args.letters * 1e6:.0f}", kit.load()))
        conn.quit()
    print(kit.table(["after the text", "pause µs", "per letter µs", "answer wait µs",
                     "load 1/5/15"], rows))
    print("\nAn answer wait that stays long after a spin but drops after a sleep means the "
          "server only works while the client is blocked: client CPU work adds to the "
          "letter's time instead of overlapping with the server's.")


if __name__ == "__main__":
    main()
