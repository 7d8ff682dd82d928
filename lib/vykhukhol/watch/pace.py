"""The host's pace, learned (docs/deliverability/reputation.md#pace): a server's
"too many" or "rate" reply halves the letters an hour the site sends it,
and the pace rises again by a tenth each clean hour up to the configured
cap (``hourly_limit``; without one, the pace seen in the hour before the
refusal).

``data/state/pace``, through :mod:`vykhukhol.files.kv`, per server (the
SMTP host, or ``sendmail``): ``SERVER`` → ``pace said seen`` (letters an
hour as learned, when the server last said so, the letters it had in the
hour before), and ``SERVER|sent`` → the letters handed to it minute by
minute over the last hour (``2026-12-01T10:05=3 …``), which is what the
pace is measured against. The pace is one more cap of
:class:`~vykhukhol.sender.allowance.Allowance`, not a mechanism of its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import NamedTuple

from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.files import kv
from vykhukhol.settings import Settings
from vykhukhol.timeutil import format_time, parse_time, seconds_between

HOUR = 3600
RISE = 1.1           # the pace grows by a tenth each clean hour
MOST_HOURS = 200     # 1.1 ** 200 is past any cap: no float overflow for a pace years old

# What a server says when the site sends too fast (the reply's text, lower
# case, its addresses and links taken out). English only: a reply in a
# language we do not know is a plain 4xx (docs/deliverability/reputation.md#pace). Not a rate: Yahoo's
# "[TS01] … deferred due to user complaints" (its rate is [TSS04]).
_RATE = re.compile(
    r"\btoo many\b(?! hops)(?! received)"             # Postfix, Exim, cPanel, most others
    r"|\btoo much mail\b"                             # Postfix anvil
    r"|\brate\b|rate_?limit"                          # Gmail 4.7.28 "unusual rate", "rate limited", Exim "sender rate"
    r"|\boverlimit\b|\bthrottl"                       # Exim "rate overlimit", SES "throttling failure"
    r"|\bper (?:second|minute|hour|day)\b"            # cPanel "max emails per hour", "max defers and failures per hour"
    r"|\[tss04\]|\bunexpected volume\b"               # Yahoo
    r"|\btry again slower\b|\bslow down\b")
_NOT_TEXT = re.compile(r"\S*[@/]\S*")                 # addresses, paths, links: not the server's words
_ENHANCED = re.compile(r"\b([245])\.(\d{1,3})\.(\d{1,3})\b")


def says_rate(code: int | None, detail: str) -> bool:
    """Whether a refusal says the site sends too fast. A mailbox's own rate
    (x.2.x, as Gmail's 4.2.1 "receiving mail at a rate…") is that
    recipient's, not the server's: not a rate of the site."""
    text = _NOT_TEXT.sub(" ", detail.lower())
    enhanced = _ENHANCED.search(text)
    if enhanced and enhanced.group(2) == "2":
        return False
    if code is not None and not 400 <= code <= 599:
        return False
    return bool(_RATE.search(text))


def server_of(settings: Settings) -> str | None:
    """Whose pace a run's letters keep: the SMTP host, or the transport name
    for sendmail; None for the outbox (no server, no pace)."""
    transport = settings["mail.transport"]
    if transport == "smtp":
        return "".join(settings["mail.smtp_host"].lower().split()).replace("|", "") or None
    if transport == "sendmail":
        return "sendmail"
    return None


class Learned(NamedTuple):
    """One server's learned pace, as ``data/state/pace`` keeps it."""

    server: str
    pace: float      # letters an hour when the server spoke, halved
    said: datetime   # when the server last said "too many"
    seen: int        # letters it had in the hour before: the ceiling without hourly_limit

    def ceiling(self, hourly_limit: int) -> float:
        return float(hourly_limit or max(self.seen, 1))

    def now(self, moment: datetime, hourly_limit: int) -> float:
        """Letters an hour allowed at ``moment``: a tenth more per clean hour."""
        hours = min(MOST_HOURS, max(0, int(seconds_between(moment, self.said) // HOUR)))
        return min(self.ceiling(hourly_limit), self.pace * RISE ** hours)

    def binds(self, moment: datetime, hourly_limit: int) -> bool:
        """Whether it still holds the site back (with ``hourly_limit`` set, a
        pace back at the cap leaves the cap alone to count)."""
        pace = self.now(moment, hourly_limit)
        return not hourly_limit or pace < hourly_limit


def learned(data: DataDir) -> list[Learned]:
    """Every server's learned pace (for Status), in the file's order."""
    path = data.state / "pace"
    if not path.exists():
        return []
    return [found for key, value in kv.read_kv(path).items()
            if "|" not in key and (found := _parse(key, value)) is not None]


def _parse(server: str, value: str) -> Learned | None:
    parts = value.split()
    try:
        said = parse_time(parts[1]) if len(parts) == 3 else None
        pace, seen = float(parts[0]), int(parts[2])
    except (BadInput, ValueError, IndexError):
        return None  # a line damaged by hand: no pace rather than a traceback
    if said is None or not math.isfinite(pace) or pace < 1 or seen < 0:
        return None
    return Learned(server, pace, said, seen)


def _minute(moment: datetime) -> str:
    return format_time(moment)[:16]


def _window(values: dict[str, str], server: str, moment: datetime) -> dict[str, int]:
    """The letters handed to ``server`` per minute over the hour up to ``moment``."""
    since = _minute(moment - timedelta(seconds=HOUR - 60))
    counts: dict[str, int] = {}
    for part in values.get(f"{server}|sent", "").split():
        minute, _, count = part.partition("=")
        if minute >= since and count.isdigit():
            counts[minute] = counts.get(minute, 0) + int(count)
    return counts


def _keep_window(values: dict[str, str], server: str, counts: dict[str, int]) -> None:
    kept = " ".join(f"{m}={c}" for m, c in sorted(counts.items()) if c > 0)
    if kept:
        values[f"{server}|sent"] = kept
    else:
        values.pop(f"{server}|sent", None)


class Pace:
    """One run's share of its server's pace: the letters it holds in the
    hour's window (a reservation while a pace binds, like the caps'), and
    what it learns when the server says "too many"."""

    def __init__(self, data: DataDir, settings: Settings, now: Callable[[], datetime]) -> None:
        self.path = data.state / "pace"
        self.settings, self.now = settings, now
        self.server = server_of(settings)
        self.held = 0                  # letters of this run in the window file
        self.minute: str | None = None  # the minute they are counted in
        self._learned: Learned | None | bool = False  # False: not read yet

    def _current(self) -> Learned | None:
        if self._learned is False:
            self._learned = None
            if self.server and self.path.exists():
                value = kv.read_kv(self.path).get(self.server)
                self._learned = _parse(self.server, value) if value else None
        return self._learned  # type: ignore[return-value]

    def binds(self) -> bool:
        """Whether a learned pace holds this run back (read once a run)."""
        found = self._current()
        return found is not None and found.binds(self.now(), self.settings["hourly_limit"])

    def reserve(self, wanted: int) -> int:
        """Of ``wanted`` letters, those the pace allows now, counted in the
        window at once (a killed run's count stays: it errs on sending less)."""
        found = self._current()
        if found is None or not self.server or not self.binds():
            return wanted
        moment, server = self.now(), self.server
        granted = 0

        def change(values: dict[str, str]) -> None:
            nonlocal granted
            counts = _window(values, server, moment)
            allowed = math.floor(found.now(moment, self.settings["hourly_limit"]) + 1e-9)
            granted = max(0, min(wanted, allowed - sum(counts.values())))
            minute = _minute(moment)
            counts[minute] = counts.get(minute, 0) + granted
            _keep_window(values, server, counts)
        kv.change_kv(self.path, change)
        self.held, self.minute = granted, _minute(moment)
        return granted

    def settle(self, used: int) -> None:
        """The run's letters counted as they went: its reservation made
        exact, or (no pace bound it) its letters added to the window."""
        if not self.server or used == self.held:
            return
        moment, server = self.now(), self.server

        def change(values: dict[str, str]) -> None:
            counts = _window(values, server, moment)
            if self.minute is not None:
                if self.minute in counts:
                    counts[self.minute] = max(0, counts[self.minute] - self.held + used)
            else:
                counts[_minute(moment)] = counts.get(_minute(moment), 0) + used
            _keep_window(values, server, counts)
        kv.change_kv(self.path, change)
        self.held, self.minute = used, self.minute or _minute(moment)

    def learn(self, handed: int) -> Learned | None:
        """The server said "too many": the pace becomes half the letters it
        had in the last hour (``handed`` of them this run's). None when fewer
        than two went: nothing to halve, the refusal is a plain 4xx."""
        if not self.server:
            return None
        moment, server = self.now(), self.server
        result: Learned | None = None

        def change(values: dict[str, str]) -> None:
            nonlocal result
            counts = _window(values, server, moment)
            others = sum(counts.values()) - (self.held if self.minute in counts else 0)
            seen = max(0, others) + handed
            if seen < 2:
                return
            result = Learned(server, seen / 2, moment, seen)
            values[server] = f"{result.pace:.2f} {format_time(moment)} {seen}"
        kv.change_kv(self.path, change)
        if result is not None:
            self._learned = result
        return result


class Shown(NamedTuple):
    """A learned pace as Status shows it."""

    server: str
    pace: int        # whole letters an hour allowed now
    said: str        # when the server last said "too many" (a file time)
    ceiling: int     # where it stops rising
    binds: bool      # False: back at hourly_limit, which alone counts again


def shown(data: DataDir, settings: Settings, moment: datetime) -> list[Shown]:
    """Every learned pace, as it stands at ``moment``."""
    hourly = settings["hourly_limit"]
    return [Shown(found.server, math.floor(found.now(moment, hourly) + 1e-9),
                  format_time(found.said), int(found.ceiling(hourly)),
                  found.binds(moment, hourly))
            for found in learned(data)]
