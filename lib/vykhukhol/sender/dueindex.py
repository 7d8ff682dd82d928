"""An index of due times kept beside a subscriber file, so a run reads only
the lines it will send to or clean up
(docs/design/run.md#due-index).

``data/state/index/<service>.due`` lists, for every line of ``subscribers.txt``
that will ever be due, where the line starts (a byte offset), when it is due
and what is due (a letter, a reminder, or clean-up). A run picks its lines
from the index, reads just those (a seek each), and the fold writes the new
file as a splice (:func:`files.splice`: the changed lines replaced, every
other byte copied through) and the index moved along with it.

The subscriber file stays the one source of truth. The index covers the
file's first ``covered`` bytes and says so with their CRC-32, and with the
file's stamp (size, mtime, inode) when it covers all of it:

* same stamp: trusted without reading the file;
* another stamp, but the first ``covered`` bytes are the same (lines were
  appended: a subscribe, an FTP upload adding lines): trusted for those, and
  the new lines are read and added;
* other bytes (an FTP edit, a rewrite by anyone): every MARK_EVERY bytes the
  index keeps the CRC of the file so far, so the part before the first
  changed mark still counts and only the rest is read again;
* a corrupt, truncated or missing index, or other letter delays: built again
  from the file.

Reading is done within the run's time, and across several runs if it must,
since a partial index is just one that covers less of the file.

Every line a run picks is parsed again and must say what the index said;
if it does not, the index is thrown away and built again. So a wrong index
can make a run slower, never make it send a wrong letter.

It deliberately knows nothing of sending: :func:`classify` asks
:func:`series.next_action` what is due, as the sender does.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from enum import IntEnum
from heapq import nsmallest
from itertools import compress
from itertools import count as count_up
from operator import mul
from pathlib import Path
from typing import Literal

from vykhukhol import files
from vykhukhol.errors import BadInput
from vykhukhol.services import subscriber_line
from vykhukhol.services.rules import LETTER, NOTHING, REMIND, Action, Rules, next_action
from vykhukhol.services.subscriber_line import Subscriber

MAGIC = b"vykhukhol due index 1\n"


class Due(IntEnum):
    """What is due on a line; the number is the byte the index file keeps."""

    SEND = 1   # a series letter
    ASK = 2    # a reminder to confirm
    TIDY = 3   # clean-up (deletion, or the ``done`` mark)


SEND, ASK, TIDY = Due.SEND, Due.ASK, Due.TIDY

CHECK_EVERY = 4096          # lines read between two looks at the clock while building
TIDY_PER_RUN = 20_000       # clean-up lines one run takes at most (the rest: the next run)
MARK_EVERY = 4 << 20        # bytes between two marks (where the CRC so far is kept)


@dataclass
class Index:
    """The due lines of the file's first ``covered`` bytes, in file order."""

    fingerprint: str             # Rules.fingerprint() the due times were computed under
    covered: int = 0             # bytes of the file described (whole lines)
    crc: int = 0                 # zlib.crc32 of those bytes
    stamp: str = "-"             # the file's stamp when covered is all of it
    offsets: array = field(default_factory=lambda: array("q"))  # where each due line starts
    dues: array = field(default_factory=lambda: array("d"))     # its due time, epoch seconds
    kinds: array = field(default_factory=lambda: array("b"))    # SEND, ASK or TIDY
    # (offset, CRC-32 of the file before it) every MARK_EVERY bytes, at line
    # starts: after an edit, the part before the first changed mark still counts.
    marks: list[tuple[int, int]] = field(default_factory=list)

    def earliest(self) -> float | None:
        return min(self.dues) if self.dues else None


def stamp_of(path: Path) -> str:
    """Size, mtime and inode of the file ("-" if it is missing)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "-"
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ino}"


def classify(sub: Subscriber, rules: Rules) -> tuple[int, float] | None:
    """(what, when) is next due on a subscriber's line; None if nothing ever is."""
    return of_action(next_action(sub, rules))


def of_action(action: Action) -> tuple[int, float] | None:
    """:func:`classify` of a subscriber whose next action is known already."""
    if action.due is None or action.kind == NOTHING:
        return None
    kind = SEND if action.kind == LETTER else ASK if action.kind == REMIND else TIDY
    return kind, action.due.timestamp()


# The line form every writer produces, read without a Subscriber or a datetime
# (building an index reads every line of a file: millions). It is a strict
# subset of what parse_line accepts — UTF-8 text, an address with an @, whole
# counts, times "-" or a canonical date from 1970 on (February 29 and every
# other line go to parse_line); tests/unit/test_dueindex.py holds
# quick_due to classify(parse_line(...)) on any line.
_TEXT = "[^\t\udc80-\udcff]*"
_STAMP = ("(-|(?:19[7-9][0-9]|[2-9][0-9]{3})-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"
          "|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)"
          "T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z)")
_COUNT = "([0-9]{1,9})"
_QUICK = re.compile(f"{_TEXT}@{_TEXT}\t{_TEXT}\t(new|active|done)\t{_STAMP}\t{_STAMP}\t{_COUNT}"
                    f"\t{_STAMP}\t{_COUNT}\t{_STAMP}\t{_COUNT}\t{_TEXT}(?:\t[^\udc80-\udcff]*)?")
_LAST_SECOND = 253402300799  # 9999-12-31T23:59:59Z: timeutil.after holds later times there
_EPOCH_DAY = date(1970, 1, 1).toordinal()


@functools.lru_cache(maxsize=4096)
def _day(text: str) -> int:
    return (date(int(text[0:4]), int(text[5:7]), int(text[8:10])).toordinal() - _EPOCH_DAY) * 86400


def quick_due(line: str, rules: Rules) -> tuple[int, float] | None | Literal[False]:
    """:func:`classify` of the line as parse_line reads it, for a line of the
    usual form; False for any other line (ask parse_line)."""
    if "\tpaused=" in line:
        return False  # a paused subscriber: parse_line and next_action read its pause
    match = _QUICK.fullmatch(line)
    if match is None:
        return False
    state, subscribed, confirmed, sent, last_sent, reminders, last_reminder, failures = \
        match.groups()
    if int(failures) >= rules.bounce_limit:
        return TIDY, 0.0
    if state == "new":
        base = _first(last_reminder, subscribed)
        kind = ASK if int(reminders) < rules.reminder_count else TIDY
        return kind, float(min(base + rules.reminder_period, _LAST_SECOND))
    number = int(sent) + 1
    if number <= len(rules.delays):
        order = (last_sent, confirmed) if number > 1 else (confirmed, last_sent)
        base = _first(*order, subscribed)
        return SEND, float(min(base + rules.delays[number - 1], _LAST_SECOND))
    if state == "active" and rules.delays:
        return TIDY, 0.0
    return None


def _first(*times: str) -> int:
    """The first time given, in seconds (as ``a or b or EPOCH`` reads datetimes)."""
    for text in times:
        if text != "-":
            return _day(text[:10]) + int(text[11:13]) * 3600 + int(text[14:16]) * 60 \
                + int(text[17:19])
    return 0


# --- the index file ------------------------------------------------------------

def load(path: Path, fingerprint: str) -> Index | None:
    """The index saved at ``path`` if it is whole and made under these rules."""
    try:
        with open(path, "rb") as handle:
            if handle.readline() != MAGIC:
                return None
            head = json.loads(handle.readline())
            body = handle.read()
        check = head.pop("check")
        if _check(head, body) != check or head["fingerprint"] != fingerprint \
                or head["byteorder"] != sys.byteorder:
            return None
        count = int(head["count"])
        index = Index(fingerprint, int(head["covered"]), int(head["crc"]), str(head["stamp"]))
        index.marks = [(int(offset), int(crc)) for offset, crc in head["marks"]]
        index.offsets.frombytes(body[:8 * count])
        index.dues.frombytes(body[8 * count:16 * count])
        index.kinds.frombytes(body[16 * count:17 * count])
    except (OSError, KeyError, TypeError, ValueError, AttributeError):
        return None
    if len(index.kinds) != count or len(body) != 17 * count:
        return None
    return index


def save(path: Path, index: Index) -> None:
    """Write the index atomically (a kill leaves the old one or the new one)."""
    body = [index.offsets.tobytes(), index.dues.tobytes(), index.kinds.tobytes()]
    head = {"fingerprint": index.fingerprint, "covered": index.covered, "crc": index.crc,
            "stamp": index.stamp, "count": len(index.kinds), "byteorder": sys.byteorder,
            "marks": index.marks}
    head["check"] = _check(head, *body)
    files.atomic_write_bytes(path, [MAGIC, json.dumps(head).encode() + b"\n", *body])


def _check(head: dict, *body: bytes) -> int:
    """CRC-32 of the header's values and the arrays: a changed byte anywhere shows."""
    crc = zlib.crc32(json.dumps(head, sort_keys=True).encode())
    for part in body:
        crc = zlib.crc32(part, crc)
    return crc


def remove(path: Path) -> None:
    files.remove(path)


# --- trusting and building --------------------------------------------------------

def trim_to_file(index: Index, file: Path) -> None:
    """Keep of the index what still describes the file as it is: all of it
    (the same stamp, or the same bytes: lines were only appended), else the
    part before the first mark whose bytes changed (perhaps nothing). The
    rest is read again by :func:`extend`."""
    stamp = stamp_of(file)
    if stamp != "-" and stamp == index.stamp:
        return
    size = int(stamp.split(":")[0]) if stamp != "-" else -1
    checks = [mark for mark in index.marks if mark[0] <= size]
    if index.covered <= size:
        checks.append((index.covered, index.crc))
    good, crc, at, last = (0, 0), 0, 0, b"\n"
    try:
        with open(file, "rb") as handle:
            for offset, wanted in checks:
                while at < offset:
                    block = handle.read(min(offset - at, 1 << 20))
                    if not block:
                        break
                    crc = zlib.crc32(block, crc)
                    at += len(block)
                    last = block[-1:]
                # Lines added after a last line without a line end may have lengthened it.
                if at != offset or crc != wanted or (last not in (b"\n", b"\r") and offset < size):
                    break
                good = (offset, wanted)
    except OSError:
        good = (0, 0)
    if good != (index.covered, index.crc):
        keep = bisect_left(index.offsets, good[0])
        del index.offsets[keep:], index.dues[keep:], index.kinds[keep:]
        index.marks = [mark for mark in index.marks if mark[0] <= good[0]]
        index.covered, index.crc = good
        index.stamp = "-"


def extend(index: Index, file: Path, rules: Rules, enough: Callable[[], bool]) -> bool:
    """Read the file's lines after ``covered`` into the index until its end
    (True) or until ``enough()`` says the run has no more time for it (False)."""
    try:
        handle = open(file, "rb")
    except FileNotFoundError:
        index.stamp = "-"
        return index.covered == 0
    with handle:
        info = os.fstat(handle.fileno())  # the file read, whoever replaces it meanwhile
        stamp = f"{info.st_size}:{info.st_mtime_ns}:{info.st_ino}"
        handle.seek(index.covered)
        at, crc, count = index.covered, index.crc, 0
        offsets, dues, kinds = index.offsets, index.dues, index.kinds
        for raw in handle:
            pieces = ((at, raw.rstrip(b"\n").decode("utf-8", "surrogateescape"), 0),) \
                if b"\r" not in raw else _pieces(raw, at)
            for offset, text, _ in pieces:
                if not text.strip() or text.startswith("#"):
                    continue
                due = quick_due(text, rules)
                if due is False:
                    try:
                        due = classify(subscriber_line.parse_line(text), rules)
                    except BadInput:
                        continue  # malformed: kept by every rewrite, never due
                if due is not None:
                    offsets.append(offset)
                    kinds.append(due[0])
                    dues.append(due[1])
            crc = zlib.crc32(raw, crc)
            at += len(raw)
            count += 1
            if at - (index.marks[-1][0] if index.marks else 0) >= MARK_EVERY \
                    and raw.endswith(b"\n"):
                index.marks.append((at, crc))
            if count % CHECK_EVERY == 0 and enough():
                index.covered, index.crc = at, crc
                return False
        index.covered, index.crc = at, crc
    # The stamp read before the lines: a writer meanwhile leaves it unequal.
    index.stamp = stamp if int(stamp.split(":")[0]) == at else "-"
    return True


def _pieces(raw: bytes, at: int) -> Iterator[tuple[int, str, int]]:
    """The lines of one ``\\n``-ended chunk as :func:`files.read_lines` has them
    (a lone ``\\r`` ends a line too): (offset, text, length with its line end)."""
    if b"\r" not in raw:
        yield at, raw.rstrip(b"\n").decode("utf-8", "surrogateescape"), len(raw)
        return
    start = 0
    while start < len(raw):
        cut = min((i for i in (raw.find(b"\r", start), raw.find(b"\n", start)) if i >= 0),
                  default=len(raw))
        end = cut + (2 if raw[cut:cut + 2] == b"\r\n" else 1)
        end = min(end, len(raw))
        yield at + start, raw[start:cut].decode("utf-8", "surrogateescape"), end - start
        start = end


def line_at(handle, offset: int) -> tuple[str, bytes]:
    """The line starting at ``offset`` of an open (binary) file: its text and
    its bytes with their line end."""
    handle.seek(offset)
    raw = handle.readline()
    for _, text, length in _pieces(raw, offset):
        return text, raw[:length]
    return "", b""


# --- choosing a run's lines -------------------------------------------------------

@dataclass
class Choice:
    """The lines a run takes (positions in the index), earliest due first,
    ties in file order."""

    letters: list[int]
    reminders: list[int]
    tidy: list[int]


def choose(index: Index, moment: float, limit: int) -> Choice:
    """At most ``limit`` letters and ``limit`` reminders, longest waiting
    first, and the clean-up due (at most TIDY_PER_RUN), from the index alone."""
    dues, kinds = index.dues, index.kinds
    # What is due now, line by line (0: nothing), made in C: a million lines
    # cost a few passes of map, not a Python loop.
    due_now = bytes(map(moment.__ge__, dues))
    codes = bytes(map(mul, due_now, kinds))
    chosen = []
    for kind, bound in ((SEND, limit), (ASK, limit), (TIDY, TIDY_PER_RUN)):
        count = codes.count(kind)
        if count <= 4 * bound:  # few: find them one by one
            rows, at = [], codes.find(kind)
            while at >= 0:
                rows.append((dues[at], at))
                at = codes.find(kind, at + 1)
            rows = sorted(rows)[:bound]
        else:
            rows = nsmallest(bound, compress(zip(dues, count_up()), map(kind.__eq__, codes)))
        chosen.append([i for _, i in rows])
    return Choice(*chosen)


# --- after the fold ------------------------------------------------------------

def moved(index: Index, changes: dict[int, tuple[int, tuple[int, float] | None]],
          spliced: files.Spliced) -> Index:
    """The index of the file :func:`files.splice` wrote: each changed line
    (``offset → (length change, its new (kind, due) or None)``) takes its new
    due time, and every line after a change moves by the bytes it gained."""
    new = Index(index.fingerprint, spliced.new_upto, spliced.new_crc)
    new.marks = list(zip(shifted_marks(index, changes), spliced.mark_crcs, strict=True))
    offsets = index.offsets

    shift, start = 0, 0
    for offset in sorted(changes):
        at = bisect_left(offsets, offset)
        _copy_moved(new, index, start, at, shift)
        grown, due = changes[offset]
        if due is not None:
            new.offsets.append(offset + shift)
            new.kinds.append(due[0])
            new.dues.append(due[1])
        shift += grown
        start = at + 1 if at < len(offsets) and offsets[at] == offset else at
    _copy_moved(new, index, start, len(offsets), shift)
    return new


def shifted_marks(index: Index, changes: dict[int, tuple[int, tuple[int, float] | None]]
                  ) -> list[int]:
    """Where the index's marks fall in the file once the changes are spliced
    in (each still the start of a line)."""
    grown = sorted(changes.items())
    result, shift, k = [], 0, 0
    for offset, _ in index.marks:
        while k < len(grown) and grown[k][0] < offset:
            shift += grown[k][1][0]
            k += 1
        result.append(offset + shift)
    return result


def _copy_moved(new: Index, old: Index, start: int, stop: int, shift: int) -> None:
    part = old.offsets[start:stop]
    new.offsets.extend(part if not shift else array("q", map(shift.__add__, part)))
    new.dues.extend(old.dues[start:stop])
    new.kinds.extend(old.kinds[start:stop])
