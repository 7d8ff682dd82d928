"""The brakes' line and tally (watch/brakes.py, bounces/tally.py): at the
line it brakes, below it not; the least counts; a batch repeated by a kill
counts once; a resume forgets the reports but keeps the letters; a line
spoiled by hand never stops the sender."""

from __future__ import annotations

from datetime import timedelta

import pytest

from vykhukhol.bounces import tally
from vykhukhol.datadir import DataDir
from vykhukhol.timeutil import now
from vykhukhol.watch import brakes

KEY = "service news"


def entry(letters: int, complaints: int = 0, gone: int = 0, days_ago: int = 0) -> dict:
    day = (now() - timedelta(days=days_ago)).date().isoformat()
    return {"days": {day: [letters, complaints, gone]}}


SETTINGS = {"complaint_brake": 0.1, "bounce_brake": 5.0}


@pytest.mark.parametrize(("letters", "complaints", "gone", "why"), [
    (3000, 3, 0, "complaints"),   # exactly 0.1 %
    (3001, 3, 0, None),           # just under
    (100, 2, 0, None),            # 2 %, but fewer than 3
    (200, 0, 10, "gone"),         # exactly 5 %
    (201, 0, 10, None),
    (100, 0, 9, None),            # 9 %, but fewer than 10
    (0, 5, 20, None),             # no letters counted: no share
])
def test_the_line(letters, complaints, gone, why):
    brake = brakes.over_line(SETTINGS, KEY, entry(letters, complaints, gone), now())
    assert (brake.why if brake else None) == why


def test_zero_turns_a_brake_off_and_old_days_fall_out_of_the_window():
    assert brakes.over_line({"complaint_brake": 0, "bounce_brake": 0}, KEY,
                            entry(10, 10, 10), now()) is None
    assert brakes.over_line(SETTINGS, KEY, entry(100, 50, days_ago=31), now()) is None
    assert brakes.over_line(SETTINGS, KEY, entry(100, 50, days_ago=29), now()) is not None


def test_a_batch_repeated_by_a_kill_counts_once_and_resume_keeps_the_letters(tmp_path):
    data = DataDir(tmp_path)
    (tmp_path / "state").mkdir()
    tally.count_letters(data, {KEY: (1000, 0)}, now())
    for _ in range(2):  # the same batch again, as recover() does after a kill
        tally.count_reports(data, [(KEY, tally.COMPLAINTS)] * 3, "batch-1", now())
    assert tally.sums(tally.read(data)[KEY], now()) == (1000, 3, 0)
    assert KEY in brakes.status(data, SETTINGS, now())
    assert brakes.resume(data, SETTINGS, "service", "news")
    assert tally.sums(tally.read(data)[KEY], now()) == (1000, 0, 0)
    assert not brakes.resume(data, SETTINGS, "service", "news")
    assert brakes.status(data, SETTINGS, now()) == {}


def test_a_line_spoiled_by_hand_counts_nothing(tmp_path):
    data = DataDir(tmp_path)
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "brakes").write_text(
        f'{KEY}\t{{"days": "x"\nservice b\t{{"days":{{"2026-01-01":["a",1,2]}}}}\n')
    assert brakes.status(data, SETTINGS, now()) == {}
    tally.count_letters(data, {KEY: (10, 1)}, now())
    assert tally.sums(tally.read(data)[KEY], now()) == (10, 0, 1)
