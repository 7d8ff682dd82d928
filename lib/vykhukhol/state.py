"""The sender's own small state files in ``data/state/``.

Each is a tab-separated ``key<TAB>value`` file, rewritten atomically under its
record lock: round-robin times (``served``), alert times (``alerts``), the
block flag (``blocked``), sending-limit counters (``counters``), the
per-service next-due summaries (``due-<service>``), series letters that keep
failing temporarily (``tempfail``), and the confirmation letters a
subscribe page could not send (``unsent-confirmations``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from vykhukhol import files
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.timeutil import format_time, parse_time


def read_kv(path: Path) -> dict[str, str]:
    result = {}
    for line in files.read_lines(path):
        if line and not line.startswith("#"):
            key, _, value = line.partition("\t")
            result[key] = value
    return result


def write_kv(path: Path, values: dict[str, str]) -> None:
    files.atomic_write(path, [f"{k}\t{v}\n" for k, v in values.items()])


def change_kv(path: Path, change: Callable[[dict[str, str]], None]) -> dict[str, str]:
    """Read-modify-write of one state file under its record lock."""
    files.make_folder(path.parent)
    with files.record_lock(path):
        values = read_kv(path)
        change(values)
        write_kv(path, values)
    return values


def time_of(values: dict[str, str], key: str) -> datetime | None:
    try:
        return parse_time(values.get(key, "-"))
    except BadInput:
        return None


# --- round robin -----------------------------------------------------------

def served_times(data: DataDir) -> dict[str, datetime | None]:
    values = read_kv(data.state / "served")
    return {name: time_of(values, name) for name in values}


def mark_served(data: DataDir, services: list[str], moment: datetime) -> None:
    def change(values: dict[str, str]) -> None:
        for name in services:
            values[name] = format_time(moment)
    change_kv(data.state / "served", change)


# --- block flag ------------------------------------------------------------

def block_reason(data: DataDir) -> str | None:
    """Why the sender blocked itself (the first line of the flag), or None."""
    text = files.read_text(data.state / "blocked")
    return None if text is None else (text.split("\n", 1)[0] or "blocked")


def block_age(data: DataDir) -> str:
    """How long the dead run had been going, as the flag recorded it."""
    lines = (files.read_text(data.state / "blocked") or "").split("\n")
    return lines[1] if len(lines) > 1 and lines[1] else "?"


def set_block(data: DataDir, reason: str, age: str) -> None:
    files.atomic_write(data.state / "blocked", f"{reason}\n{age}\n")


def clear_block(data: DataDir) -> bool:
    was = (data.state / "blocked").exists()
    files.remove(data.state / "blocked")
    return was


# --- next-due summaries ----------------------------------------------------
#
# A summary holds the earliest time anything is due in a service, the
# fingerprint of the rules it was computed under, and the stamp (mtime and
# size) of subscribers.txt it was computed from. A file changed behind our
# back (an FTP edit) has another stamp, so the summary no longer counts.

def file_stamp(path: Path) -> str:
    try:
        info = path.stat()
    except FileNotFoundError:
        return "-"
    return f"{info.st_mtime_ns}:{info.st_size}"


class DueSummary(NamedTuple):
    """A service's next-due summary, as last computed."""

    next: str          # the next due time, or '-' (nothing will ever be due)
    fingerprint: str   # the rules it was computed under (series.Rules.fingerprint)
    stamp: str         # the subscriber file it was computed from (file_stamp)


def read_due(data: DataDir, service: str) -> DueSummary | None:
    """The summary as last computed, or None."""
    values = read_kv(data.state / f"due-{service}")
    if not {"next", "fingerprint", "stamp"} <= values.keys():
        return None
    return DueSummary(values["next"], values["fingerprint"], values["stamp"])


def write_due(data: DataDir, service: str, next_due: datetime | None, fingerprint: str,
              stamp: str) -> None:
    write_kv(data.state / f"due-{service}",
             {"next": format_time(next_due), "fingerprint": fingerprint, "stamp": stamp})


def has_due(data: DataDir, service: str) -> bool:
    """Whether the service has a next-due summary (a writer need not keep one up)."""
    return (data.state / f"due-{service}").exists()


def lower_due(data: DataDir, service: str, moment: datetime | None, path: Path) -> None:
    """A writer of ``path`` (held under its record lock) made something due at
    ``moment`` (None: nothing earlier): bring the summary forward and take the
    file's new stamp, so the change does not cost the next run a full read."""
    summary = data.state / f"due-{service}"
    if not summary.exists():
        return  # no summary: the next run computes one anyway

    def change(values: dict[str, str]) -> None:
        current = time_of(values, "next")
        if moment is not None and (current is None or moment < current):
            values["next"] = format_time(moment)
        values["stamp"] = file_stamp(path)
    change_kv(summary, change)


def forget_due(data: DataDir, service: str) -> None:
    files.remove(data.state / f"due-{service}")


# --- confirmations a subscribe page could not send ----------------------------
#
# The page sends its confirmation after the answer. It notes the address here
# first and takes the note back once the letter is accepted, so a mail server
# that is down, or a web server that kills the process once the answer is out,
# leaves the note, and the next run sends the letter (instead of the first
# reminder, a reminder period later). A line: service, address, time noted.

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
