"""The hourly and daily caps (docs/using/settings.md#settings-table), shared across runs
through ``data/state/counters``, and the server's learned pace (:mod:`vykhukhol.watch.pace`)
as one more cap."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from vykhukhol.datadir import DataDir
from vykhukhol.files import kv
from vykhukhol.settings import Settings
from vykhukhol.watch.pace import Pace


class Allowance:
    """The hourly and daily caps (docs/using/settings.md#settings-table), shared across runs.

    A run reserves what it may send in one write of ``data/state/counters``
    and gives back what it did not use; a killed run's reservation counts as
    sent, which errs on the side of sending less.
    """

    def __init__(self, data: DataDir, settings: Settings, now: Callable[[], datetime],
                 wanted: Callable[[], int]) -> None:
        self.path = data.state / "counters"
        self.settings, self.now = settings, now
        self.wanted = wanted  # what the run may still send (its quotas), asked on first use
        self.granted: int | None = None  # None: not reserved yet
        self.counted = 0  # of it, what data/state/counters holds (the pace may grant less)
        self.used = 0
        self.pace = Pace(data, settings, now)  # the server's learned pace: one more cap

    def _limits(self) -> tuple[int, int]:
        return self.settings["hourly_limit"], self.settings["daily_limit"]

    def _buckets(self) -> tuple[str, str]:
        from zoneinfo import ZoneInfo  # only runs under a cap ask the clock's zone

        local = self.now().astimezone(ZoneInfo(self.settings["timezone"]))
        return f"{local:%Y-%m-%dT%H}", f"{local:%Y-%m-%d}"

    def room(self) -> bool:
        """Whether one more letter fits the caps (reserving on first use)."""
        hourly, daily = self._limits()
        if not hourly and not daily and not self.pace.binds():
            return True
        granted = self.granted
        if granted is None:
            granted = self._reserve(hourly, daily)
        return self.used < granted

    def take(self) -> bool:
        """Count one letter that is about to leave; False when the caps are reached."""
        if not self.room():
            return False
        self.used += 1
        return True

    def _reserve(self, hourly: int, daily: int) -> int:
        wanted = self.wanted()
        if hourly or daily:
            self._reserve_counters(hourly, daily, wanted)
            wanted = self.counted
        self.granted = granted = self.pace.reserve(wanted)
        return granted

    def _reserve_counters(self, hourly: int, daily: int, wanted: int) -> None:
        hour, day = self._buckets()

        def change(values: dict[str, str]) -> None:
            in_hour = int(values.get("hour_count", 0)) if values.get("hour") == hour else 0
            in_day = int(values.get("day_count", 0)) if values.get("day") == day else 0
            room = wanted
            if hourly:
                room = min(room, hourly - in_hour)
            if daily:
                room = min(room, daily - in_day)
            self.counted = max(0, room)
            values.update(hour=hour, hour_count=str(in_hour + self.counted),
                          day=day, day_count=str(in_day + self.counted))
        kv.change_kv(self.path, change)

    def settle(self) -> None:
        """Give back the letters reserved but not sent (unless the hour turned);
        the run's letters counted against its server's pace."""
        self.pace.settle(self.used)
        if not self.counted or self.used >= self.counted:
            return
        unused = self.counted - self.used
        hour, day = self._buckets()

        def change(values: dict[str, str]) -> None:
            if values.get("hour") == hour:
                values["hour_count"] = str(max(0, int(values.get("hour_count", 0)) - unused))
            if values.get("day") == day:
                values["day_count"] = str(max(0, int(values.get("day_count", 0)) - unused))
        kv.change_kv(self.path, change)
