"""What the series step works with: what one service has due (:class:`Work`),
what was taken from its due index (:class:`Scan`), the DB whose lock the
run holds (:class:`Held`), and where the due index lives on disk."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import vykhukhol.sender.dueindex as dueindex
import vykhukhol.sender.journal as journal
from vykhukhol import services as svc
from vykhukhol.datadir import DataDir
from vykhukhol.errors import StorageError
from vykhukhol.sender.runtime import Run
from vykhukhol.services.rules import Action, Rules
from vykhukhol.services.subscriber_line import Subscriber


@dataclass
class Scan:
    """What find_work took from the service's due index, so the fold can splice
    the changed lines into the file and move the index along with it."""

    index: dueindex.Index
    rows: dict[int, tuple[bytes, Subscriber]]  # offset → the line's bytes, as parsed
    saved: bool = True  # the index on disk is this one


class DueLetter(NamedTuple):
    """A series letter due to one subscriber."""

    due: datetime
    email: str
    name: str
    number: int  # the letter's place in the series, from 1
    offset: int = -1  # where its line is in the file (Scan.rows)
    fields: dict[str, str] | None = None  # the reader's values of the site's fields
    language: str | None = None  # the reader's own (None: the site's is theirs)


class DueReminder(NamedTuple):
    """A confirmation reminder due to one unconfirmed address."""

    due: datetime
    email: str
    name: str
    fields: dict[str, str] | None = None  # the reader's values of the site's fields
    language: str | None = None  # the reader's own (None: the site's)


class Settled(NamedTuple):
    """A sent letter's line as the fold will write it, made while the server
    answered (:func:`~vykhukhol.sender.fold.settle_ahead`)."""

    sub: Subscriber          # the line as taken
    record: journal.Record        # the one record it was settled with
    kept: Subscriber         # the line after the letter and the clean-up
    action: Action | None         # what is next due for it
    line: bytes                   # ``kept`` as the file holds it


@dataclass
class Work:
    """What one service has due now."""

    service: svc.Service
    rules: Rules
    letters: list[DueLetter] = field(default_factory=list)
    reminders: list[DueReminder] = field(default_factory=list)
    tidy: bool = False  # clean-up is due even if nothing is sent
    scan: Scan | None = None  # None: a fold of a killed run's journal, which parses all
    settled: dict[str, Settled] = field(default_factory=dict)  # address key → done ahead

    @property
    def idle(self) -> bool:
        return not (self.letters or self.reminders or self.tidy)


@dataclass
class Held:
    """A DB whose lock this run holds: its journal, its services as read under
    the lock, and the services worked on."""

    db: str
    book: journal.Journal
    services: list[svc.Service] = field(default_factory=list)
    worked: list[Work] = field(default_factory=list)


def index_path(data: DataDir, service: svc.Service) -> Path:
    return data.state / "index" / f"{service.name}.due"


def save_index(run: Run, service: svc.Service, index: dueindex.Index | None) -> None:
    """Write the service's due index (None: delete it). A disk that refuses is
    logged and the run goes on: an index left behind no longer matches the
    file, so the next run reads the file again."""
    try:
        if index is None:
            dueindex.remove(index_path(run.data, service))
        else:
            dueindex.save(index_path(run.data, service), index)
    except StorageError as exc:
        run.log.error(f"service {service.name}: its due index could not be written: "
                      f"{exc.message}")
