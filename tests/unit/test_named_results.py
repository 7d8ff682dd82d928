"""The sender's named results keep the words and numbers on disk: the run
log's last line reads back as it was written (by a full run and by an idle
tick), and the due kinds are the bytes the index file keeps."""

from __future__ import annotations

from vykhukhol.files import runlog
from vykhukhol.sender import dueindex, journal
from vykhukhol.sender.runtime import Delivery
from vykhukhol.states import Outcome


def test_a_run_ended_line_reads_back_as_written():
    line = runlog.ended_line(12.345, Outcome.TIME.label("en"), 40)
    assert line == "run ended after 12.3s: time budget reached; handed over 40"
    assert runlog.parse_ended(line) == ("12.3", "time budget reached", "40")


def test_the_idle_ticks_line_reads_back_with_its_note():
    line = runlog.ended_line(0.01, "all done (nothing due before 2026-01-01T00:00:00Z)", 0)
    assert runlog.parse_ended(line).why == "all done (nothing due before 2026-01-01T00:00:00Z)"


def test_other_and_torn_lines_are_not_a_runs_end():
    assert runlog.parse_ended("run started (time_limit 1m)") is None
    assert runlog.parse_ended("run ended after 3") is None


def test_due_kinds_are_the_index_files_bytes():
    assert [int(kind) for kind in dueindex.Due] == [1, 2, 3]
    assert (dueindex.SEND, dueindex.ASK, dueindex.TIDY) == (1, 2, 3)


def test_deliveries_that_count_against_the_quota():
    counted = {d for d in Delivery if d.counted}
    assert counted == {Delivery.SENT, Delivery.FAILED, Delivery.IN_DOUBT, Delivery.HANDED}
    assert Delivery(journal.TEMPFAIL) is Delivery.TEMPFAIL


def test_a_storage_error_and_a_settings_error_have_their_own_names():
    assert Outcome.STORAGE.label("en") != Outcome.SETTINGS.label("en")
    assert Outcome.SETTINGS.label("ru") != Outcome.SETTINGS.label("en")  # translated


def test_a_run_ended_line_of_an_older_log_still_reads():
    """Logs written before "handed over" end the line with "; letters N"."""
    assert runlog.parse_ended("run ended after 2.5s: all done; letters 7") == (
        "2.5", "all done", "7")
