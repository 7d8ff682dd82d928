"""The sender as cron runs it: real ``vykhukhol cron`` processes against a real
SMTP server, slow servers, two runs at once and ``kill -9`` (docs/design/run.md#run-killed,
docs/design/run.md#run-failures, docs/design/journal.md#journal-letters).

Every run here is a separate Python process started the way a crontab line
would start it; the only thing shared with the test is the data directory and
the aiosmtpd server on 127.0.0.1. What a test counts as "sent" is what the
server received, per recipient, so a duplicate shows up as a count of two.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vykhukhol.newsletters import read_rows
from vykhukhol.services import due_summary
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import parse_line
from vykhukhol.states import LedgerState

LIB = Path(__file__).resolve().parents[2] / "lib"
ADMIN = "admin@example.org"
LEASE = re.compile(r"^run ([0-9a-f]{16})$")
DOWN = "script is down by hoster"
CANNOT_LAUNCH = "not can launch the sender"


# --- helpers ---------------------------------------------------------------------


def env() -> dict[str, str]:
    values = dict(os.environ)
    values["PYTHONPATH"] = str(LIB) + os.pathsep + values.get("PYTHONPATH", "")
    values.pop("VYKHUKHOL_DATA", None)
    return values


def start_cron(site: Any) -> subprocess.Popen:
    """One ``vykhukhol cron`` process, as a crontab line starts it."""
    return subprocess.Popen(
        [sys.executable, "-m", "vykhukhol", "--data", str(site.root), "cron"],
        env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float = 60) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"cron exited {proc.returncode}: {err}"
    return out


def cron(site: Any) -> tuple[str, float]:
    """Run the sender once; (its report, wall-clock seconds)."""
    began = time.monotonic()
    out = finish(start_cron(site))
    return out, time.monotonic() - began


def lease_of(report: str) -> str:
    match = LEASE.match(report.splitlines()[0])
    assert match, f"the report does not open with 'run <lease>': {report!r}"
    return match.group(1)


def outcome_of(report: str) -> str:
    last = report.splitlines()[-1]
    assert last.startswith("ended "), report
    return last.rsplit(": ", 1)[1]


def delivered(smtp_server: Any) -> Counter:
    """Letters the server accepted, per list recipient (the admin's alerts left out)."""
    return Counter(rcpt for got in list(smtp_server.handler.received)
                   for rcpt in got.rcpt_tos if rcpt != ADMIN)


def to_admin(smtp_server: Any) -> list[str]:
    return [str(got.message["Subject"]) for got in list(smtp_server.handler.received)
            if ADMIN in got.rcpt_tos]


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def kill_after(proc: subprocess.Popen, smtp_server: Any, letters: int) -> None:
    """``kill -9`` the run just after the server has accepted ``letters`` list letters."""
    try:
        wait_until(lambda: sum(delivered(smtp_server).values()) >= letters or proc.poll() is not None,
                   30, f"{letters} letters")
        time.sleep(0.15)  # into the next letter's DATA wait: that letter is in flight
        assert proc.poll() is None, f"the run ended before it could be killed: {proc.communicate()}"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(10)  # reap it: a zombie's pid still answers kill(pid, 0)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    time.sleep(0.3)  # let the server notice the dropped connection


def log_lines(site: Any) -> list[list[str]]:
    return [line.split("\t", 3) for line in site.log().splitlines() if line]


def lines_of(site: Any, lease: str) -> list[str]:
    return [parts[3] for parts in log_lines(site) if parts[1] == lease]


def course(site: Any, name: str = "course") -> None:
    site.service(name, letters=[("Lesson 1 for {{ email }}", "1m", "Hello {{ name }}.\n"),
                                ("Lesson 2", "30d", "Later.\n")])


def subscribe_many(site: Any, service: str, emails: list[str]) -> None:
    for email in emails:
        site.subscriber(service, email, ago=3600)  # confirmed an hour ago: letter 1 is due
    # Lines written behind the sender's back, as by FTP: drop its next-due summary.
    due_summary.forget_due(site.data, service)


def assert_subscriber_file_is_whole(site: Any, service: str, expected: int) -> None:
    listing = site.cli("subscriber", "list", service)
    lines = [line for line in listing.stdout.splitlines() if line and not line.startswith("#")]
    assert len(lines) == expected
    for line in lines:
        parse_line(line)  # raises on a torn or malformed line
    status = site.cli("status").stdout
    assert "malformed" not in status, status
    path = site.data.root / "services" / "main" / service / "subscribers.txt"
    assert subs.malformed(path) == []


# --- step 7: the clock ---------------------------------------------------------------


@pytest.mark.slow
def test_a_run_against_a_slow_server_ends_inside_time_limit_and_the_next_run_goes_on(
        site: Any, smtp_server: Any) -> None:
    """A slow server makes a run stop early, inside time_limit; the next run goes on without repeats."""
    site.use_smtp(smtp_server.port)
    site.set(time_limit="10s", serial_per_run=50)
    course(site)
    emails = [f"slow{i:02}@example.org" for i in range(30)]
    subscribe_many(site, "course", emails)
    smtp_server.handler.data_delay = 2.0

    first, seconds = cron(site)
    assert seconds < 10, f"the run took {seconds:.1f}s with time_limit 10s"
    after_first = delivered(smtp_server)
    assert 0 < sum(after_first.values()) < 30, f"the server accepted no letter; the run said:\n{first}"
    assert outcome_of(first) == "time", first

    second, seconds = cron(site)
    assert seconds < 10, f"the second run took {seconds:.1f}s with time_limit 10s"
    after_second = delivered(smtp_server)
    assert sum(after_second.values()) > sum(after_first.values())
    assert lease_of(second) != lease_of(first)

    assert max(after_second.values()) == 1, f"a subscriber got letter 1 twice: {after_second}"
    people = site.subscribers("course")
    assert {e for e in emails if people[e].sent == 1} == set(after_second)
    assert all(people[e].sent == 0 for e in emails if e not in after_second)
    subjects = Counter(str(got.message["Subject"]) for got in smtp_server.handler.received)
    assert all(subject.startswith("Lesson 1 for ") for subject in subjects)


def test_a_server_that_never_answers_data_costs_one_letter_in_doubt_not_the_run(
        site: Any, smtp_server: Any) -> None:
    """A DATA reply that never comes ends the run inside time_limit; that letter is in doubt, never re-sent."""
    site.use_smtp(smtp_server.port)
    site.set(time_limit="10s")
    course(site)
    site.subscriber("course", "patient@example.org", ago=7200)  # waiting longest: goes first
    site.subscriber("course", "next@example.org", ago=3600)
    smtp_server.handler.data_delay = 30.0
    bodies_seen: list[str] = []  # what reached the server, answered or not
    answer = smtp_server.handler.handle_DATA

    async def record_then_answer(server: Any, session: Any, envelope: Any) -> str:
        bodies_seen.extend(envelope.rcpt_tos)
        return await answer(server, session, envelope)

    smtp_server.handler.handle_DATA = record_then_answer

    report, seconds = cron(site)
    # No SMTP command may wait past 80 % of time_limit (sender.HARD_SHARE); the
    # process itself needs a moment more to fold, release and exit.
    assert seconds < 10 * 0.9, f"the run took {seconds:.1f}s with time_limit 10s"
    assert outcome_of(report) == "temporary failure", report
    assert re.search(r"patient@example\.org.*in doubt", report), report
    assert delivered(smtp_server) == Counter()
    assert bodies_seen == ["patient@example.org"]
    assert site.subscribers("course")["patient@example.org"].sent == 1  # counted, in doubt
    assert site.subscribers("course")["next@example.org"].sent == 0  # the run stopped there

    smtp_server.handler.data_delay = 0.0
    report, _ = cron(site)
    assert delivered(smtp_server) == Counter({"next@example.org": 1}), report
    assert bodies_seen == ["patient@example.org", "next@example.org"]  # never sent twice
    assert {e: s.sent for e, s in site.subscribers("course").items()} == {
        "patient@example.org": 1, "next@example.org": 1}


# --- step 8: two runs at once ------------------------------------------------------------


@pytest.mark.slow
def test_two_runs_started_at_once_never_send_one_letter_twice(site: Any, smtp_server: Any) -> None:
    """Runs started at the same instant share the DB lock: one sends, the other alerts and sends nothing."""
    site.use_smtp(smtp_server.port)
    course(site)
    smtp_server.handler.data_delay = 0.3
    rounds, per_round, overlapped = 8, 8, 0
    for number in range(rounds):
        emails = [f"r{number}-{i}@example.org" for i in range(per_round)]
        subscribe_many(site, "course", emails)
        procs = [start_cron(site), start_cron(site)]
        reports = [finish(proc) for proc in procs]
        leases = [lease_of(report) for report in reports]

        got = delivered(smtp_server)
        assert max(got.values()) == 1, f"round {number}: a letter went twice: {got}"
        assert {e: got[e] for e in emails} == dict.fromkeys(emails, 1), f"round {number}: {reports}"

        order = [parts[1] for parts in log_lines(site) if parts[1] in leases]
        first_ended = max(i for i, lease in enumerate(order) if lease == order[0])
        second_began = order.index(next(lease for lease in leases if lease != order[0]))
        if second_began > first_ended:
            continue  # one run ended before the other began: nothing to refuse
        overlapped += 1
        refused = [r for r in reports if CANNOT_LAUNCH in r]
        assert len(refused) == 1, f"round {number}: overlapping runs, reports:\n" + "\n".join(reports)
        assert outcome_of(refused[0]) == "busy"
        assert not re.search(r"^sent \d+ for", refused[0], re.M)
        refusing = lease_of(refused[0])
        assert any(CANNOT_LAUNCH in line for line in lines_of(site, refusing))
    assert overlapped >= rounds // 2, f"only {overlapped} of {rounds} rounds overlapped"
    assert CANNOT_LAUNCH in to_admin(smtp_server)  # mailed once, then throttled for the hour
    assert sum(delivered(smtp_server).values()) == rounds * per_round


# --- step 7: a killed run, and durability ------------------------------------------------------


def test_a_run_killed_mid_batch_blocks_the_sender_until_the_mode_is_toggled(
        site: Any, smtp_server: Any) -> None:
    """After kill -9 the sender blocks itself until debug→working; then no letter goes twice."""
    site.use_smtp(smtp_server.port)
    course(site)
    emails = [f"k{i:02}@example.org" for i in range(20)]
    subscribe_many(site, "course", emails)
    smtp_server.handler.data_delay = 0.5

    victim = start_cron(site)
    kill_after(victim, smtp_server, 3)
    lock = site.data.root / "services" / "main"
    assert (lock / "db.busy").exists() and not (lock / "db.free").exists()
    assert str(victim.pid) in (lock / "db.busy").read_text()
    at_kill = delivered(smtp_server)
    assert 3 <= sum(at_kill.values()) < 20
    site.set(time_limit="5s")

    # The lock names a dead pid of this host: the next run knows at once.
    smtp_server.handler.data_delay = 0.0
    for attempt in range(3):
        report, _ = cron(site)
        assert outcome_of(report) == "blocked", report
        assert DOWN in report
        assert not re.search(r"^sent \d+ for", report, re.M)
        assert DOWN in "\n".join(lines_of(site, lease_of(report)))
        assert delivered(smtp_server) == at_kill, f"blocked run {attempt} sent letters"
    assert to_admin(smtp_server).count(DOWN) == 1  # mailed once, then throttled for the hour
    assert "blocked: no" not in site.cli("status").stdout

    site.cli("mode", "debug")
    switched = site.cli("mode", "working").stdout
    assert "cleared the self-block" in switched
    assert "cleared the stale lock" in switched

    for _ in range(5):
        report, _ = cron(site)
        assert outcome_of(report) != "blocked", report
        if all(s.sent == 1 for s in site.subscribers("course").values()):
            break
    got = delivered(smtp_server)
    assert max(got.values()) == 1, f"a subscriber got letter 1 twice: {got}"
    assert set(got) <= set(emails)
    assert 19 <= sum(got.values()) <= 20
    people = site.subscribers("course")
    assert all(people[e].sent == 1 for e in emails)  # in doubt counts as sent
    in_doubt = [line for parts in log_lines(site) if "in doubt" in (line := parts[3])]
    if sum(got.values()) == 19:
        [missing] = set(emails) - set(got)
        assert any(missing in line for line in in_doubt), in_doubt
    assert len(in_doubt) <= 1, in_doubt
    assert not (lock / "db.busy").exists()
    assert not (site.data.root / "state" / "db-main.journal").exists()
    assert_subscriber_file_is_whole(site, "course", 20)


def test_a_newsletter_run_killed_mid_batch_finishes_after_recovery_without_repeats(
        site: Any, smtp_server: Any) -> None:
    """A newsletter killed mid-batch: blocked, then resumed; its ledger ends sent or in doubt, no repeats."""
    site.use_smtp(smtp_server.port)
    site.service("news")  # a plain news list: no series
    emails = [f"n{i:02}@example.org" for i in range(20)]
    subscribe_many(site, "news", emails)
    site.set(news_per_run=500)
    job = site.cli("newsletter", "create", "--services", "news", "--subject", "Edition 1",
                   "--body", "Hello {{ email }}.").stdout.split()[0]
    ledger = site.data.job(job, "list")
    smtp_server.handler.data_delay = 0.5

    victim = start_cron(site)
    kill_after(victim, smtp_server, 3)
    at_kill = delivered(smtp_server)
    assert (site.data.root / "newsletters" / "news.busy").exists()

    smtp_server.handler.data_delay = 0.0
    report, _ = cron(site)
    assert outcome_of(report) == "blocked" and DOWN in report, report
    assert delivered(smtp_server) == at_kill
    assert all(row.state is LedgerState.PENDING for row in read_rows(ledger))  # nothing folded yet

    site.cli("mode", "debug")
    site.cli("mode", "working")
    site.set(news_per_run=1)  # one letter, so the folded ledger can be read mid-job
    report, _ = cron(site)
    assert outcome_of(report) != "blocked", report
    rows = list(read_rows(ledger))
    states = [row.state for row in rows]
    done = [row for row in rows if row.state is not LedgerState.PENDING]
    assert states == [row.state for row in done] + [LedgerState.PENDING] * (20 - len(done))
    assert {row.state for row in done} <= {LedgerState.SENT, LedgerState.IN_DOUBT}
    assert sum(row.state is LedgerState.IN_DOUBT for row in done) <= 1
    got = delivered(smtp_server)
    assert len(done) >= sum(at_kill.values()) + 1
    for row in done:
        if row.state is LedgerState.SENT:
            assert got[row.email] == 1, row
        else:
            assert got[row.email] <= 1, row

    site.set(news_per_run=500)
    report, _ = cron(site)
    assert not site.data.job(job, "job").exists()
    assert not ledger.exists() and not site.data.job(job, "letter").exists()
    got = delivered(smtp_server)
    assert max(got.values()) == 1, f"a recipient got the newsletter twice: {got}"
    assert 19 <= sum(got.values()) <= 20
    [finished] = [line for line in site.log().splitlines()
                  if f"newsletter {job} finished" in line]
    sent, doubt = (int(n) for n in re.search(r"(\d+) handed over, 0 failed, 0 skipped, (\d+) in doubt",
                                             finished).groups())
    assert sent + doubt == 20 and doubt <= 1
    assert sent == sum(got.values()) or (sent == 19 and sum(got.values()) == 20)
    assert "Выпуск завершён: Edition 1" in to_admin(smtp_server)
    assert not (site.data.root / "newsletters" / "news.busy").exists()


def test_a_busy_lock_older_than_time_limit_blocks_even_while_its_process_lives(site: Any) -> None:
    """A busy lock older than time_limit means its run was killed, even if the pid it names is alive."""
    course(site)
    subscribe_many(site, "course", ["old@example.org"])
    site.set(time_limit="5s")
    folder = site.data.root / "services" / "main"
    (folder / "db.free").rename(folder / "db.busy")
    (folder / "db.busy").write_text(f"feedfacefeedface\t{os.getpid()}\t{socket.gethostname()}")
    old = time.time() - 60
    os.utime(folder / "db.busy", (old, old))

    report, _ = cron(site)
    assert outcome_of(report) == "blocked" and DOWN in report, report
    assert site.subscribers("course")["old@example.org"].sent == 0
    assert [str(m["Subject"]) for m in site.outbox()] == [DOWN]


def test_a_busy_lock_of_a_live_young_run_is_refused_not_blocked(site: Any) -> None:
    """A busy lock younger than time_limit held by a live process: the run sends nothing and alerts."""
    course(site)
    subscribe_many(site, "course", ["young@example.org"])
    folder = site.data.root / "services" / "main"
    (folder / "db.free").rename(folder / "db.busy")
    (folder / "db.busy").write_text(f"feedfacefeedface\t{os.getpid()}\t{socket.gethostname()}")

    report, _ = cron(site)
    assert outcome_of(report) == "busy" and CANNOT_LAUNCH in report, report
    assert "blocked: no" in site.cli("status").stdout
    assert site.subscribers("course")["young@example.org"].sent == 0
    assert (folder / "db.busy").exists()  # not taken from its holder


def test_a_lock_caught_between_its_rename_and_its_stamp_is_busy_not_dead(site: Any) -> None:
    """A run that looks at a lock another run has just renamed to busy, not yet stamped, does not block."""
    course(site)
    site.set(time_limit="30s")
    first, _ = cron(site)  # an earlier cron run: it unstamps the lock as it frees it
    folder = site.data.root / "services" / "main"
    assert lease_of(first) and (folder / "db.free").read_text() == ""
    subscribe_many(site, "course", ["racer@example.org"])
    five_minutes_ago = time.time() - 300  # crontab */5: the previous run's stamp is that old
    os.utime(folder / "db.free", (five_minutes_ago, five_minutes_ago))

    # Another cron run, alive, is inside RenameLock.acquire: it has renamed
    # free → busy and is about to write its own stamp. That is this instant:
    (folder / "db.free").rename(folder / "db.busy")
    report, _ = cron(site)
    assert outcome_of(report) == "busy" and CANNOT_LAUNCH in report, (
        "a live run's fresh lock was taken for a dead one:\n" + report)
    assert "blocked: no" in site.cli("status").stdout
    assert site.subscribers("course")["racer@example.org"].sent == 0


# --- the report and the log ---------------------------------------------------------------------


def test_cron_in_debug_mode_prints_its_report_and_exits_0(fresh_site: Any) -> None:
    """`vykhukhol cron` prints a report opening with `run <lease>` and exits 0 though it sent nothing."""
    before = len(log_lines(fresh_site))
    report, _ = cron(fresh_site)
    lease = lease_of(report)
    assert report.splitlines()[1].startswith("started ")
    assert outcome_of(report) == "off"
    assert "Script is off" in report
    written = log_lines(fresh_site)[before:]
    assert written, "the run wrote nothing to the run log"
    assert all(parts[1] == lease for parts in written), written
    assert [str(m["Subject"]) for m in fresh_site.outbox()] == ["Script is off"]


def test_every_log_line_and_letter_of_a_cron_run_carries_its_lease(site: Any, smtp_server: Any) -> None:
    """A working run writes its lease on each of its log lines and in each letter's X-Vykhukhol-Run."""
    site.use_smtp(smtp_server.port)
    course(site)
    subscribe_many(site, "course", ["a@example.org", "b@example.org"])
    before = len(log_lines(site))
    report, _ = cron(site)
    lease = lease_of(report)
    assert "handed over 2 for course" in report
    written = log_lines(site)[before:]
    assert len(written) >= 2
    assert all(parts[1] == lease for parts in written), written
    assert {got.message["X-Vykhukhol-Run"] for got in smtp_server.handler.received} == {lease}
