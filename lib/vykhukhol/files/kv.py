"""Small ``key<TAB>value`` files (the sender's ``data/state/`` files and the like),
rewritten atomically under their record lock.

Part of :mod:`vykhukhol.files`, apart from its package face so that only
its readers import it.
"""

from __future__ import annotations

from vykhukhol import files
from vykhukhol.errors import BadInput
from vykhukhol.timeutil import parse_time

TYPE_CHECKING = False  # the idle tick reads the round robin through this module: no typing, pathlib
if TYPE_CHECKING:
    import os
    from collections.abc import Callable
    from datetime import datetime
    from pathlib import Path


def read_kv(path: str | os.PathLike[str]) -> dict[str, str]:
    result = {}
    for line in files.read_lines(path):
        if line and not line.startswith("#"):
            key, _, value = line.partition("\t")
            result[key] = value
    return result


def write_kv(path: str | os.PathLike[str], values: dict[str, str], synced: bool = True) -> None:
    """``path`` rewritten atomically; ``synced=False``: without fsyncs
    (:func:`vykhukhol.files.atomic_write`), for a file a power cut may take back."""
    files.atomic_write(path, [f"{k}\t{v}\n" for k, v in values.items()], synced=synced)


def change_kv(path: Path, change: Callable[[dict[str, str]], object],
              synced: bool = True) -> dict[str, str]:
    """Read-modify-write of one state file under its record lock (what
    ``change`` returns is not used); ``synced`` as :func:`write_kv`'s."""
    files.make_folder(path.parent)
    with files.record_lock(path):
        values = read_kv(path)
        change(values)
        write_kv(path, values, synced)
    return values


def time_of(values: dict[str, str], key: str) -> datetime | None:
    try:
        return parse_time(values.get(key, "-"))
    except BadInput:
        return None
