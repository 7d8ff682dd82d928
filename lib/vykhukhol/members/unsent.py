"""Confirmation letters a subscribe page could not send
(``data/state/unsent-confirmations``).

The page sends its confirmation after the answer. It notes the address here
first and takes the note back once the letter is accepted, so a mail server
that is down, or a web server that kills the process once the answer is out,
leaves the note, and the next run sends the letter (instead of the first
reminder, a reminder period later). A line: service, address, time noted.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from vykhukhol import files
from vykhukhol.datadir import DataDir
from vykhukhol.files.kv import time_of
from vykhukhol.timeutil import format_time

UNSENT = "unsent-confirmations"


UNSENT_GRACE = 60  # seconds a note is left to the page that is sending it


def note_unsent(data: DataDir, service: str, email: str, moment: datetime) -> None:
    path = data.state / UNSENT
    files.make_folder(path.parent)
    with files.record_lock(path):
        files.append_line(path, f"{service}\t{email}\t{format_time(moment)}")


def _unsent_lines(path: Path) -> list[tuple[str, str, str]]:
    rows = (line.split("\t") for line in files.read_lines(path))
    return [(row[0], row[1], row[2] if len(row) > 2 else "-") for row in rows if len(row) >= 2]


def drop_unsent(data: DataDir, service: str, email: str) -> None:
    """The letter went: the note is not needed any more."""
    path = data.state / UNSENT
    with files.record_lock(path):
        rows = [r for r in _unsent_lines(path) if (r[0], r[1]) != (service, email)]
        if rows:
            files.atomic_write(path, [f"{a}\t{b}\t{c}\n" for a, b, c in rows])
        else:
            files.remove(path)


def take_unsent(data: DataDir, moment: datetime) -> list[tuple[str, str]]:
    """The (service, address) pairs noted at least UNSENT_GRACE seconds before
    ``moment``, once each, taken out of the note; younger ones stay."""
    path = data.state / UNSENT
    if not path.exists():
        return []
    taken, young = [], []
    with files.record_lock(path):
        for row in _unsent_lines(path):
            noted = time_of({"t": row[2]}, "t")
            if noted is not None and (moment - noted).total_seconds() < UNSENT_GRACE:
                young.append(row)
            else:
                taken.append((row[0], row[1]))
        if young:
            files.atomic_write(path, [f"{a}\t{b}\t{c}\n" for a, b, c in young])
        else:
            files.remove(path)
    return list(dict.fromkeys(taken))
