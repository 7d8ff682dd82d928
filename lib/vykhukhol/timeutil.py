"""Times and durations as they appear in data files and settings.

Times in files are UTC, ISO 8601 with a ``Z`` (``2026-11-29T17:00:00Z``).
Durations are an integer and a unit: ``45s``, ``10m``, ``2h``, ``3d``.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from vykhukhol.errors import BadInput

UTC = timezone.utc
NONE = "-"  # how an absent time is written in a data file

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_DURATION = 3650 * 86400  # ten years: longer is a typo, and overflows dates


def parse_duration(text: str) -> int:
    """Seconds in a duration like ``2d``; BadInput names the accepted form."""
    import re  # not at the top: the idle cron tick and the public pages read times only

    match = re.match(r"^ *([0-9]{1,9}) *([smhd]) *$", text or "")
    if not match:
        raise BadInput("not a duration: {text} (expected a whole number and a unit: 45s, 10m, 2h, 3d)",
                       text=repr(text))
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds > MAX_DURATION:
        raise BadInput("duration {text} is too long (at most 3650d)", text=repr(text.strip()))
    return seconds


def format_duration(seconds: int) -> str:
    """The shortest exact spelling of a duration (``86400`` → ``1d``)."""
    for unit in "dhm":
        size = _UNIT_SECONDS[unit]
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def now() -> datetime:
    """The current UTC time, to the second (files keep seconds only)."""
    return datetime.now(UTC).replace(microsecond=0)


def format_time(moment: datetime | None) -> str:
    if moment is None:
        return NONE
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    # Not strftime: its %Y writes the year 1 as "1" on glibc, which parse_time
    # then refuses, so a rewrite would turn a valid line into a malformed one.
    # %04d pads the year to four digits, as isoformat does. Here it takes 0.9
    # us a time, against 1.3 for isoformat on an aware time, 1.8 for an
    # f-string with widths and 2.9 for strftime (a fold writes three a line).
    return "%04d-%02d-%02dT%02d:%02d:%02dZ" % (moment.year, moment.month, moment.day,  # noqa: UP031
                                               moment.hour, moment.minute, moment.second)


def parse_time(text: str) -> datetime | None:
    """A file time back to a datetime; ``-`` is None; anything else is BadInput."""
    if text == NONE:
        return None
    if len(text) == 20 and text[19] == "Z" and text[10] == "T" and text[4] == text[7] == "-" \
            and text[13] == text[16] == ":":
        # The form every file holds, read without strptime or re: scans of big
        # subscriber files parse millions of these. With the separators where
        # they belong, fromisoformat takes nothing but ASCII digits between
        # them. Anything odd (a month 13, a leap second) falls through to
        # strptime and its verdict.
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            pass
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise BadInput(f"not a time: {text!r} (expected 2026-11-29T17:00:00Z)") from None


def seconds_between(later: datetime, earlier: datetime) -> float:
    return (later - earlier).total_seconds()


FAR_FUTURE = datetime.max.replace(microsecond=0, tzinfo=UTC)
FAR_PAST = datetime.min.replace(tzinfo=UTC)


def after(moment: datetime, seconds: float) -> datetime:
    """``moment`` plus ``seconds``, held at the calendar's ends: a time typed as
    9999-12-31 in a file plus a delay is "never", not an OverflowError."""
    try:
        return moment + timedelta(seconds=seconds)
    except OverflowError:
        return FAR_FUTURE if seconds >= 0 else FAR_PAST


def parse_local_time(text: str, zone: str) -> datetime:
    """``2026-12-01 09:00`` read as a wall-clock time in ``zone``, as UTC."""
    from zoneinfo import ZoneInfo

    try:
        local = datetime.strptime(text.strip(), "%Y-%m-%d %H:%M")
        return local.replace(tzinfo=ZoneInfo(zone)).astimezone(UTC)
    except (ValueError, OverflowError):
        raise BadInput('{text} is not a time like "2026-12-01 09:00"', text=repr(text)) from None
