"""Each service's next-due summary (``data/state/due-<service>``): the
earliest time anything is due, the rules it was computed under and the stamp
of the subscriber file it was read from.

A writer of a subscriber file that makes something due calls
:func:`lower_due`; one that changes the rules or the file wholesale calls
:func:`forget_due`. The idle proof and the sender read it.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from vykhukhol import files
from vykhukhol.datadir import DataDir
from vykhukhol.files.kv import change_kv, read_kv, time_of, write_kv
from vykhukhol.records import NamedTuple
from vykhukhol.timeutil import format_time


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
    # Not fsynced: after a power cut an old or missing summary only costs the
    # next run a full read (its stamp no longer matches the file, which is).
    change_kv(summary, change, synced=False)


def forget_due(data: DataDir, service: str) -> None:
    files.remove(data.state / f"due-{service}")
