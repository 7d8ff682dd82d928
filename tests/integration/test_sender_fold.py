"""The fold after a scan splices in only the lines letters or clean-up touched
and copies the rest through; it must leave the same subscribers and the same
next-due summary as parsing every line (docs/design/run.md#due-summary)."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta

import pytest

from vykhukhol import services as svc
from vykhukhol.sender import serial
from vykhukhol.services import due_summary
from vykhukhol.services import subscribers as subs
from vykhukhol.timeutil import format_time, now

HOUR, DAY = 3600, 86400
SERIES = [("One {{ name }}", "0s", "Hello {{ name }}, one."),
          ("Two", "1d", "Two."), ("Three", "2d", "Three.")]
# Valid, but not how the fold would write them (a one-digit day, a lower-case t):
# a copied line keeps them, a parsed one is rewritten.
ODD_LINE = "odd@example.org\tOdd\tdone\t2026-01-5T10:00:00Z\t2026-01-05t10:00:00Z\t3\t" \
           "2026-01-09T10:00:00Z\t0\t-\t0\t-"


def populate(site, delete_finished: bool) -> svc.Service:
    site.set(serial_per_run=5, reminder_period="1d", reminder_count=2)
    service = site.service("course", letters=SERIES,
                           delete_finished="yes" if delete_finished else "no")
    for i in range(12):  # more due than the quota: some are selected and left
        site.subscriber("course", f"due{i}@example.org", name=f"D{i}", ago=HOUR * (20 - i))
    for i in range(4):
        site.subscriber("course", f"later{i}@example.org", sent=1, last_sent_ago=HOUR * i)
    site.subscriber("course", "ask@example.org", state="new", ago=DAY + HOUR)
    site.subscriber("course", "expired@example.org", state="new", ago=5 * DAY, reminders=2,
                    last_reminder_ago=2 * DAY)
    site.subscriber("course", "finished@example.org", sent=3, last_sent_ago=DAY)
    site.subscriber("course", "failing@example.org", failures=5)
    path = service.subscribers_path
    with path.open("a", encoding="utf-8") as out:
        out.write("# a note left by the owner\n\n")
        out.write("broken line without tabs\n")
        out.write(ODD_LINE + "\n")
        out.write("MiXeD@Example.org\tCase\tactive\t-\t2020-01-01T00:00:00Z\t0\t-\t0\t-\t0\t-\n")
    return service


def outcome(site, service) -> tuple[dict, str | None]:
    members = {s.email: s for s in subs.subscribers(service.subscribers_path)}
    due = due_summary.read_due(site.data, service.name)
    return members, due[0] if due else None


def twice(site, service, moments, monkeypatch):
    """The runs at ``moments`` as they are, then again from the same start with
    the due index deleted before every run, so each reads the whole file
    again; (what each left after each run)."""
    data = site.data.root
    start = data.parent / "start"
    shutil.copytree(data, start)
    results = {}
    for mode in ("copying", "parsing"):
        shutil.rmtree(data)
        shutil.copytree(start, data)
        results[mode] = []
        for moment in moments:
            if mode == "parsing":
                shutil.rmtree(site.data.state / "index", ignore_errors=True)
            site.run_at(moment)
            results[mode].append(outcome(site, service))
    return results


@pytest.mark.parametrize("delete_finished", [False, True])
def test_copying_untouched_lines_leaves_what_parsing_every_line_leaves(site, monkeypatch,
                                                                      delete_finished):
    service = populate(site, delete_finished)
    base = now() + timedelta(minutes=1)
    moments = [base, base + timedelta(minutes=5), base + timedelta(days=1, hours=2),
               base + timedelta(days=3, hours=4), base + timedelta(days=6)]
    results = twice(site, service, moments, monkeypatch)
    for step, (copied, parsed) in enumerate(zip(results["copying"], results["parsing"],
                                                strict=True)):
        assert copied == parsed, f"after run {step + 1}"
    final, _ = results["copying"][-1]
    assert "expired@example.org" not in final and "failing@example.org" not in final
    assert ("finished@example.org" in final) is not delete_finished


def test_lines_no_letter_touched_are_copied_as_they_are(site):
    service = populate(site, delete_finished=False)
    site.run_at(now() + timedelta(minutes=1))
    lines = service.subscribers_path.read_text(encoding="utf-8").splitlines()
    assert ODD_LINE in lines                        # copied, odd spelling and all
    assert "broken line without tabs" in lines      # malformed lines are kept
    assert "# a note left by the owner" in lines    # a splice keeps every byte it does not change
    sent = {s.email: s.sent for s in subs.subscribers(service.subscribers_path)}
    assert sent["MiXeD@Example.org"] == 1  # waited longest; its journal key is lower-case
    assert sum(1 for e, n in sent.items() if e.startswith("due") and n == 1) == 4


def test_a_subscriber_added_during_a_run_is_kept_and_the_next_run_scans_again(site,
                                                                            monkeypatch):
    """A subscribe between the scan and the fold: its line survives the fold, and
    the summary sends the next run to read the file instead of trusting the scan."""
    service = populate(site, delete_finished=False)
    real = serial.send_letters

    def subscribe_meanwhile(run, work, book):
        real(run, work, book)
        site.subscriber("course", "meanwhile@example.org", ago=60)
    monkeypatch.setattr(serial, "send_letters", subscribe_meanwhile)
    moment = now() + timedelta(minutes=1)
    site.run_at(moment)
    monkeypatch.undo()

    members = site.subscribers("course")
    assert "meanwhile@example.org" in members and members["meanwhile@example.org"].sent == 0
    due, _, stamp = due_summary.read_due(site.data, "course")
    assert due <= format_time(moment)
    assert stamp == due_summary.file_stamp(service.subscribers_path)
    site.set(serial_per_run=50)
    site.run_at(moment + timedelta(minutes=1))
    assert site.subscribers("course")["meanwhile@example.org"].sent == 1


# --- lines settled ahead, while the server answers (fold.settle_ahead) --------------

def files_after(site, service) -> tuple:
    """The subscriber file byte for byte, its due index (all but the file's
    stamp, which names its inode and time) and its summary's time."""
    index = site.data.state / "index" / f"{service.name}.due"
    due = due_summary.read_due(site.data, service.name)
    held = None
    if index.exists():
        magic, head, body = index.read_bytes().split(b"\n", 2)
        held = (magic, {k: v for k, v in json.loads(head).items() if k not in ("stamp", "check")},
                body)
    return service.subscribers_path.read_bytes(), held, due[0] if due else None


def ahead_or_not(site, service, moments, monkeypatch) -> tuple[dict, int]:
    """The runs at ``moments`` with lines settled ahead, then from the same
    start with the fold settling every line; and how many were settled ahead."""
    data = site.data.root
    start = data.parent / "start-ahead"
    shutil.copytree(data, start)
    real, used = serial.settle_ahead, [0]

    def counting(run, work, book, offset, item):
        before = len(work.settled)
        real(run, work, book, offset, item)
        used[0] += len(work.settled) - before

    results = {}
    for mode in ("ahead", "folded"):
        shutil.rmtree(data)
        shutil.copytree(start, data)
        monkeypatch.setattr(serial, "settle_ahead",
                            counting if mode == "ahead" else lambda *args: None)
        results[mode] = []
        for moment in moments:
            site.run_at(moment)
            results[mode].append(files_after(site, service))
    monkeypatch.undo()
    return results, used[0]


@pytest.mark.parametrize("delete_finished", [False, True])
def test_lines_settled_ahead_leave_the_files_the_fold_alone_leaves(site, monkeypatch,
                                                                   delete_finished):
    """Byte for byte, run after run: new subscribers, reminders, expiry, the
    last letter, failures and the owner's odd lines included."""
    service = populate(site, delete_finished)
    site.subscriber("course", "last@example.org", sent=2, last_sent_ago=3 * DAY)  # due first
    base = now() + timedelta(minutes=1)
    moments = [base, base + timedelta(days=1, hours=2), base + timedelta(days=3, hours=4)]
    results, used = ahead_or_not(site, service, moments, monkeypatch)
    for step, (ahead, folded) in enumerate(zip(results["ahead"], results["folded"], strict=True)):
        assert ahead == folded, f"after run {step + 1}"
    assert used >= 5  # the plain lines were settled ahead (the test would prove nothing else)
    final = {s.email: s for s in subs.subscribers(service.subscribers_path)}
    assert ("last@example.org" in final) is not delete_finished  # its last letter: settled ahead


def test_lines_settled_ahead_agree_with_the_fold_on_refusals(site, smtp_server, monkeypatch):
    """Through SMTP: an address gone, a full mailbox (soft), a deferral at
    RCPT and a subscriber who had failed before are the fold's own work."""
    site.use_smtp(smtp_server.port)
    site.set(serial_per_run=20)
    service = site.service("course", letters=SERIES)
    replies = {"gone@example.org": "550 5.1.1 no such user",
               "full@example.org": "552 5.2.2 mailbox full",
               "later@example.org": "451 4.2.1 try again later"}
    for i, address in enumerate([*replies, "failed@example.org", "a@example.org",
                                 "b@example.org", "c@example.org"]):
        site.subscriber("course", address, ago=HOUR * (10 - i),
                        failures=1 if address == "failed@example.org" else 0)
    smtp_server.handler.rcpt_responses.update(replies)
    base = now() + timedelta(minutes=1)
    results, used = ahead_or_not(site, service, [base, base + timedelta(days=1, hours=1)],
                                 monkeypatch)
    assert results["ahead"] == results["folded"]
    assert used >= 3
    final = {s.email: s for s in subs.subscribers(service.subscribers_path)}
    assert "gone@example.org" not in final and final["full@example.org"].failures >= 1
