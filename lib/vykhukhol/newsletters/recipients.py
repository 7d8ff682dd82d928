"""A newsletter job's ledger, ``<job>.list``: one recipient a row.

A row is email, name, state, time, lease id and why (what the server said,
or why it was skipped: :mod:`vykhukhol.newsletters.missed`; a row written
before this field reads ``-``), tab-separated; the ledger is
deduplicated across the job's services when the job is made. Ledger states
only move forward (``pending`` → sent / failed / skipped / in doubt; sent /
in doubt → failed when a bounce comes back). Counts are always taken from the
ledger itself.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from vykhukhol import files
from vykhukhol.addresses import email_key
from vykhukhol.datadir import DataDir
from vykhukhol.newsletters.jobs import list_jobs
from vykhukhol.newsletters.segments import Condition
from vykhukhol.services import confirmed as confirmed_file
from vykhukhol.services import find_service
from vykhukhol.states import LedgerState
from vykhukhol.timeutil import format_time, now

LIST_HEADER = "#email\tname\tstate\ttime\tlease\twhy"
BOUNCED_LEASE = "bounce"  # the lease field of a row a bounce made failed


@dataclass
class Row:
    index: int  # 0-based position in the ledger
    email: str
    name: str
    state: LedgerState
    time: str = "-"
    lease: str = "-"
    why: str = "-"  # see newsletters.missed

    def to_line(self) -> str:
        return "\t".join((self.email, self.name, self.state.value, self.time, self.lease,
                          self.why))


def read_rows(path: Path, start: int = 0) -> Iterator[Row]:
    """Ledger rows from index ``start`` on; a malformed row reads as failed."""
    for index, line in _row_lines(path):
        if index >= start:
            yield _parse_row(index, line)


def _row_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(index, line) of each row of a ledger, comments and blank lines left out."""
    index = -1
    for line in files.read_lines(path):
        if not line or line.startswith("#"):
            continue
        index += 1
        yield index, line


def _parse_row(index: int, line: str) -> Row:
    parts = line.split("\t")
    try:
        return Row(index, parts[0], parts[1], LedgerState(parts[2]), parts[3], parts[4],
                   parts[5] if len(parts) > 5 else "-")
    except (IndexError, ValueError):
        return Row(index, parts[0] if parts else "", "", LedgerState.FAILED)


def rewrite_rows(path: Path, change: Callable[[Row], Row],
                 only: Collection[int] | None = None, bounced: bool = False) -> None:
    """Stream-rewrite a ledger under its record lock; states never move back
    (``bounced``: the bounce reader's one exception, sent or in doubt → failed).
    With ``only``, the rows of other indexes are copied through unparsed (a
    run that sent 50 letters of a million-row job changes 50 lines)."""
    def lines() -> Iterator[str]:
        yield LIST_HEADER + "\n"
        for index, line in _row_lines(path):
            if only is not None and index not in only:
                yield line + "\n"
                continue
            row = _parse_row(index, line)
            after = change(row)
            if not row.state.may_become(after.state, bounced):
                after = row
            yield after.to_line() + "\n"

    with files.record_lock(path):
        if path.exists():
            files.atomic_write(path, lines())


def counts(path: Path) -> dict[str, int]:
    result = {state.value: 0 for state in LedgerState}
    for row in read_rows(path):
        result[row.state.value] += 1
    result["total"] = sum(result.values())
    return result


def handed_counts(path: Path) -> dict[str, int]:
    """What a ledger says of the hand-over, for the history: ``handed`` (the
    server accepted it: sent, or sent and bounced later), ``failed`` (refused
    at hand-over) and ``in_doubt``."""
    result = {"handed": 0, "failed": 0, "in_doubt": 0}
    for row in read_rows(path):
        if row.state is LedgerState.SENT or (row.state is LedgerState.FAILED
                                             and row.lease == BOUNCED_LEASE):
            result["handed"] += 1
        elif row.state is LedgerState.FAILED:
            result["failed"] += 1
        elif row.state is LedgerState.IN_DOUBT:
            result["in_doubt"] += 1
    return result


def confirmed_recipients(data: DataDir, services: list[str], where: Condition | None = None
                         ) -> Iterator[tuple[str, str]]:
    """Confirmed subscribers of the services, each address once, in service order.
    ``where``: only those it chooses (docs/using/newsletters.md#newsletter-segments);
    an address in two services is chosen when its line in either is."""
    for email, person, _extra in confirmed_readers(data, services, where):
        yield email, person


def count_chosen(data: DataDir, services: list[str], where: Condition | None = None) -> int:
    """How many a newsletter to ``services`` (and ``where``) would go to now."""
    return sum(1 for _ in confirmed_recipients(data, services, where))


def confirmed_readers(data: DataDir, services: list[str], where: Condition | None = None
                      ) -> Iterator[tuple[str, str, str]]:
    """:func:`confirmed_recipients` with each one's trailing fields as the
    line has them ("": none; their language and field values:
    :mod:`vykhukhol.newsletters.snapshot`)."""
    seen: set[str] = set()
    for name in services:
        service = find_service(data, name)
        lines = confirmed_file.readers(service.subscribers_path) if where is None \
            else confirmed_file.chosen_readers(service.subscribers_path, where.test, where.bare, name)
        for email, person, extra in lines:
            key = email_key(email)
            if key not in seen:
                seen.add(key)
                yield email, person, extra or ""


def skip_address(data: DataDir, service: str, email: str) -> int:
    """Unsubscribe: pending rows of this address become ``skipped`` in every job
    that includes ``service``. Returns how many rows changed."""
    wanted = email_key(email)
    changed = 0
    for job in list_jobs(data):
        if service not in job.services:
            continue

        def mark(row: Row) -> Row:
            nonlocal changed
            if row.state is LedgerState.PENDING and email_key(row.email) == wanted:
                changed += 1
                return Row(row.index, row.email, row.name, LedgerState.SKIPPED,
                           format_time(now()), "unsubscribed", "unsubscribed")
            return row

        list_path = data.job(job.name, "list")
        if _mentions(list_path, wanted):
            rewrite_rows(list_path, mark)
    return changed


def _mentions(path: Path, key: str) -> bool:
    return any(email_key(line.split("\t", 1)[0]) == key
               for line in files.read_lines(path) if line.lower().startswith(key.split("@")[0]))
