"""The soft-failure rules (docs/design/run.md#run-failures) as pure functions (bounces/counts.py):
once per letter, a recorded count survives a lost rewrite, bounce_reset's
quiet starts afresh, a count from before the soft file is kept."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from vykhukhol.bounces import counts

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
DAY = 86400
RESET = 30 * DAY


def test_each_different_letter_counts_once():
    values: dict[str, str] = {}
    assert counts.counted(values, "news", "a@example.org", 0, ["<1@x>"], T0, RESET) == 1
    assert counts.counted(values, "news", "a@example.org", 1, ["<1@x>"], T0, RESET) == 1
    assert counts.counted(values, "news", "a@example.org", 1, ["<2@x>", "<2@x>"], T0, RESET) == 2
    assert counts.counted(values, "other", "a@example.org", 0, ["<2@x>"], T0, RESET) == 1


def test_a_known_letter_restores_a_count_a_kill_kept_from_the_file():
    """The soft file is written before the subscriber file: a kill between leaves
    the file behind, and the next try takes the recorded count."""
    values: dict[str, str] = {}
    counts.counted(values, "news", "a@example.org", 1, ["<1@x>"], T0, RESET)  # recorded: 2
    assert counts.counted(values, "news", "a@example.org", 1, ["<1@x>"], T0, RESET) == 2


def test_quiet_for_bounce_reset_starts_afresh():
    values: dict[str, str] = {}
    counts.counted(values, "news", "a@example.org", 0, ["<1@x>"], T0, RESET)
    later = T0 + timedelta(seconds=RESET + 1)
    assert counts.stale(values, "news", "a@example.org", later, RESET)
    assert not counts.stale(values, "news", "a@example.org", T0 + timedelta(days=1), RESET)
    assert counts.counted(values, "news", "a@example.org", 2, ["<1@x>"], later, RESET) == 1
    counts.prune(values, later + timedelta(seconds=RESET + 1), RESET)
    assert values == {}


def test_a_count_from_before_the_soft_file_is_kept_and_counted_on():
    values: dict[str, str] = {}
    assert counts.stale(values, "news", "a@example.org", T0, RESET)  # no record: a hand-over resets
    assert counts.counted(values, "news", "a@example.org", 2, ["<9@x>"], T0, RESET) == 3


def test_a_torn_entry_reads_as_none():
    values = {"news|a@example.org": "not a time"}
    assert counts.counted(values, "news", "a@example.org", 0, ["<1@x>"], T0, RESET) == 1
