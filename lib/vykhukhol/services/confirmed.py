"""The confirmed readers of a subscriber file, for a newsletter, read fast.

A newsletter reads every line of a big file for its recipients: a regular
expression chooses the lines that :func:`~vykhukhol.services.subscriber_line.parse_line`
certainly accepts with a confirmed state, so no Subscriber is built per
line; every other line goes to ``parse_line`` for its verdict. It does not
change the file, nor read one subscriber (:mod:`~vykhukhol.services.subscribers`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from vykhukhol import files
from vykhukhol.errors import BadInput
from vykhukhol.services.subscriber_line import FIELDS, Subscriber, parse_line
from vykhukhol.states import SubscriberState

# A subscriber line that parse_line certainly accepts, with a confirmed
# state: UTF-8 text (bytes that were not UTF-8 read as U+DC80..U+DCFF), an address
# with an @, the counts whole numbers, every time "-" or a real date in the
# canonical form. Nearly every line of a real file matches it; the others (state
# new, a leap day, a malformed line) go to parse_line for its verdict. So the
# recipients are exactly those parse_line gives, without a Subscriber or four
# datetimes built per line (the bulk of the time at a million). It spells the
# field order of FIELDS again; tests/unit/test_newsletter_create.py
# holds both readings to the same verdict on any line.
#
# It must fail in linear time on any line: every field is a run of non-tabs
# ended by a tab, so no two quantifiers compete for a character — except the
# address's, split at an @. Its first part stops at the first @ ("[^@]*"), so
# a field of many @ (20k of them once took 5 s, the time growing with the
# square) is split one way only, not once per @.
_TEXT = "[^\t\udc80-\udcff]*"
_BEFORE_AT = "[^\t@\udc80-\udcff]*"
_DATE = ("[1-9][0-9]{3}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"  # days 1-28
         "|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)")  # and the rest but Feb 29
_TIME = f"(?:-|{_DATE}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z)"
_COUNT = "[0-9]{1,18}"  # far below int()'s limit on digits
_CONFIRMED_STATES = frozenset(state.value for state in SubscriberState if state.confirmed)


@functools.lru_cache(maxsize=1)
def _confirmed_line() -> re.Pattern[str]:
    """Compiled on first use (~1.5 ms): a subscribe request never needs it."""
    return re.compile(
        f"(?!#)({_BEFORE_AT}@{_TEXT})\t({_TEXT})\t(?:{'|'.join(sorted(_CONFIRMED_STATES))})"
        f"\t{_TIME}\t{_TIME}\t{_COUNT}\t{_TIME}\t{_COUNT}\t{_TIME}\t{_COUNT}\t{_TEXT}"
        "(?:\t([^\udc80-\udcff]*))?")  # the trailing fields: confirmed_details


def confirmed(path: Path) -> Iterator[tuple[str, str]]:
    """(email, name) of the confirmed subscribers of a subscriber file, in file
    order: what :func:`~vykhukhol.services.subscribers.subscribers` yields with
    a confirmed state, read without a Subscriber per line (newsletter creation
    at a million)."""
    fullmatch = _confirmed_line().fullmatch
    for line in files.read_lines(path):
        match = fullmatch(line)
        if match:
            yield match[1], match[2]
            continue
        sub = _parsed_if_confirmed(line)
        if sub is not None:
            yield sub.email, sub.name


def _parsed_if_confirmed(line: str) -> Subscriber | None:
    """A line the fast match did not take, as parse_line reads it when its state
    is a confirmed one; None for any other (a new subscriber, a comment, a
    malformed line: skipped, as by every reader of the file). Only the state
    field is looked at first: most such lines go no further."""
    parts = line.split("\t", 3)
    if len(parts) < 3 or parts[2] not in _CONFIRMED_STATES or line.startswith("#"):
        return None
    try:
        return parse_line(line)
    except BadInput:
        return None


# The readers of a subscriber file for a newsletter: the lines confirmed()
# chooses, each read where it lies, without a split per line: this loop is
# most of a newsletter's making (docs/performance.md). A line the pattern
# does not take goes to parse_line, whose line is then read the same way.

def readers(path: Path) -> Iterator[tuple[str, str, str | None]]:
    """(email, name, trailing fields; None: none) of each confirmed
    subscriber, in file order: :func:`confirmed` with the reader's language
    and field values as the line has them, tab-separated and escaped."""
    fullmatch = _confirmed_line().fullmatch
    for line in files.read_lines(path):
        match = fullmatch(line)
        if match is not None:
            yield match[1], match[2], match[3]
            continue
        sub = _parsed_if_confirmed(line)
        if sub is not None:
            yield sub.email, sub.name, "\t".join(sub.extra) or None


def chosen_readers(path: Path, test: Callable[[str, int, str], bool], bare: bool | None,
                   service: str) -> Iterator[tuple[str, str, str | None]]:
    """:func:`readers`, only the lines ``test(line, at, service)`` chooses
    (a segment's condition), ``at`` where the line's trailing fields begin
    (the tab before the first; the line's length when it has none).
    ``bare``: the verdict on any line without trailing fields when it is
    known (None: ask each)."""
    fullmatch = _confirmed_line().fullmatch
    for line in files.read_lines(path):
        match = fullmatch(line)
        if match is not None:
            at = match.start(3)  # the trailing fields (-1: none)
            if (bare if at < 0 and bare is not None
                    else test(line, at - 1 if at > 0 else len(line), service)):
                yield match[1], match[2], match[3]
            continue
        sub = _parsed_if_confirmed(line)
        if sub is not None:
            written = sub.to_line()
            if test(written, trailing_at(written), service):
                yield sub.email, sub.name, "\t".join(sub.extra) or None


def trailing_at(line: str) -> int:
    """Where the trailing fields of a subscriber ``line`` begin: the tab
    before the first of them, or the line's length when it has none."""
    parts = line.split("\t", len(FIELDS))
    return len(line) - len(parts[-1]) - 1 if len(parts) > len(FIELDS) else len(line)
