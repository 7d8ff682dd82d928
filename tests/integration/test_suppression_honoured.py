"""The suppression list honoured everywhere (docs/deliverability/suppression.md#suppression-list): every letter path of a
run (series letters, reminders, newsletters, resent confirmations), imports,
``subscriber add``, a spam complaint piped into ``vykhukhol bounce``, and the
``vykhukhol suppress`` commands as real subprocesses.

Each of these tests fails on the code before the list was honoured: the
suppressed address got its letter, was imported, or was added.
"""

from __future__ import annotations

import csv
import io
from datetime import timedelta

from support.bouncekit import ARF, pipe, pipe_site, tagged_sender
from vykhukhol import newsletters
from vykhukhol.members import suppression, unsent
from vykhukhol.members.suppression import Why
from vykhukhol.timeutil import now

GONE, KEPT = "gone@example.org", "kept@example.org"
HOUR = 3600
LESSONS = [("Lesson 1", "0s", "One."), ("Lesson 2", "1d", "Two.")]


def suppress(site, *emails: str, why: Why = Why.ADMIN) -> None:
    suppression.add_many(site.data, site.settings().secret, emails, why, "test", now())


def to_of(message) -> str:
    return message["To"].addresses[0].addr_spec


def letters_to(site, address: str) -> list:
    return [m for m in site.outbox() if to_of(m) == address]


# --- a run's letters ----------------------------------------------------------------

def test_a_suppressed_subscriber_gets_no_series_letter_and_blocks_no_one(site):
    """Its letter's turn passes unsent, so no run takes it again: the next run's
    one letter (serial_per_run 1) goes to the next subscriber."""
    site.set(serial_per_run=1)
    site.service("course", letters=LESSONS)
    site.subscriber("course", GONE, ago=2 * HOUR)   # due first
    site.subscriber("course", KEPT, ago=HOUR)
    suppress(site, GONE)

    site.run_at()
    assert letters_to(site, GONE) == []
    after = site.subscribers("course")
    assert after[GONE].sent == 1 and after[GONE].failures == 0  # the turn passed
    assert f"{GONE} is on the suppression list; letter 1 skipped" in site.log()
    site.run_at()
    assert [m["Subject"] for m in letters_to(site, KEPT)] == ["Lesson 1"]
    assert letters_to(site, GONE) == []


def test_a_suppressed_unconfirmed_address_gets_no_reminder(site):
    site.service("course", letters=LESSONS)
    site.subscriber("course", GONE, state="new", ago=5 * 86400, last_reminder_ago=4 * 86400)
    site.subscriber("course", KEPT, state="new", ago=5 * 86400, last_reminder_ago=4 * 86400)
    suppress(site, GONE)

    site.run_at()
    assert letters_to(site, GONE) == []
    assert len(letters_to(site, KEPT)) == 1  # the same reminder, to the other
    assert site.subscribers("course")[GONE].reminders == 1  # counted: it leaves when they run out


def test_a_suppressed_recipient_of_a_newsletter_is_skipped_without_using_news_per_run(site):
    site.set(news_per_run=1)
    site.service("news", enabled=False)
    site.subscriber("news", GONE, ago=3 * HOUR)
    site.subscriber("news", KEPT, ago=2 * HOUR)
    site.subscriber("news", "third@example.org", ago=HOUR)
    job = newsletters.create(site.data, ["news"], "Big news", "Hello!")
    suppress(site, GONE)

    site.run_at()
    rows = {r.email: r.state.value for r in newsletters.read_rows(site.data.job(job, "list"))}
    assert rows == {GONE: "skipped", KEPT: "sent", "third@example.org": "pending"}
    assert letters_to(site, GONE) == []


def test_a_confirmation_the_page_could_not_send_is_not_resent_to_a_suppressed_address(site):
    site.service("course", letters=LESSONS)
    for email in (GONE, KEPT):
        site.subscriber("course", email, state="new", ago=HOUR, last_reminder_ago=60)
        unsent.note_unsent(site.data, "course", email, now() - timedelta(hours=1))
    suppress(site, GONE)

    site.run_at()
    assert letters_to(site, GONE) == []
    assert len(letters_to(site, KEPT)) == 1


# --- what feeds it: a complaint ------------------------------------------------------

def test_a_spam_complaint_piped_in_suppresses_the_address_and_it_cannot_come_back(site):
    pipe_site(site)
    site.subscriber("course", GONE)
    sender = tagged_sender(site, None, "s", "course", GONE)
    complaint = ARF.replace(b"<somespammer@example.net>", f"<{sender}>".encode()).replace(
        b"user@example.com", GONE.encode())
    pipe(site, complaint)
    pipe(site, complaint)  # a repeat adds nothing

    [entry] = suppression.entries(site.data)
    assert (entry.address, entry.why, entry.source) == (GONE, Why.COMPLAINT.value, "pipe")
    assert site.subscribe("course", GONE) == "suppressed"
    assert GONE not in site.subscribers("course")


# --- imports and adds, through the CLI --------------------------------------------------

def test_an_import_skips_suppressed_addresses_and_says_how_many(site, tmp_path):
    site.service("news")
    suppress(site, GONE, "other@example.org")
    source = tmp_path / "in.csv"
    source.write_text(f"email,name\n{GONE.upper()},Gone\n{KEPT},Kept\nnew@example.org,New\n")
    result = site.cli("subscriber", "import", "news", str(source))
    assert result.stdout.strip() == "2 added, 0 already there, 0 invalid, 1 suppressed (skipped)"
    assert sorted(site.subscribers("news")) == [KEPT, "new@example.org"]


def test_subscriber_add_of_a_suppressed_address_is_refused_in_one_line(site):
    site.service("news")
    suppress(site, GONE)
    for extra in ((), ("--confirmed",)):
        result = site.cli("subscriber", "add", "news", GONE, *extra, check=False)
        assert result.returncode == 1
        assert result.stderr.count("\n") == 1
        assert f"{GONE} is on the suppression list, so it is not added" in result.stderr
    assert site.subscribers("news") == {}
    assert site.outbox() == []
    site.cli("suppress", "remove", GONE)  # the admin's way back: take it off first
    site.cli("subscriber", "add", "news", GONE, "--confirmed")
    assert GONE in site.subscribers("news")


# --- vykhukhol suppress ---------------------------------------------------------------

def test_suppress_add_list_remove_import_export(site, tmp_path):
    out = site.cli("suppress", "add", "A@Example.org", "b@example.org").stdout
    assert out == "2 added, 0 already on the list\n"
    assert site.cli("suppress", "add", "a@example.org").stdout == "0 added, 1 already on the list\n"

    source = tmp_path / "list.txt"
    source.write_text("# from the old tool\nc@example.org\nnot an address\nB@example.org\n")
    result = site.cli("suppress", "import", str(source))
    assert result.stdout == "1 added, 1 already on the list, 1 invalid\n"
    assert "line 3: 'not an address'" in result.stderr
    result = site.cli("suppress", "import", "-", input="email,name\nd@example.org,D\n")
    assert result.stdout == "1 added, 0 already on the list, 0 invalid\n"

    lines = site.cli("suppress", "list").stdout.splitlines()
    assert lines[0] == suppression.HEADER
    assert [line.split("\t")[0] for line in lines[1:]] == [
        "a@example.org", "b@example.org", "c@example.org", "d@example.org"]
    assert lines[1].split("\t")[2:] == ["admin", "cli"]
    found = site.cli("suppress", "list", "--search", "C@EX").stdout.splitlines()
    assert [line.split("\t")[0] for line in found[1:]] == ["c@example.org"]

    assert site.cli("suppress", "remove", "B@example.org").stdout == \
        "B@example.org taken off the suppression list\n"
    gone = site.cli("suppress", "remove", "b@example.org", check=False)
    assert gone.returncode == 1 and gone.stderr == \
        "vykhukhol: b@example.org is not on the suppression list; nothing changed\n"

    text = site.cli("suppress", "export").stdout  # (a text-mode pipe: CRLF reads as \n)
    rows = list(csv.reader(io.StringIO(text.removeprefix("\ufeff"))))
    assert rows[0] == ["address", "when", "why", "from"]
    assert [row[0] for row in rows[1:]] == ["a@example.org", "c@example.org", "d@example.org"]
    target = tmp_path / "out.csv"
    site.cli("suppress", "export", str(target))
    raw = target.read_bytes()
    assert raw.startswith("\ufeffaddress,when,why,from\r\n".encode())
    assert raw.decode("utf-8").replace("\r\n", "\n") == text
    again = site.cli("suppress", "export", str(target), check=False)
    assert again.returncode == 1 and "exists already; nothing written" in again.stderr


def test_suppress_refuses_bad_input_and_changes_nothing(site, tmp_path):
    bad = site.cli("suppress", "add", "ok@example.org", "nope", check=False)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("vykhukhol: nope: ") and "nothing changed" in bad.stderr
    assert list(suppression.entries(site.data)) == []
    missing = site.cli("suppress", "import", str(tmp_path / "none.csv"), check=False)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1
    for usage in (("suppress",), ("suppress", "add"), ("suppress", "frobnicate")):
        result = site.cli(*usage, check=False)
        assert result.returncode == 2, usage
        assert "Traceback" not in result.stderr
