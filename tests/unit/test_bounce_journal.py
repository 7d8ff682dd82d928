"""The bounce reader's journal: a process that dies at any step of a batch
neither loses nor doubles a count (docs/design/journal.md#journal-bounces; bounces/apply.py's docstring).

Each test kills the reader (a BaseException from inside, where a kill -9
would land: the locks and the open files go with it) at one step, then
reads the same message again, as the next run does while the message is
still in the mailbox. Real folders: the record locks must work.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vykhukhol import files
from vykhukhol import returntag as tags
from vykhukhol import services as svc
from vykhukhol.bounces import apply, ledger, record
from vykhukhol.services import subscribers as subs

DATA = Path(__file__).resolve().parents[1] / "data" / "bounces"
DEAD = "dead@example.com"


class Killed(BaseException):
    """What the process sees of a kill -9: nothing after this point runs."""


def report(site, address: str, corpus: str = "flufl-dsn_01.txt", failed: str = "userx@example.com",
           kind: str = "s", name: str = "course") -> bytes:
    settings = site.settings()
    sender = tags.bounce_address("list@example.org", "+", tags.make(settings.secret, kind, name, address))
    raw = (DATA / corpus).read_bytes().replace(failed.encode(), address.encode())
    return f"Delivered-To: {sender}\n".encode() + raw


@pytest.fixture
def course(site):
    site.set(mail__from_email="list@example.org")
    site.service("course", letters=[("Lesson 1", "0s", "Hello."), ("Lesson 2", "30d", "Again.")])
    site.subscriber("course", DEAD, failures=1)
    return site


def kill_at(monkeypatch, module, name: str, when=lambda *a, **k: True) -> None:
    original = getattr(module, name)

    def dying(*args, **kwargs):
        if when(*args, **kwargs):
            monkeypatch.setattr(module, name, original)  # the next process is not killed
            raise Killed
        return original(*args, **kwargs)
    monkeypatch.setattr(module, name, dying)


def after_rewrite(monkeypatch) -> None:
    """Let the subscriber file be rewritten, then die (before the log and "done")."""
    original = subs.rewrite

    def rewrite_then_die(*args, **kwargs):
        original(*args, **kwargs)
        monkeypatch.setattr(subs, "rewrite", original)
        raise Killed
    monkeypatch.setattr(subs, "rewrite", rewrite_then_die)


POINTS = {
    "before the batch line": lambda mp: kill_at(mp, files, "append_line",
                                                lambda path, line, *a, **k: line.startswith("batch")),
    "after the batch line": lambda mp: kill_at(mp, ledger, "_count_failures"),
    "after the before line": lambda mp: kill_at(mp, subs, "rewrite"),
    "after the rewrite": after_rewrite,
    "after the log, before done": lambda mp: kill_at(mp, files, "append_line",
                                                     lambda path, line, *a, **k: line.startswith("done")),
    "after done (the message stays in the mailbox)": lambda mp: None,
}


@pytest.mark.parametrize("point", POINTS)
def test_a_reader_killed_at_any_step_counts_the_bounce_exactly_once(course, monkeypatch, point):
    raw = report(course, DEAD)
    POINTS[point](monkeypatch)
    try:
        apply.process(course.data, course.settings(), [raw], record.PIPE)
    except Killed:
        pass
    results = apply.process(course.data, course.settings(), [raw], record.PIPE)  # read again
    assert course.subscribers("course")[DEAD].failures == 2
    assert results[0].repeated == (point != "before the batch line")  # read before, or new
    assert [line.kind for line in record.recent(course.data)] == ["permanent"]
    apply.process(course.data, course.settings(), [raw], record.PIPE)
    assert course.subscribers("course")[DEAD].failures == 2


def test_a_killed_batch_is_finished_before_the_next_message_is_read(course, monkeypatch):
    first, second = report(course, DEAD), report(course, DEAD, "flufl-qmail_01.txt", "userx@example.de")
    kill_at(monkeypatch, subs, "rewrite")
    with pytest.raises(Killed):
        apply.process(course.data, course.settings(), [first], record.PIPE)
    apply.process(course.data, course.settings(), [second], record.PIPE)
    assert DEAD not in course.subscribers("course")  # 1 + 2: three in a row


def test_a_changed_count_meanwhile_is_not_counted_again(course, monkeypatch):
    """Killed after the rewrite; before the next reader, the sender's fold counted
    another refusal: the journal's "before" no longer matches, so the batch is
    taken as done (its own count is in the file already)."""
    raw = report(course, DEAD)
    after_rewrite(monkeypatch)
    with pytest.raises(Killed):
        apply.process(course.data, course.settings(), [raw], record.PIPE)
    path = svc.find_service(course.data, "course").subscribers_path
    subs.update_one(path, DEAD, lambda s: s.replace(failures=s.failures + 1))  # 2 → 3
    apply.process(course.data, course.settings(), [raw], record.PIPE)
    assert course.subscribers("course")[DEAD].failures == 3  # not 4, and not deleted


def test_one_message_that_trips_the_reader_does_not_block_the_others(course, monkeypatch):
    odd, good = b"Delivered-To: odd\n\nodd\n", report(course, DEAD)
    original = apply.Finder.who

    def who(self, tag, hints):
        if "odd" in hints:
            raise RuntimeError("a bug")
        return original(self, tag, hints)
    monkeypatch.setattr(apply.Finder, "who", who)
    monkeypatch.setattr(apply.kinds, "classify", lambda raw, sep, real=apply.kinds.classify: (
        real(raw, sep) if raw != odd else apply.kinds.Verdict(
            "kept", "x", tags=real(good, sep).tags, sender="odd")))
    results = apply.process(course.data, course.settings(), [odd, good], record.PIPE)
    assert [r.kind for r in results] == ["refused", "permanent"]
    assert course.subscribers("course")[DEAD].failures == 2
    assert apply.process(course.data, course.settings(), [odd], record.PIPE)[0].repeated
