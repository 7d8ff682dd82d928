"""Rewriting a newsletter ledger: the rows a run touched change, the rest are copied."""

from __future__ import annotations

from vykhukhol import newsletters
from vykhukhol.newsletters import LIST_HEADER, Row
from vykhukhol.states import LedgerState

LINES = [
    "a@example.org\tAnn\tpending\t-\t-",
    "b@example.org\tBob",                                    # malformed: reads as failed
    "# a comment an editor left",
    "c@example.org\tCat\tpending\t-\t-",
    "d@example.org\tDan\tsent\t2026-11-29T10:00:00Z\tabc",
]


def ledger(tmp_path):
    path = tmp_path / "job.list"
    path.write_text(LIST_HEADER + "\n" + "\n".join(LINES) + "\n", encoding="utf-8")
    return path


def sent(row: Row) -> Row:
    return Row(row.index, row.email, row.name, LedgerState.SENT, "2026-11-29T11:00:00Z", "r1")


def test_only_the_rows_named_are_parsed_and_changed_the_others_copied_as_they_are(tmp_path):
    path = ledger(tmp_path)
    seen = []

    def change(row: Row) -> Row:
        seen.append(row.index)
        if row.index == 3:  # a sent row cannot become failed
            return Row(row.index, row.email, row.name, LedgerState.FAILED)
        return sent(row)

    newsletters.rewrite_rows(path, change, only={2, 3})
    assert seen == [2, 3]
    assert path.read_text(encoding="utf-8").splitlines() == [
        LIST_HEADER,
        "a@example.org\tAnn\tpending\t-\t-",
        "b@example.org\tBob",
        "c@example.org\tCat\tsent\t2026-11-29T11:00:00Z\tr1\t-",
        "d@example.org\tDan\tsent\t2026-11-29T10:00:00Z\tabc\t-",  # final: never moves
    ]
    assert [r.state for r in newsletters.read_rows(path)] == [
        LedgerState.PENDING, LedgerState.FAILED, LedgerState.SENT, LedgerState.SENT]


def test_without_only_every_row_is_parsed_and_written_in_its_normal_form(tmp_path):
    path = ledger(tmp_path)
    newsletters.rewrite_rows(path, lambda row: row)
    assert path.read_text(encoding="utf-8").splitlines() == [
        LIST_HEADER,
        "a@example.org\tAnn\tpending\t-\t-\t-",
        "b@example.org\t\tfailed\t-\t-\t-",
        "c@example.org\tCat\tpending\t-\t-\t-",
        "d@example.org\tDan\tsent\t2026-11-29T10:00:00Z\tabc\t-",
    ]
