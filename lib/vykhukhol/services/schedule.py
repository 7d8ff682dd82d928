"""Schedule expressions: five cron-like fields (docs/using/services.md#schedules).

``minute hour day-of-month month day-of-week``, with the ranges 0-59, 0-23,
1-31, 1-12 and 0-7 (0 and 7 are both Sunday). Each field is a comma-separated
list of items; an item is

* ``*`` – the whole range of the field;
* ``5`` – one value;
* ``9-18`` – a range; a *reverse* range wraps around the field's range
  (``22-2`` in hours is 22, 23, 0, 1, 2);
* any of the above with a step: ``*/10``, ``1-20/3``, ``22-2/2``, and the
  extension ``5/10`` (a single value with a step: 5, 15, 25 … up to the
  field's maximum).

A step counts along the item's sequence from its start, and ``*`` starts at
the field's minimum: ``*/2`` in day of month is 1, 3, 5 … 31. In a reverse
range the step counts along the wrapped sequence (``22-2/2`` in hours is 22,
0, 2). The day-of-week field wraps over its written range 0-7, so ``5-1`` is
5, 6, 7, 0, 1 (Fri, Sat, Sun, Sun, Mon) and a step counts that sequence as it
is written.

Day of month and day of week: a field is *restricted* when its text is
anything but exactly ``*`` – so ``*/1`` or ``1-31`` count as restricted (plain
Vixie cron instead treats any field starting with ``*`` as unrestricted). When
both are restricted a day matches if either matches (``0 0 13 * 5`` is "the
13th, and every Friday"); otherwise both must match.

Names (``MON``, ``JAN``) are not accepted.

Invalid expressions. At run time an invalid expression simply never matches
(:func:`matches_expr` returns False and never raises). Every place that
*accepts* an expression calls :func:`validate` (or :meth:`Schedule.parse`),
which raises :class:`~vykhukhol.errors.BadInput` with a short message naming
the field and the reason. A zero step (``*/0``) is treated the same way: it
never matches (docs/using/services.md#schedules), so ``matches_expr`` returns False for it, and
because it can never be what the user meant, ``validate`` rejects it
("a step of 0 never matches"). A step larger than the field's range (``*/90``
in minutes) is rejected too, since it cannot mean what it seems to say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

from vykhukhol.errors import BadInput, Term

__all__ = ["Schedule", "validate", "matches_expr", "FIELD_NAMES"]

# (name, smallest value, largest value) of the five fields, in order
_FIELDS: tuple[tuple[str, int, int], ...] = (
    (Term("minute"), 0, 59),
    (Term("hour"), 0, 23),
    (Term("day of month"), 1, 31),
    (Term("month"), 1, 12),
    (Term("day of week"), 0, 7),
)
FIELD_NAMES: tuple[str, ...] = tuple(name for name, _, _ in _FIELDS)

_FIELD_SEPARATOR = re.compile(r"[ \t]+")
_OUTER_SPACE = " \t\r\n"
_NUMBER = re.compile(r"[0-9]+")
_NAME = re.compile(r"[A-Za-z]{3,}")
_MAX_DIGITS = 6  # longer numbers are out of range anyway; int() of huge text is slow


def _show(text: str) -> str:
    """A piece of user text for a message: quoted, escaped, and not too long."""
    if len(text) > 20:
        text = text[:20] + "…"
    return repr(text)


def _number(text: str, name: str, lo: int, hi: int) -> int:
    """A value of a field, checked against the field's range."""
    if not _NUMBER.fullmatch(text):
        if _NAME.fullmatch(text):
            raise BadInput("{field}: names like {text} are not accepted, write numbers",
                           field=Term(name), text=_show(text))
        raise BadInput("{field}: {text} is not a number", field=Term(name), text=_show(text))
    digits = text.lstrip("0") or "0"
    if len(digits) > _MAX_DIGITS or not lo <= int(digits) <= hi:
        raise BadInput("{field}: {value} is out of range {lo}-{hi}", field=Term(name), value=digits,
                       lo=lo, hi=hi)
    return int(digits)


def _step(text: str, name: str, lo: int, hi: int, item: str) -> int:
    if text == "":
        raise BadInput("{field}: {item} has no step after '/'", field=Term(name), item=_show(item))
    if not _NUMBER.fullmatch(text):
        raise BadInput("{field}: step {text} is not a number", field=Term(name), text=_show(text))
    digits = text.lstrip("0") or "0"
    if digits == "0":
        raise BadInput("{field}: a step of 0 never matches", field=Term(name))
    span = hi - lo + 1
    if len(digits) > _MAX_DIGITS or int(digits) > span:
        raise BadInput("{field}: step {step} is larger than the range {lo}-{hi}", field=Term(name),
                       step=digits, lo=lo, hi=hi)
    return int(digits)


def _item_values(item: str, name: str, lo: int, hi: int) -> list[int]:
    """The values one list item stands for, in the order its step counts them."""
    if item == "":
        raise BadInput("{field}: an empty item in the list (two commas, or a comma at an end)",
                       field=Term(name))
    base, slash, step_text = item.partition("/")
    step = _step(step_text, name, lo, hi, item) if slash else 1
    if base == "":
        raise BadInput("{field}: {item} has nothing before '/' (write */{step})", field=Term(name),
                       item=_show(item), step=step_text)
    if base == "*":
        sequence = list(range(lo, hi + 1))
    elif "-" in base:
        start_text, _, end_text = base.partition("-")
        if start_text == "":
            if _NUMBER.fullmatch(end_text):  # "-5": a negative number
                raise BadInput("{field}: {value} is out of range {lo}-{hi}", field=Term(name),
                               value=f"-{end_text}", lo=lo, hi=hi)
            raise BadInput("{field}: range {range} has no start", field=Term(name), range=_show(base))
        if end_text == "":
            raise BadInput("{field}: range {range} has no end", field=Term(name), range=_show(base))
        if "-" in end_text:
            raise BadInput("{field}: {range} is not a range (one '-' between two numbers)",
                           field=Term(name), range=_show(base))
        start = _number(start_text, name, lo, hi)
        end = _number(end_text, name, lo, hi)
        if start <= end:
            sequence = list(range(start, end + 1))
        else:  # a reverse range wraps: start..max, then min..end
            sequence = list(range(start, hi + 1)) + list(range(lo, end + 1))
    else:
        start = _number(base, name, lo, hi)
        sequence = list(range(start, hi + 1)) if slash else [start]
    return sequence[::step]


def _field_values(text: str, name: str, lo: int, hi: int) -> frozenset[int]:
    values: set[int] = set()
    for item in text.split(","):
        values.update(_item_values(item, name, lo, hi))
    return frozenset(values)


def _split(expr: str) -> list[str]:
    if not isinstance(expr, str):
        raise BadInput("a schedule must be text")
    stripped = expr.strip(_OUTER_SPACE)
    fields = _FIELD_SEPARATOR.split(stripped) if stripped else []
    if len(fields) != 5:
        raise BadInput("a schedule has five fields (minute hour day-of-month month day-of-week), "
                       "got {count}", count=len(fields))
    return fields


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule expression: the sets of values each field allows.

    ``weekdays`` uses 0-6 with Sunday as 0 (a written 7 is stored as 0).
    ``dom_restricted``/``dow_restricted`` say whether the day-of-month and
    day-of-week fields were written as anything but exactly ``*``.
    """

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    dom_restricted: bool
    dow_restricted: bool

    @classmethod
    def parse(cls, expr: str) -> Schedule:
        """Parse ``expr``; BadInput names the field and the reason (a zero step too)."""
        fields = _split(expr)
        sets = [
            _field_values(text, name, lo, hi)
            for text, (name, lo, hi) in zip(fields, _FIELDS, strict=True)
        ]
        minutes, hours, days, months, weekdays = sets
        return cls(
            minutes=minutes,
            hours=hours,
            days=days,
            months=months,
            weekdays=frozenset(day % 7 for day in weekdays),
            dom_restricted=fields[2] != "*",
            dow_restricted=fields[4] != "*",
        )

    def matches(self, moment: datetime) -> bool:
        """Whether the minute of ``moment`` is in the schedule.

        ``moment`` is already in the wanted timezone (naive or aware; its own
        wall-clock fields are used). Seconds and below are ignored.
        """
        if (
            moment.minute not in self.minutes
            or moment.hour not in self.hours
            or moment.month not in self.months
        ):
            return False
        dom_ok = moment.day in self.days
        dow_ok = (moment.weekday() + 1) % 7 in self.weekdays  # Python: Monday=0
        if self.dom_restricted and self.dow_restricted:
            return dom_ok or dow_ok
        return dom_ok and dow_ok


def validate(expr: str) -> str:
    """The expression with its fields joined by single spaces, or BadInput.

    For every place that accepts an expression (forms, CLI, settings).
    """
    fields = _split(expr)
    Schedule.parse(expr)
    return " ".join(fields)


@lru_cache(maxsize=256)
def _cached_parse(expr: str) -> Schedule | None:
    try:
        return Schedule.parse(expr)
    except BadInput:
        return None


def matches_expr(expr: str, moment: datetime, tz: str = "UTC") -> bool:
    """Whether ``moment`` falls in the schedule ``expr``, matched in zone ``tz``.

    Never raises: an invalid expression (a zero step included) or an unknown
    zone never matches. An aware ``moment`` is converted to ``tz``; a naive
    one is taken as UTC.
    """
    if not isinstance(expr, str) or not isinstance(moment, datetime):
        return False
    schedule = _cached_parse(expr)
    if schedule is None:
        return False
    from zoneinfo import ZoneInfo  # only a send window asks: a run without one never imports it

    try:
        zone = ZoneInfo(tz)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        local = moment.astimezone(zone)
    except (ValueError, KeyError, TypeError, OverflowError, OSError):
        # unknown or malformed zone name, or a moment at the very edge of datetime
        return False
    return schedule.matches(local)
