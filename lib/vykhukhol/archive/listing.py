"""What each service's archive has published: ``state/archive/<service>.txt``,
``time<TAB>kind<TAB>ref`` lines, ``kind`` ``letter`` (ref: its number) or
``news`` (ref: the job), in the order they were published.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vykhukhol import files
from vykhukhol.datadir import DataDir, check_name


@dataclass(frozen=True)
class Entry:
    """One published letter: when, and which (a series letter's number or a job)."""

    time: str
    kind: str  # "letter" or "news"
    ref: str


def entries_path(data: DataDir, service: str) -> Path:
    return data.state / "archive" / f"{check_name(service, 'service name')}.txt"


def entries(data: DataDir, service: str) -> list[Entry]:
    """What the service's archive has published, in the order it was."""
    found = []
    for line in files.read_lines(entries_path(data, service)):
        parts = line.split("\t")
        if len(parts) >= 3 and parts[1] in ("letter", "news"):
            found.append(Entry(parts[0], parts[1], parts[2]))
    return found


def add_entries(data: DataDir, service: str, new: list[Entry]) -> None:
    """``new`` published (those already there stay as they were)."""
    path = entries_path(data, service)
    with files.record_lock(path):
        known = entries(data, service)
        have = {(e.kind, e.ref) for e in known}
        known += [e for e in new if (e.kind, e.ref) not in have]
        files.atomic_write(path, [f"{e.time}\t{e.kind}\t{e.ref}\n" for e in known])
