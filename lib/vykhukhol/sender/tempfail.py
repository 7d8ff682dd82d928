"""Letters that fail temporarily (docs/design/run.md#run-failures):
``data/state/tempfail``, one line per letter — when it first failed, until
when its recipient waits (a 4xx to RCPT defers that recipient alone: 15 min,
then 1 h, 4 h, 16 h), and how often it was tried. After
:data:`TEMPFAIL_GIVE_UP` the letter becomes failed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from vykhukhol.addresses import email_key
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.files import kv
from vykhukhol.timeutil import after, format_time, parse_time

TEMPFAIL_GIVE_UP = 3 * 86400  # a letter failing temporarily this long becomes failed
DEFER_PAUSES = (15 * 60, 3600, 4 * 3600, 16 * 3600)  # a recipient's pauses after each 4xx to RCPT


class Deferrals:
    """One run's view of ``state/tempfail``: each target's lines read once (on
    its first letter, under its lock: only the run holding that lock changes
    them), each change written at once."""

    def __init__(self, data: DataDir, now: Callable[[], datetime]) -> None:
        self.path = data.state / "tempfail"
        self.now = now
        self._by_target: dict[str, dict[str, str]] = {}  # target -> its lines

    def note(self, target: str, email: str, item: str, defer: bool = False
                      ) -> tuple[datetime, int]:
        """Remember when this letter first failed temporarily, how often, and
        (``defer``: its recipient was refused at RCPT) when it may be tried
        again; returns (the first failure's time, the tries so far)."""
        key = _tempfail_key(target, email, item)
        moment = self.now()

        def change(values: dict[str, str]) -> None:
            first, _, tries = _deferral(values.get(key))
            pause = DEFER_PAUSES[min(tries + 1, len(DEFER_PAUSES)) - 1]
            values[key] = " ".join((format_time(first or moment),
                                    format_time(after(moment, pause)) if defer else "-",
                                    str(tries + 1)))

        values = kv.change_kv(self.path, change)
        self._of(target)[key] = values[key]
        first, _, tries = _deferral(values[key])
        return first or moment, tries

    def deferred(self, target: str, email: str, item: str) -> bool:
        """Whether this letter's recipient is deferred (4xx to RCPT) and its
        pause has not passed yet: then it waits, and the others go on."""
        keys = self._of(target)
        value = keys.get(_tempfail_key(target, email, item)) if keys else None  # (every letter)
        if value is None:
            return False
        _, until, _ = _deferral(value)
        return until is not None and until > self.now()

    def deferred_count(self, target: str) -> int:
        """How many of ``target``'s letters wait out a pause now."""
        moment = self.now()
        return sum(1 for value in self._of(target).values()
                   if (until := _deferral(value)[1]) is not None and until > moment)

    def forget(self, target: str, email: str, item: str) -> None:
        keys = self._of(target)
        if not keys:  # every letter sent asks: most targets have no deferral
            return
        key = _tempfail_key(target, email, item)
        if key in keys:
            kv.change_kv(self.path, lambda v: v.pop(key, None))
            keys.pop(key, None)

    def _of(self, target: str) -> dict[str, str]:
        """The remembered failures of ``target``, read once (on its first letter,
        under its lock: only the run holding that lock changes them)."""
        keys = self._by_target.get(target)
        if keys is None:
            keys = {k: v for k, v in kv.read_kv(self.path).items()
                    if k.startswith(f"{target}|")} if self.path.exists() else {}
            self._by_target[target] = keys
        return keys


def _deferral(value: str | None) -> tuple[datetime | None, datetime | None, int]:
    """(first failure, not before, tries) of a ``state/tempfail`` line; a line
    written before deferrals holds the first time alone."""
    parts = (value or "").split()

    def time(i: int) -> datetime | None:
        try:
            return parse_time(parts[i]) if len(parts) > i else None
        except BadInput:
            return None
    try:
        tries = int(parts[2]) if len(parts) > 2 else (1 if parts else 0)
    except ValueError:
        tries = 1
    return time(0), time(1), tries


def _tempfail_key(target: str, email: str, item: str) -> str:
    """A letter's key in ``data/state/tempfail``."""
    return f"{target}|{email_key(email)}|{item}"
