"""Kill campaign, bounce phase: ``kill -9`` while real ``vykhukhol cron`` runs
read a real Dovecot mailbox full of bounces (a kill mid-way re-reads,
never double-counts: docs/design/journal.md#journal-bounces).

Before each run a wave of bounces arrives, one each for a few subscribers:
soft failures (a full mailbox), each about a different letter (its
Message-ID), and now and then a second report about the same letter, which
counts nothing (docs/design/run.md#run-failures); three different letters delete and suppress.
Runs are started and killed at random moments — while fetching, classifying, writing the journal,
rewriting a subscriber file (every other kill waits for a batch whose
journal line is written and whose effects are under way) or moving the batch to ``Processed`` — each kill
followed by what a user would do (``mode debug``, ``mode working``). Then
runs go on until the mailbox is empty.

In the end: every subscriber's failure count is exactly its number of
different letters bounced (or it is deleted and suppressed, for three),
every message is in ``Processed``,
every message has one result in bounces.log, and every data file parses.

Short version (CI): 80 subscribers, 10 waves of 12 bounces, 10 kills. Long:
``VYKHUKHOL_LONG=1 python -m pytest tests/faults/test_kill_bounces.py -s`` —
400 subscribers, 60 waves of 15 bounces, 60 kills.
"""

from __future__ import annotations

import time

from support.dovecotkit import dovecot_fixture, dovecot_server_fixture  # noqa: E402,F401 - fixtures
from support.faultkit import assert_data_parses, cron, kill_now, recover, scale, start_cron
from vykhukhol import returntag as tags  # noqa: E402

SUBSCRIBERS = scale(80, 400)
WAVE = scale(12, 15)           # bounces delivered before each run
KILLS = scale(10, 60)


def soft_dsn(failed: str, sender: str, letter: int, mta: str) -> bytes:
    """An RFC 3464 report of a full mailbox about letter number ``letter``."""
    return (f"Delivered-To: {sender}\nFrom: MAILER-DAEMON@{mta}\nTo: {sender}\n"
            "Subject: Undelivered Mail Returned to Sender\nMIME-Version: 1.0\n"
            'Content-Type: multipart/report; report-type=delivery-status; boundary="B"\n\n'
            "--B\nContent-Type: text/plain\n\nNot delivered.\n\n"
            f"--B\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; {mta}\n\n"
            f"Final-Recipient: rfc822; {failed}\nAction: failed\nStatus: 5.2.2\n"
            f"Diagnostic-Code: smtp; 552 5.2.2 <{failed}>: mailbox full\n\n"
            "--B\nContent-Type: text/rfc822-headers\n\n"
            f"To: {failed}\nMessage-ID: <{letter}.{failed}>\n\n--B--\n").encode()
LESSONS = [("Lesson 1", "0s", "Hello."), ("Lesson 2", "30d", "Again.")]


def test_killed_bounce_readers_neither_lose_nor_double_a_count(site, dovecot, rng):
    site.set(mail__from_email="list@example.org", mail__bounce_mailbox=dovecot.url("imap"),
             time_limit="20s")
    site.service("course", letters=LESSONS)
    settings = site.settings()
    expected = {f"reader{i}@example.net": 0 for i in range(SUBSCRIBERS)}
    for address in expected:  # lesson 1 a minute ago: nothing due, no success resets a count
        site.subscriber("course", address, sent=1, last_sent_ago=60)

    reports = [0]

    def wave() -> None:
        """A bounce for each of a few subscribers, each about a different letter,
        and for some a second report about the letter before (counts nothing)."""
        for address in rng.sample(sorted(a for a, n in expected.items() if n < 3), WAVE):
            sender = tags.bounce_address("list@example.org", "+",
                                         tags.make(settings.secret, "s", "course", address))
            dovecot.deliver(soft_dsn(address, sender, expected[address], "mx.example.net"))
            reports[0] += 1
            if expected[address] and rng.random() < 0.2:
                dovecot.deliver(soft_dsn(address, sender, expected[address] - 1, "mx2.example.net"))
                reports[0] += 1
            expected[address] += 1

    kills = in_window = 0
    for round_ in range(KILLS):
        wave()
        proc = start_cron(site.root)
        if round_ % 2 == 0:  # strike inside a batch: its journal line written, "done" not yet
            in_window += wait_for_open_batch(site, proc)
            time.sleep(rng.uniform(0, 0.03))  # before, during or after a rewrite
        else:
            time.sleep(rng.uniform(0.2, 1.2))
        kills += kill_now(proc)
        recover(site.root)
        assert_data_parses(site.data)
    for _ in range(10):
        if not dovecot.messages():
            break
        result = cron(site.root)
        assert "Traceback" not in result.stderr
    total = reports[0]
    assert kills >= KILLS // 2 and in_window >= KILLS // 4, (kills, in_window)

    assert dovecot.messages() == []
    assert len(dovecot.messages("Processed")) == total
    left = site.subscribers("course")
    suppressed = (site.data.root / "suppressed.txt").read_text() \
        if (site.data.root / "suppressed.txt").exists() else ""
    for address, count in expected.items():
        if count >= 3:
            assert address not in left, address
            assert suppressed.count(f"{address}\t") == 1, address
        else:
            assert left[address].failures == count, (address, left[address].failures, count)
    results: dict[str, str] = {}
    for line in (site.data.log / "bounces.log").read_text().splitlines():
        parts = line.split("\t")
        if len(parts) == 7 and parts[2] == "permanent":
            results[parts[1]] = parts[4]
    assert len(results) == total
    from vykhukhol.bounces import record  # the status chart's bounces: each one once too
    assert sum(record.per_day(site.data).values()) == total
    assert_data_parses(site.data)
    print(f"\n{total} bounces ({sum(expected.values())} different letters), {kills} kills, "
          f"{in_window} of them inside a batch")


def wait_for_open_batch(site, proc, timeout: float = 10) -> bool:
    """Wait until the reader's journal ends with a batch not done yet (its effects
    under way); True if it did before the run ended."""
    path = site.data.root / "bounces" / "processed.txt"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with open(path, "rb") as file:
                file.seek(max(0, path.stat().st_size - 200_000))
                last = file.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
        except OSError:
            last = b""
        if last.startswith((b"batch\t", b"before\t")):
            return True
        time.sleep(0.001)
    return False
