"""The journal's records kept in memory (``Journal.records`` without reading
the file back) say exactly what reading the file says, for any sequence of
lines a run writes; a journal that holds a predecessor's lines, or whose
write failed, is read from its file."""

from __future__ import annotations

import tempfile
from dataclasses import astuple
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyfakefs.fake_filesystem_unittest import Patcher

from vykhukhol.errors import StorageError
from vykhukhol.sender import journal

EMAILS = st.sampled_from(["a@example.org", "b@example.org", "c@example.org"])
ITEMS = st.sampled_from(["1", "2", "reminder"])
OUTCOMES = st.sampled_from([journal.SENT, journal.FAILED, journal.TEMPFAIL, journal.SKIPPED])
CAUSES = st.sampled_from(["", "address gone", "soft"])
STEP = st.one_of(
    st.tuples(st.just("intend"), EMAILS, ITEMS),
    st.tuples(st.just("note"), OUTCOMES, EMAILS, ITEMS, CAUSES),
    st.tuples(st.just("back"), EMAILS, ITEMS, st.sampled_from([journal.IN_DOUBT, journal.SENT]),
              CAUSES),
    st.tuples(st.just("clear")),
)


def play(book: journal.Journal, steps: list[tuple]) -> None:
    for step in steps:
        if step[0] == "intend":
            book.intend("2026-12-01T10:00:00Z", "news", step[1], step[2])
        elif step[0] == "note":
            _, outcome, email, item, cause = step
            book.note(outcome, "2026-12-01T10:00:01Z", "news", email, item, cause)
        elif step[0] == "back":  # a record the fold could not apply, written back
            _, email, item, outcome, cause = step
            book.note_record(journal.Record("old-lease", "2026-11-30T09:00:00Z", "news", email,
                                            item, outcome, cause if outcome != journal.IN_DOUBT
                                            else ""))
        else:
            book.clear()


def as_read(path: Path) -> list[tuple]:
    return [astuple(record) for record in journal.read(path)]


@settings(max_examples=150, deadline=None)
@given(st.lists(STEP, max_size=30))
def test_the_records_kept_are_the_records_read(steps):
    with tempfile.TemporaryDirectory() as folder:
        book = journal.Journal(Path(folder) / "db-1.journal", "lease-1")
        play(book, steps)
        assert [astuple(r) for r in book.records()] == as_read(book.path)
        book.close()
        assert [astuple(r) for r in book.records()] == as_read(book.path)


def test_a_fresh_journal_gives_its_records_without_reading_the_file(tmp_path, monkeypatch):
    book = journal.Journal(tmp_path / "db-1.journal", "lease-1")
    book.intend("2026-12-01T10:00:00Z", "news", "a@example.org", "1")()
    book.note(journal.SENT, "2026-12-01T10:00:01Z", "news", "a@example.org", "1")
    expected = as_read(book.path)

    def no_reading(path):
        raise AssertionError("the journal was read back")

    monkeypatch.setattr(journal, "read", no_reading)
    assert [astuple(r) for r in book.records()] == expected


def test_a_journal_holding_a_predecessors_lines_is_read_from_its_file(tmp_path):
    """A killed run's lines: the new writer's records are the file's, both runs'."""
    path = tmp_path / "db-1.journal"
    path.write_text("intent\tdead\t2026-12-01T09:00:00Z\tnews\tk@example.org\t1\n")
    book = journal.Journal(path, "lease-1")
    book.intend("2026-12-01T10:00:00Z", "news", "a@example.org", "1")
    assert [(r.lease, r.email, r.outcome) for r in book.records()] == [
        ("dead", "k@example.org", journal.IN_DOUBT), ("lease-1", "a@example.org", journal.IN_DOUBT)]


def test_after_a_failed_write_the_records_are_the_files():
    """A full disk: the line may or may not be on disk; the file decides."""
    with Patcher(allow_root_user=False) as patcher:
        patcher.fs.add_mount_point("/disk", total_size=200_000)
        book = journal.Journal(Path("/disk/db-1.journal"), "lease-1")
        book.intend("2026-12-01T10:00:00Z", "news", "a@example.org", "1")
        book.note(journal.SENT, "2026-12-01T10:00:01Z", "news", "a@example.org", "1")
        patcher.fs.set_disk_usage(patcher.fs.get_disk_usage("/disk").used, "/disk")
        with pytest.raises(StorageError):
            for n in range(3000):  # past the zeros written ahead: the growth does not fit
                book.intend("2026-12-01T10:00:02Z", "news", f"u{n}@example.org", "1")
        assert [astuple(r) for r in book.records()] == as_read(book.path)
        assert book.records()[0].outcome == journal.SENT
