"""The form stamp of the public forms (docs/using/subscriber-pages.md#subscriber-bots):
a person's stamp passes; one too young, too old, from the future, of another
secret or not a stamp at all is a bot's."""

from __future__ import annotations

import pytest

from vykhukhol.web import bots

SECRET = b"s" * 32
NOW = 1_800_000_000.0


def test_a_stamp_drawn_a_minute_ago_passes() -> None:
    assert bots.stamp_problem(SECRET, bots.stamp(SECRET, NOW - 60), NOW) == ""


@pytest.mark.parametrize("value", [
    bots.stamp(SECRET, NOW - 1),                       # faster than a person
    bots.stamp(SECRET, NOW + 600),                     # from the future
    bots.stamp(SECRET, NOW - bots.STAMP_LIFE - 1),     # a form kept too long
    bots.stamp(b"t" * 32, NOW - 60),                   # another site's secret
    f"{int(NOW - 60)}.{'0' * 32}",                     # forged
    "", ".", "abc.def", "1" * 40 + "." + "0" * 32,     # not a stamp
    f"{int(NOW - 60)}.{'é' * 32}",                     # not ASCII
])
def test_anything_else_is_a_bots(value: str) -> None:
    assert bots.stamp_problem(SECRET, value, NOW) != ""
