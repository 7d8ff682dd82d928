"""A segment's condition compiled into a test of a subscriber line, as
:meth:`vykhukhol.services.subscriber_line.Subscriber.to_line` writes it: the
test runs once per confirmed subscriber of a newsletter's services, so it
is built of closures over locals, reads the line where it lies (no split of
the line, nor of its trailing fields) and keeps a verdict per text.

A test is ``test(line, at, service)``: ``at`` is where the line's trailing
fields begin (the tab before the first of them; the line's length when it
has none), which the reader of the file knows already
(:func:`vykhukhol.services.confirmed.trailing_at` finds it otherwise). It does not parse the condition (:mod:`.grammar` does).
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
_JOINED = FIELDS.index("subscribed")
_SENT = FIELDS.index("sent")

Test = Callable[[str, int, str], bool]  # (line, where its trailing fields begin, service)


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
        if op == "in":
            return value is not None and value in wanted
        if value is None or wanted[0] is None:  # "": no value, that nothing equals or holds
            return False
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
        return lambda line, at, service: verdict(service)
    if node.name == "reached":
        return lambda line, at, service: verdict(line.split("\t", _SENT + 1)[_SENT])
    if node.name == "joined":  # the date: the first ten characters of the time
        def joined(line: str, at: int, service: str) -> bool:
            time = line.split("\t", _JOINED + 1)[_JOINED]
            return verdict(None if time == "-" else time[:10])
        return joined
    inside = "\t" + (LANGUAGE if node.name == "language" else f"{FIELD}{node.name}=")
    skip, missing = len(inside), judge(None)

    def test(line: str, at: int, service: str) -> bool:
        # Locals only, one search from where the trailing fields begin (a
        # value holds no tab: the line escapes it): this runs once per
        # confirmed subscriber.
        start = line.find(inside, at)
        if start < 0:
            return missing
        start += skip
        end = line.find("\t", start)
        kept = line[start:] if end < 0 else line[start:end]
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
        return lambda line, at, service: not inner(line, at, service)
    if isinstance(node, (Both, Either)):
        # Cheapest first: "and" and "or" have no side effects, so their order
        # is free, and a line most often stops at the first test it asks.
        each = tuple(compile_tree(n, default_language) for n in sorted(node.nodes, key=_cost))
        return _both(each) if isinstance(node, Both) else _either(each)
    return _test(node, default_language)


def bare_verdict(node: Node, test: Test) -> bool | None:
    """What ``test`` (compiled from ``node``) says of every line without
    trailing fields, when it says the same of all of them: a condition on
    fields and the language alone (None: it asks the service, the join date
    or the letters reached, so each line is asked)."""
    return test("", 0, "") if _fields_only(node) else None


def _fields_only(node: Node) -> bool:
    if isinstance(node, Not):
        return _fields_only(node.node)
    if isinstance(node, (Both, Either)):
        return all(_fields_only(n) for n in node.nodes)
    return node.name not in ("service", "joined", "reached")


def _cost(node: Node) -> int:
    """What a test of ``node`` costs a line, roughly: the service is known,
    a field is one search, the join date and the letters reached a split."""
    if isinstance(node, Not):
        return _cost(node.node)
    if isinstance(node, (Both, Either)):
        return sum(_cost(n) for n in node.nodes)
    return {"service": 0, "joined": 3, "reached": 3}.get(node.name, 1)


def _both(each: tuple[Test, ...]) -> Test:
    if len(each) == 2:  # the usual sizes unrolled: no loop per subscriber
        one, two = each
        return lambda line, at, service: one(line, at, service) and two(line, at, service)
    if len(each) == 3:
        one, two, three = each
        return lambda line, at, service: (one(line, at, service) and two(line, at, service)
                                          and three(line, at, service))

    def test(line: str, at: int, service: str) -> bool:  # a loop, not a generator per subscriber
        for one in each:
            if not one(line, at, service):
                return False
        return True
    return test


def _either(each: tuple[Test, ...]) -> Test:
    if len(each) == 2:
        one, two = each
        return lambda line, at, service: one(line, at, service) or two(line, at, service)
    if len(each) == 3:
        one, two, three = each
        return lambda line, at, service: (one(line, at, service) or two(line, at, service)
                                          or three(line, at, service))

    def test(line: str, at: int, service: str) -> bool:
        for one in each:
            if one(line, at, service):
                return True
        return False
    return test


_ORDER: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
