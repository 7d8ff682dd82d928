"""A segment's condition compiled into a test of a subscriber line (split
at its first eleven tabs, the trailing fields one string), as
:func:`vykhukhol.services.confirmed.confirmed_lines` gives it: the test
runs once per confirmed subscriber of a newsletter's services, so it is
built of closures over locals and a kept verdict per text.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from vykhukhol.newsletters.segments.grammar import Both, Compare, Either, Node, Not
from vykhukhol.services.subscriber_line import FIELD, FIELDS, LANGUAGE, unescape_value

_KNOWN = 10_000  # verdicts a test keeps
EXTRA = len(FIELDS)  # the trailing fields of a split line begin here
_JOINED = FIELDS.index("subscribed")
_SENT = FIELDS.index("sent")

Line = list[str]  # a subscriber line split at its first eleven tabs: the trailing fields are one
Test = Callable[[Line, str], bool]


# Compiling. A test reads the text its name has on the line (None: none)
# and judges it; a list's texts repeat (a city, a plan, a date), so each
# text's verdict is kept and most lines cost a search and a dict lookup.

def _judge(node: Compare, default_language: str) -> Callable[[str | None], bool]:
    """The verdict of ``node`` on a name's kept text (None: no value)."""
    convert = _CONVERT[node.kind]
    wanted = [convert(v) for v in node.values]
    fallback = default_language.casefold() if node.name == "language" else None
    op = node.op

    def judge(kept: str | None) -> bool:
        value = None if kept is None else convert(unescape_value(kept))
        if value is None:
            value = fallback
        if op == "empty":
            return value is None
        if op == "not empty":
            return value is not None
        if op == "!=":
            return value != wanted[0]
        if value is None:
            return False
        if op == "in":
            return value in wanted
        if op == "contains":
            return wanted[0] in value  # type: ignore[operator]
        return bool(_ORDER[op](value, wanted[0]))
    return judge


def _test(node: Compare, default_language: str) -> Test:
    judge = _judge(node, default_language)
    known: dict[str | None, bool] = {}
    look = known.get

    def verdict(kept: str | None) -> bool:
        found = look(kept)
        if found is None:
            found = judge(kept)
            if len(known) < _KNOWN:
                known[kept] = found
        return found

    if node.name == "service":
        return lambda parts, service: verdict(service)
    if node.name == "reached":
        return lambda parts, service: verdict(parts[_SENT])
    if node.name == "joined":  # the date: the first ten characters of the time
        return lambda parts, service: verdict(None if parts[_JOINED] == "-" else parts[_JOINED][:10])
    prefix = LANGUAGE if node.name == "language" else f"{FIELD}{node.name}="
    inside, skip, extra, missing = "\t" + prefix, len(prefix), EXTRA, judge(None)

    def test(parts: Line, service: str) -> bool:
        # Locals only, one search of the trailing fields (not a loop over
        # them): this runs once per confirmed subscriber.
        if len(parts) <= extra:
            return missing
        tail = parts[extra]
        if tail.startswith(prefix):
            start = skip
        else:
            start = tail.find(inside)
            if start < 0:
                return missing
            start += skip + 1
        end = tail.find("\t", start)
        kept = tail[start:] if end < 0 else tail[start:end]
        found = look(kept)
        return verdict(kept) if found is None else found
    return test


def _as_number(value: str) -> Decimal | None:
    try:
        number = Decimal(value) if value and value.isascii() and len(value) <= 40 else None
    except InvalidOperation:
        return None
    return number if number is not None and number.is_finite() else None  # NaN never compares


def _as_date(value: str) -> str | None:
    try:
        return date.fromisoformat(value).isoformat() if len(value) == 10 else None
    except ValueError:
        return None


_CONVERT: dict[str, Callable[[str], object]] = {
    "text": lambda v: v.casefold() or None, "choice": lambda v: v.casefold() or None,
    "number": _as_number, "date": _as_date, "yesno": lambda v: v.lower() or None,
}


def compile_tree(node: Node, default_language: str) -> Test:
    if isinstance(node, Not):
        inner = compile_tree(node.node, default_language)
        return lambda parts, service: not inner(parts, service)
    if isinstance(node, (Both, Either)):
        each = tuple(compile_tree(n, default_language) for n in node.nodes)
        return _both(each) if isinstance(node, Both) else _either(each)
    return _test(node, default_language)


def _both(each: tuple[Test, ...]) -> Test:
    def test(parts: Line, service: str) -> bool:  # a loop, not a generator per subscriber
        for one in each:
            if not one(parts, service):
                return False
        return True
    return test


def _either(each: tuple[Test, ...]) -> Test:
    def test(parts: Line, service: str) -> bool:
        for one in each:
            if one(parts, service):
                return True
        return False
    return test


_ORDER: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
