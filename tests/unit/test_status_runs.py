"""The admin status page's table of runs, read back from run-log lines.

``recent_runs`` takes each run's duration, outcome and letters from its "run
ended" line. Any line of the log may be long (a message quoting a long value,
a hand-edited file): reading it must take time in proportion to its length.
"""

from __future__ import annotations

import time

from vykhukhol.files.runlog import Entry
from vykhukhol.web.admin import recent_runs


def ended(message: str, lease: str = "r1") -> Entry:
    return Entry("2026-11-30T10:00:00Z", lease, "info", message)


def test_a_run_ended_line_gives_duration_outcome_and_letters():
    runs = recent_runs([ended("run ended after 2.5s: nothing left to send; letters 7")])
    assert [(r["duration"], r["why"], r["letters"]) for r in runs] == [
        ("2.5", "nothing left to send", "7")]


def test_a_long_run_ended_line_is_read_in_linear_time():
    """200k characters of repeated "after 1s: " took ~50 s to search before; now
    a few milliseconds (the bound leaves room for a loaded machine)."""
    hostile = ended("run ended after 1.0s: " + "after 1s: " * 20_000)
    began = time.perf_counter()
    runs = recent_runs([hostile, ended("run ended after 1s: x; letters 1" + "1" * 200_000, "r2")])
    assert time.perf_counter() - began < 1.0
    assert runs[1]["letters"] == "" and runs[0]["letters"] == "1" * 200_001
