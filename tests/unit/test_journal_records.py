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
WHYS = st.sampled_from(["", "temporary: 451 4.2.1 busy", "refused: 550\t5.1.1\nno such user",
                        "suppressed"])
STEP = st.one_of(
    st.tuples(st.just("intend"), EMAILS, ITEMS),
    st.tuples(st.just("note"), OUTCOMES, EMAILS, ITEMS, CAUSES, WHYS),
    st.tuples(st.just("back"), EMAILS, ITEMS,
              st.sampled_from([journal.IN_DOUBT, journal.SENT, journal.FAILED]), CAUSES, WHYS),
    st.tuples(st.just("clear")),
)


def play(book: journal.Journal, steps: list[tuple]) -> None:
    for step in steps:
        if step[0] == "intend":
            book.intend("2026-12-01T10:00:00Z", "news", step[1], step[2])
        elif step[0] == "note":
            _, outcome, email, item, cause, why = step
            book.note(outcome, "2026-12-01T10:00:01Z", "news", email, item, cause, why)
        elif step[0] == "back":  # a record the fold could not apply, written back
            _, email, item, outcome, cause, why = step
            doubt = outcome == journal.IN_DOUBT
            book.note_record(journal.Record("old-lease", "2026-11-30T09:00:00Z", "news", email,
                                            item, outcome, "" if doubt else cause,
                                            "" if doubt else " ".join(why.split())))
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


def test_a_refusals_why_is_read_back_on_one_line_and_older_lines_have_none(tmp_path):
    """The server's reply a ledger keeps goes through the journal on one line; a
    line of six or seven fields (written before) reads without one."""
    path = tmp_path / "news.journal"
    path.write_text("intent\told\tT\tnews\ta@example.org\t1\n"
                    "failed\told\tT\tnews\ta@example.org\t1\tsoft\n", encoding="utf-8")
    book = journal.Journal(path, "lease-1")
    book.intend("T", "news", "b@example.org", "2")
    book.note(journal.FAILED, "T", "news", "b@example.org", "2", "",
              "temporary: 451 4.2.1\tbusy\nnow")
    book.close()
    [old, new] = journal.read(path)
    assert (old.cause, old.why) == ("soft", "")
    assert (new.outcome, new.cause, new.why) == (journal.FAILED, "", "temporary: 451 4.2.1 busy now")
