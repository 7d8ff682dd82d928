"""Confirmation letters a subscribe page could not send
(``data/state/unsent-confirmations``).

The page sends its confirmation after the answer. It notes the address here
first and takes the note back once the letter is accepted, so a mail server
that is down, or a web server that kills the process once the answer is out,
leaves the note, and the next run sends the letter (instead of the first
reminder, a reminder period later). In debug mode the page sends nothing: it
notes the address as *held*, and the first run in working mode sends the
letter at once (no page is sending it, so no grace is left to one). A line:
service, address, time noted, and ``debug`` for a held one.
"""

from __future__ import annotations

from datetime import datetime

from vykhukhol import files
from vykhukhol.datadir import DataDir
from vykhukhol.files.kv import time_of
from vykhukhol.records import NamedTuple
from vykhukhol.timeutil import format_time

UNSENT = "unsent-confirmations"


UNSENT_GRACE = 60  # seconds a note is left to the page that is sending it
HELD = "debug"     # the note's last field when debug mode kept the page from sending


class Waiting(NamedTuple):
    """A confirmation letter waiting for a run: its service and address, and
    whether debug mode held it (else a page could not send it)."""

    service: str
    email: str
    held: bool = False


class Note(NamedTuple):
    """One line of the note, as written."""

    service: str
    email: str
    noted: str  # the time noted, as written ("-": unknown)
    held: bool

    def line(self) -> str:
        return "\t".join((self.service, self.email, self.noted) + ((HELD,) if self.held else ()))


def note_unsent(data: DataDir, service: str, email: str, moment: datetime,
                held: bool = False, synced: bool = True) -> None:
    """Note a confirmation letter for the next run; ``held``: debug mode kept
    the page from sending it, so no page is sending it now.

    ``synced=False`` leaves the note to the page cache, for a letter handed
    over at once: a killed process cannot take back a write it made (only a
    power cut can), and the outbox's letter is fsynced with its folder before
    the note is dropped. A power cut before the letter is out may take the
    note with it; the subscriber's line, fsynced before, stays unconfirmed
    and is asked again by its first reminder
    (docs/design/startup.md#startup-fsyncs)."""
    path = data.state / UNSENT
    files.make_folder(path.parent)
    with files.record_lock(path):
        files.append_line(path, Note(service, email, format_time(moment), held).line(), synced)


def notes(data: DataDir) -> list[Note]:
    """The note's lines as they are (for the admin's Outbox page); nothing taken."""
    rows = (line.split("\t") for line in files.read_lines(data.state / UNSENT))
    return [Note(row[0], row[1], row[2] if len(row) > 2 else "-", row[3:4] == [HELD])
            for row in rows if len(row) >= 2]


def _rewrite(data: DataDir, kept: list[Note]) -> None:
    path = data.state / UNSENT
    if kept:
        files.atomic_write(path, [note.line() + "\n" for note in kept])
    else:
        files.remove(path)


def drop_unsent(data: DataDir, service: str, email: str) -> None:
    """The letter went: the note is not needed any more."""
    with files.record_lock(data.state / UNSENT):
        _rewrite(data, [n for n in notes(data) if (n.service, n.email) != (service, email)])


def take_unsent(data: DataDir, moment: datetime) -> list[Waiting]:
    """The letters noted at least UNSENT_GRACE seconds before ``moment``, and
    every held one, once each, taken out of the note; younger ones stay."""
    path = data.state / UNSENT
    if not path.exists():
        return []
    taken: dict[tuple[str, str], bool] = {}
    young = []
    with files.record_lock(path):
        for note in notes(data):
            noted = time_of({"t": note.noted}, "t")
            if not note.held and noted is not None \
                    and (moment - noted).total_seconds() < UNSENT_GRACE:
                young.append(note)
            else:
                key = (note.service, note.email)
                taken[key] = taken.get(key, False) or note.held
        _rewrite(data, young)
    return [Waiting(service, email, held) for (service, email), held in taken.items()]
