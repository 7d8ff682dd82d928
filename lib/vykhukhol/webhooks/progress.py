"""How far each endpoint has got, in three small files beside the journal:

* ``<name>.state`` (key, tab, value): the journal's ``generation`` and the
  ``offset`` up to which every event was delivered or put on the retry list;
  ``failing_since``, the first failure of an unbroken run of failures.
* ``<name>.retry``: the events that failed and wait their turn, one a line:
  ``id  time  type  data  attempts  next try  first try`` (tab-separated,
  unix seconds). Rewritten whole (it is small: a receiver that is down for
  three days is disabled).
* ``<name>.log``: every delivery, one a line (rotated at :data:`LOG_BYTES`):
  ``time  id  type  attempt  outcome  milliseconds``.

An event is written to the retry list (or the offset moved past it) only
after its attempt: a kill between a delivery and that write delivers it
once more, with the same id, never not at all.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from vykhukhol import files
from vykhukhol.datadir import DataDir
from vykhukhol.files import kv
from vykhukhol.files.runlog import one_line

#: The pauses after the first, second... failed attempt; the last repeats
#: until :data:`GIVE_UP` after the first attempt.
PAUSES = (60, 300, 1800, 7200, 18000, 36000)
GIVE_UP = 3 * 86400
LOG_BYTES = 256 * 1024
MAX_RETRIES = 5000  # a receiver down this long is disabled long before


@dataclass
class Pending:
    """An event that failed ``attempts`` times and waits for its next try."""

    id: str
    time: int
    type: str
    data: str
    attempts: int
    next_at: int
    first_at: int

    def line(self) -> str:
        return "\t".join((self.id, str(self.time), self.type, self.data,
                          str(self.attempts), str(self.next_at), str(self.first_at))) + "\n"

    def after_failure(self, now: int) -> Pending | None:
        """The same event after one more failed attempt; None once it has
        been tried for :data:`GIVE_UP` seconds."""
        if now - self.first_at >= GIVE_UP:
            return None
        made = self.attempts + 1
        return Pending(self.id, self.time, self.type, self.data, made,
                       now + PAUSES[min(made - 1, len(PAUSES) - 1)], self.first_at)


def first_failure(event_id: str, moment: int, kind: str, data: str, now: int) -> Pending:
    return Pending(event_id, moment, kind, data, 1, now + PAUSES[0], now)


@dataclass
class Progress:
    name: str
    generation: str = "0"
    offset: int = 0
    failing_since: int = 0


def _path(data: DataDir, name: str, suffix: str) -> Path:
    return data.webhooks / f"{name}.{suffix}"


def read_progress(data: DataDir, name: str, generation: str) -> Progress:
    """The endpoint's progress in the journal's current ``generation``
    (from its start when the journal was emptied since)."""
    values = kv.read_kv(_path(data, name, "state"))
    since = values.get("failing_since", "0")
    progress = Progress(name, generation, 0, int(since) if since.isdigit() else 0)
    offset = values.get("offset", "0")
    if values.get("generation") == generation and offset.isdigit():
        progress.offset = int(offset)
    return progress


def write_progress(data: DataDir, progress: Progress) -> None:
    kv.write_kv(_path(data, progress.name, "state"),
                {"generation": progress.generation, "offset": str(progress.offset),
                 "failing_since": str(progress.failing_since)})


def read_retries(data: DataDir, name: str) -> list[Pending]:
    found = []
    for line in files.read_lines(_path(data, name, "retry")):
        fields = line.split("\t")
        if len(fields) == 7 and all(f.isdigit() for f in (fields[1], *fields[4:])):
            found.append(Pending(fields[0], int(fields[1]), fields[2], fields[3],
                                 int(fields[4]), int(fields[5]), int(fields[6])))
    return found


def write_retries(data: DataDir, name: str, pending: list[Pending]) -> None:
    path = _path(data, name, "retry")
    if pending:
        files.atomic_write(path, [p.line() for p in pending[-MAX_RETRIES:]])
    else:
        files.remove(path)


def log_delivery(data: DataDir, name: str, event_id: str, kind: str, attempt: int,
                 outcome: str, millis: int, now: float | None = None) -> None:
    path = _path(data, name, "log")
    files.rotate(path, LOG_BYTES, keep=1)
    outcome = one_line(outcome)[:160]
    files.append_line(path, f"{int(time.time() if now is None else now)}\t{event_id}\t{kind}\t"
                            f"{attempt}\t{outcome}\t{millis}", sync=False)


@dataclass
class Delivery:
    """One line of an endpoint's deliveries, for the admin and the CLI."""

    time: int
    id: str
    type: str
    attempt: int
    outcome: str
    millis: int

    @property
    def ok(self) -> bool:
        return self.outcome[:1] == "2"


def recent(data: DataDir, name: str, count: int = 20) -> list[Delivery]:
    """The endpoint's last ``count`` deliveries, newest first."""
    found = []
    for line in files.read_lines(_path(data, name, "log")):
        fields = line.split("\t")
        if len(fields) == 6 and fields[0].isdigit() and fields[3].isdigit() and fields[5].isdigit():
            found.append(Delivery(int(fields[0]), fields[1], fields[2], int(fields[3]),
                                  fields[4], int(fields[5])))
    return found[-count:][::-1]


def start_from_now(data: DataDir, name: str) -> None:
    """An endpoint switched (back) on gets the events from now on: what
    happened while it was off is not sent to it."""
    from vykhukhol.files import events

    state = read_progress(data, name, events.generation(data.root))
    journal = data.webhooks / events.JOURNAL
    state.offset = journal.stat().st_size if journal.exists() else 0
    state.failing_since = 0
    write_progress(data, state)
