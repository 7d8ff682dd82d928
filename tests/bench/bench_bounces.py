"""Bounces per second: one default ``vykhukhol cron`` reading a Dovecot mailbox.

``python tests/bench/bench_bounces.py [--bounces 1000] [--subscribers 10k] [--rounds 3]``

A service of ``--subscribers`` (nothing due: the run only reads bounces), and
``--bounces`` permanent bounces of real servers (flufl.bounce's corpus
retargeted at subscribers, as in tests/integration/test_bounces.py) in the
inbox of a Dovecot started for the bench (imaps, the self-signed
certificate given by mail.bounce_cafile). One ``vykhukhol cron`` subprocess
with the default time_limit (30 s: the reading may take a quarter, 7.5 s)
reads, classifies, applies and moves them. Goal: all of them inside that
one run's slice.

Beside it, the baseline: a bare imaplib loop over the same messages and
server (fetch 100 at a time, move to another folder; no classification, no
files) — what reading the mailbox alone costs — and flufl.bounce's
classification alone, in process.
"""

from __future__ import annotations

import argparse
import imaplib
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from support import (
    benchkit,  # noqa: E402
    dovecotkit,  # noqa: E402
)
from vykhukhol import returntag as tags  # noqa: E402
from vykhukhol.bounces.reading.classify import classify  # noqa: E402
from vykhukhol.settings import load  # noqa: E402

CORPUS = benchkit.TESTS / "data" / "bounces"
REPORTS = [("flufl-dsn_01.txt", "userx@example.com"), ("flufl-postfix_01.txt", "xxxxx@local.ie"),
           ("flufl-qmail_01.txt", "userx@example.de"), ("flufl-exim_01.txt", "userx@its.example.nl"),
           ("flufl-yahoo_01.txt", "userx@example.com")]


def messages(secret: bytes, count: int) -> list[bytes]:
    out = []
    for i in range(count):
        address = f"user{i * 7}@example.org"
        corpus, failed = REPORTS[i % len(REPORTS)]
        sender = tags.bounce_address("list@example.org", "+", tags.make(secret, "s", "course", address))
        raw = (CORPUS / corpus).read_bytes().replace(failed.encode(), address.encode())
        out.append(f"Delivered-To: {sender}\n".encode() + raw)
    return out


def bare_loop(server: dovecotkit.Dovecot) -> float:
    """Seconds a plain imaplib client takes to fetch and move the inbox."""
    started = time.monotonic()
    imap = imaplib.IMAP4_SSL("127.0.0.1", server.ports["imaps"],
                             ssl_context=ssl.create_default_context(cafile=str(server.cafile)))
    imap.login(dovecotkit.USER, dovecotkit.PASSWORD)
    imap.select("INBOX")
    imap.create("Bare")
    uids = imap.uid("SEARCH", None, "ALL")[1][0].split()
    for start in range(0, len(uids), 100):
        chunk = b",".join(uids[start:start + 100]).decode()
        imap.uid("FETCH", chunk, "(BODY.PEEK[])")
        imap.uid("MOVE", chunk, "Bare")
    imap.logout()
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bounces", type=int, default=1000)
    parser.add_argument("--subscribers", default="10k")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tmp", default=None)
    args = parser.parse_args()
    subscribers = benchkit.parse_sizes(args.subscribers)[0]
    assert args.bounces * 7 < subscribers, "each bounce needs its own subscriber"
    benchkit.banner(f"bounces/s: {args.bounces} bounces, {subscribers} subscribers")
    server = dovecotkit.start()
    rows = []
    try:
        for round_ in range(args.rounds):
            with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
                data = benchkit.make_data(
                    Path(tmp) / "data", mail__from_email="list@example.org",
                    mail__bounce_mailbox=server.url("imaps"), mail__bounce_cafile=str(server.cafile))
                service = benchkit.add_service(data, "course", letters=(("Lesson 1", "30d", "Hi.\n"),))
                benchkit.write_subscribers(service.subscribers_path, subscribers, "due")
                raws = messages(load(data.settings).secret, args.bounces)
                for raw in raws:
                    server.deliver(raw)
                started = time.monotonic()
                result = subprocess.run(
                    [sys.executable, "-m", "vykhukhol", "--data", str(data.root), "cron"],
                    capture_output=True, text=True, env=benchkit.subprocess_env(), timeout=120)
                wall = time.monotonic() - started
                said = [line for line in result.stdout.splitlines() if line.startswith("bounces:")]
                read = int(said[0].split()[1]) if said else 0
                seconds = float(said[0].split(" in ")[1].split("s")[0]) if said else float("nan")
                left = len(server.messages())
                for raw in raws:  # the same messages again, for the bare client
                    server.deliver(raw)
                bare = bare_loop(server)
                started = time.monotonic()
                for raw in raws:
                    classify(raw, "+")
                classifying = time.monotonic() - started
                rows.append((round_ + 1, read, left, f"{seconds:.2f}", f"{read / seconds:.0f}",
                             f"{wall:.2f}", f"{args.bounces / bare:.0f}",
                             f"{args.bounces / classifying:.0f}", benchkit.load()))
                for folder in ("Processed", "Bare"):
                    path = server.maildir / f".{folder}"
                    for sub in ("new", "cur"):
                        for file in (path / sub).glob("*") if (path / sub).is_dir() else []:
                            file.unlink()
    finally:
        server.stop()
    print(benchkit.table(("round", "read", "left", "reading s", "ours/s", "run wall s",
                          "bare imaplib/s", "classify only/s", "load"), rows))
    print("goal: every bounce read and applied inside one default run's slice "
          "(a quarter of time_limit 30 s = 7.5 s)")


if __name__ == "__main__":
    main()
