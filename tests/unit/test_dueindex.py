"""The due index's quick reading of a subscriber line says what parse_line and
next_action say, on any line (docs/design/run.md#due-index): a fast path held to the plain one."""

from __future__ import annotations

import random

import pytest

from vykhukhol.errors import BadInput
from vykhukhol.sender import dueindex
from vykhukhol.services.rules import Rules
from vykhukhol.services.subscriber_line import parse_line

TIMES = ["-", "1970-01-01T00:00:00Z", "2026-11-29T17:00:00Z", "9999-12-31T23:59:59Z",
         "1969-12-31T23:59:59Z", "2024-02-29T12:00:00Z", "2023-02-29T12:00:00Z", "2026-04-31T00:00:00Z",
         "2026-12-31T23:59:59Z", "9999-12-31T00:00:00Z",
         "0001-01-01T00:00:00Z", "2026-1-05T10:00:00Z", "2026-01-05t10:00:00Z",
         "2026-13-01T00:00:00Z", "2026-06-15T24:00:00Z", "2026-06-15T10:60:00Z", "", "now"]
COUNTS = ["0", "1", "3", "2", "5", "007", "-1", "x", "", "٣", " 1", "123456789012"]
STATES = ["new", "active", "done", "active", "Active", "gone", ""]
ADDRESSES = ["a@example.org", "@", "ü@example.org", "x@y", "no-at-sign", "a@b\udcff"]
RULES = [Rules((0, 86400, 2 * 86400), 86400, 2, False), Rules((), 3 * 86400, 0, True),
         Rules((60,), 60, 5, False), Rules((10**9,) * 4, 10**9, 1, True)]


def plain(line: str, rules: Rules):
    try:
        return dueindex.classify(parse_line(line), rules)
    except BadInput:
        return "malformed"


def lines(count: int, seed: int):
    """Random lines, most of them near the usual form (the first four choices
    of each list are valid), some odd in one or more fields."""
    rng = random.Random(seed)

    def pick(values: list[str]) -> str:
        return rng.choice(values[:4] if rng.random() < 0.9 else values)

    for _ in range(count):
        fields = [pick(ADDRESSES), rng.choice(["", "Name", "Ю"]), pick(STATES), pick(TIMES),
                  pick(TIMES), pick(COUNTS), pick(TIMES), pick(COUNTS), pick(TIMES),
                  pick(COUNTS), rng.choice(["-", "::1"])]
        fields += rng.choice([[], ["extra"], ["a", "b\udc80"]])
        if rng.random() < 0.05:
            del fields[rng.randrange(len(fields))]
        yield "\t".join(fields)


@pytest.mark.parametrize("rules", RULES, ids=range(len(RULES)))
def test_the_quick_reading_agrees_with_parse_line_on_any_line(rules):
    quick_lines = 0
    for line in lines(6000, seed=hash(rules) & 0xFFFF):
        quick = dueindex.quick_due(line, rules)
        if quick is False:
            continue
        quick_lines += 1
        assert quick == plain(line, rules), line
    assert quick_lines > 200  # the quick path was taken, not only refused


def test_the_usual_lines_take_the_quick_path():
    rules = RULES[0]
    for line in ("a@example.org\tA\tactive\t2026-11-29T17:00:00Z\t2026-11-29T17:00:00Z\t0\t-\t0\t"
                 "-\t0\t127.0.0.1",
                 "b@example.org\t\tnew\t2026-11-29T17:00:00Z\t-\t0\t-\t1\t2026-11-30T17:00:00Z\t0\t-",
                 "c@example.org\tC\tdone\t1970-01-01T00:00:00Z\t1970-01-01T00:00:00Z\t3\t"
                 "9999-12-31T23:59:59Z\t0\t-\t4\t-\tx"):
        quick = dueindex.quick_due(line, rules)
        assert quick is not False and quick == plain(line, rules), line
