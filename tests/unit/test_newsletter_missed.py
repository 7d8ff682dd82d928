"""The rows kept of who did not get a newsletter (docs/using/newsletters.md#newsletter-failed):
how long they stay, and what a row written before the why field means."""

from __future__ import annotations

import os
import time

from vykhukhol.datadir import DataDir
from vykhukhol.newsletters import LIST_HEADER, Row, missed, sweep_locks
from vykhukhol.states import LedgerState

DAY = 86400


def test_kept_rows_go_after_their_ninety_days_and_not_before(tmp_path):
    data = DataDir(tmp_path)
    data.newsletters.mkdir(parents=True)
    old, young = data.job("20260101-000000-aaaaaa", "missed"), data.job("20260301-000000-bbbbbb",
                                                                        "missed")
    for path, age in ((old, missed.KEEP_DAYS * DAY + 60), (young, missed.KEEP_DAYS * DAY - 3600)):
        path.write_text(LIST_HEADER + "\n", encoding="utf-8")
        stamp = time.time() - age
        os.utime(path, (stamp, stamp))
    assert sweep_locks(data) == 1  # every run sweeps
    assert not old.exists() and young.exists()


def test_a_row_without_a_why_says_it_by_its_state():
    assert missed.read_why(Row(0, "a@x.org", "", LedgerState.IN_DOUBT)) == (missed.Why.NO_ANSWER, "")
    assert missed.read_why(Row(0, "a@x.org", "", LedgerState.SKIPPED, "-", "unsubscribed")) == (
        missed.Why.UNSUBSCRIBED, "")
    assert missed.read_why(Row(0, "a@x.org", "", LedgerState.FAILED)) == (missed.Why.REFUSED, "")
    row = Row(0, "a@x.org", "", LedgerState.FAILED, "-", "l1",
              missed.refusal(True, 451, "4.2.1 busy:\tnow"))
    assert row.why == "temporary: 451 4.2.1 busy: now"
    assert missed.read_why(row) == (missed.Why.TEMPORARY, "451 4.2.1 busy: now")


def test_a_servers_reply_is_kept_as_text_a_terminal_shows():
    """ESC and BEL from a stranger's server never reach `newsletter failed`'s terminal."""
    why = missed.refusal(False, 550, "5.1.1 \x1b]0;owned\x07 no\r\nsuch user")
    assert why == "refused: 550 5.1.1 \ufffd]0;owned\ufffd no such user"
