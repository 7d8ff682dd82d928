"""The round-robin order of docs/design/run.md#run-steps (step 3): when each service was last served
(``data/state/served``), and which service's turn it is — the one module
that reads and writes that file, for the full run and the idle tick alike.

Light on purpose: the idle tick (:mod:`.idle`) takes a turn through
:func:`take_turn` with nothing but the standard library's datetime.
"""

from __future__ import annotations

from datetime import datetime, timezone

from vykhukhol import files
from vykhukhol.files.kv import change_kv, read_kv, time_of
from vykhukhol.timeutil import format_time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from vykhukhol.datadir import DataDir

NEVER = datetime(1970, 1, 1, tzinfo=timezone.utc)  # never served: first in line (rules.EPOCH)


def served_times(data: DataDir) -> dict[str, datetime | None]:
    return _served(read_kv(data.state / "served"))


def _served(values: dict[str, str]) -> dict[str, datetime | None]:
    return {name: time_of(values, name) for name in values}


def in_turn(names: Iterable[str], served: dict[str, datetime | None]) -> list[str]:
    """``names`` in the order they are served: longest ago first (never served
    before all), then by name."""
    return sorted(names, key=lambda name: (served.get(name) or NEVER, name))


def mark_served(data: DataDir, services: list[str], moment: datetime) -> None:
    def change(values: dict[str, str]) -> None:
        for name in services:
            values[name] = format_time(moment)
    change_kv(data.state / "served", change)


def take_turn(path: str, ready: list[str], moment: datetime) -> str | None:
    """What an idle full run does to the round robin (steps 3-4): the first of
    ``ready`` in turn counts as served at ``moment``. Returns its name (None:
    nobody is ready). Appended, not rewritten: :func:`read_kv` lets a later
    line win, the next full run's rewrite folds the lines, and a tick pays no
    fsync or rename."""
    if not ready:
        return None
    with files.quick_record_lock(path):
        first = in_turn(ready, _served(read_kv(path)))[0]
        files.append_line(path, f"{first}\t{format_time(moment)}", sync=False)
    return first
