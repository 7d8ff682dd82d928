"""The round-robin order of SPEC 5 step 3: when each service was last served
(``data/state/served``), the one module that reads and writes it.
"""

from __future__ import annotations

from datetime import datetime

from vykhukhol.datadir import DataDir
from vykhukhol.files.kv import change_kv, read_kv, time_of
from vykhukhol.timeutil import format_time


def served_times(data: DataDir) -> dict[str, datetime | None]:
    values = read_kv(data.state / "served")
    return {name: time_of(values, name) for name in values}


def mark_served(data: DataDir, services: list[str], moment: datetime) -> None:
    def change(values: dict[str, str]) -> None:
        for name in services:
            values[name] = format_time(moment)
    change_kv(data.state / "served", change)
