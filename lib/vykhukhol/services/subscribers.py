"""The subscriber file (docs/using/services.md#subscribers-file): reading it and every change made to it.

A line (:mod:`~vykhukhol.services.subscriber_line`) that does not parse is
kept verbatim by every rewrite, skipped by the sender and reported — never
dropped. Reading streams; ``add`` appends one line (a scan for the address,
no rewrite); every other change is one streamed atomic rewrite under the
file's record lock. A newsletter's readers are read by
:mod:`~vykhukhol.services.confirmed`.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from vykhukhol import files
from vykhukhol.addresses import email_key
from vykhukhol.errors import BadInput, Conflict
from vykhukhol.records import NamedTuple
from vykhukhol.services.subscriber_line import HEADER, Subscriber, parse_line
from vykhukhol.states import SubscriberState


class Malformed(NamedTuple):
    """A line that does not parse: its number, its text as it is, and why."""

    lineno: int
    text: str
    reason: str


def read(path: Path) -> Iterator[Subscriber | Malformed]:
    """Every line of the file in order, parsed; comments and blank lines skipped."""
    for lineno, line in enumerate(files.read_lines(path), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            yield parse_line(line)
        except BadInput as exc:
            yield Malformed(lineno, line, exc.message)


def subscribers(path: Path) -> Iterator[Subscriber]:
    return (item for item in read(path) if isinstance(item, Subscriber))


def among(path: Path, keys: Collection[str]) -> Iterator[Subscriber]:
    """The subscribers whose address (as :func:`email_key` has it) is one of
    ``keys``, in file order: :func:`subscribers` filtered, but only those lines
    are parsed, so looking a few addresses up in a big file stays cheap."""
    for line in files.read_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        if email_key(line.split("\t", 1)[0]) not in keys:
            continue
        try:
            yield parse_line(line)
        except BadInput:
            continue


def malformed(path: Path) -> list[Malformed]:
    return [item for item in read(path) if isinstance(item, Malformed)]


# The only characters outside ASCII whose lower case holds ASCII letters (K → k, İ → i̇).
_LOWER_TO_ASCII = ("\u212a".encode(), "\u0130".encode())
_BLOCK = 1 << 20  # bytes read at a time by _lines_maybe_starting
_LINE_END = re.compile(rb"[\r\n]")  # where files.read_lines ends a line


def _lines_maybe_starting(path: Path, prefix: str) -> Iterator[str]:
    """The lines of ``path`` (as :func:`files.read_lines` has them, in file order)
    that may start with ``prefix`` once lower-cased; a superset of those that do.

    In each block read, one case-blind byte search for a line end followed by
    ``prefix`` finds where it begins a line, and only those lines are decoded:
    a lookup in a big file costs a search of its bytes, not a Python loop over
    every line, nor a lower-cased copy of them. An empty or non-ASCII
    ``prefix`` reads every line."""
    if not prefix or not prefix.isascii():
        yield from files.read_lines(path)
        return
    needle = prefix.encode()
    try:
        handle = open(path, "rb", buffering=0)
    except FileNotFoundError:
        return
    # ASCII letters only, as bytes.lower() folds them (a bytes pattern knows no other case).
    after_a_line_end = re.compile(b"\n" + re.escape(needle), re.IGNORECASE)
    buffer = bytearray(_BLOCK)  # read into again and again: no new block to allocate each time
    with handle:
        carry: list[bytes] = [b""]  # the start of a line that the last blocks cut
        while True:
            size = handle.readinto(buffer)
            block = buffer if size == _BLOCK else buffer[:size]
            if not block:  # a last line without a line end
                yield from _lines_starting(b"".join(carry), needle, after_a_line_end)
                return
            first = _LINE_END.search(block)
            if first is None:  # one long line goes on; joined once when it ends,
                carry.append(bytes(block))  # not copied again with every block
                continue
            # Copying a block costs as much as searching it: only the line cut by
            # the last read is joined up; the whole lines after it are searched in place.
            last = max(block.rfind(b"\n"), block.rfind(b"\r")) + 1
            yield from _lines_starting(b"".join([*carry, block[:first.end()]]), needle,
                                       after_a_line_end)
            yield from _lines_starting(block, needle, after_a_line_end, first.end(), last)
            carry = [bytes(block[last:])]


def _lines_starting(data: bytes | bytearray, needle: bytes, after_a_line_end: re.Pattern[bytes],
                    start: int = 0, stop: int | None = None) -> Iterator[str]:
    """The lines of ``data`` beginning in ``data[start:stop]`` (where ``start`` and
    ``stop`` begin lines) whose ASCII-lower-cased bytes may start with ``needle``
    (``after_a_line_end`` finds it after a ``\\n``), decoded as files.read_lines
    decodes them. If ``data`` holds a character that lower-cases to ASCII, every
    line there is given."""
    stop = len(data) if stop is None else stop
    if not data.isascii() and any(char in data for char in _LOWER_TO_ASCII):
        # A \r\n cut in two reads as an extra empty line, which no prefix starts.
        text = data[start:stop].decode("utf-8", "surrogateescape")
        for line in io.StringIO(text, newline=""):
            yield line.rstrip("\r\n")
        return
    if data.find(b"\r", start, stop) >= 0:  # a line may end with \r alone: search a lowered copy
        yield from _lowered_lines_starting(data, needle, start, stop)
        return
    if start < stop and data[start:start + len(needle)].lower() == needle:
        yield _line_at(data, start)
    # A \n at stop - 1 begins the line at stop, which is not ours.
    for match in after_a_line_end.finditer(data, start, stop - 1 + len(needle)):
        yield _line_at(data, match.start() + 1)


def _line_at(data: bytes | bytearray, at: int) -> str:
    end = _LINE_END.search(data, at)
    return data[at:end.start() if end else len(data)].decode("utf-8", "surrogateescape")


def _lowered_lines_starting(data: bytes | bytearray, needle: bytes, start: int, stop: int
                            ) -> Iterator[str]:
    """:func:`_lines_starting` where a line may end with a lone \\r."""
    lowered = data.lower()
    limit = stop + len(needle) - 1  # a match must begin before stop
    at = lowered.find(needle, start, limit)
    while at >= 0:
        if at > start and lowered[at - 1] not in b"\r\n":  # inside a line
            at = lowered.find(needle, at + 1, limit)
            continue
        end = _LINE_END.search(data, at)
        after = end.start() if end else len(data)
        yield data[at:after].decode("utf-8", "surrogateescape")
        at = lowered.find(needle, after, limit)


def find(path: Path, email: str) -> Subscriber | None:
    wanted = email_key(email)
    # The whole key as the prefix: a line holding this address starts with it
    # once lower-cased (a line starting with white space never matched).
    for line in _lines_maybe_starting(path, wanted):
        # A cheap test on the raw line first: most lines are not the one.
        if not line.lower().startswith(wanted):
            continue
        if email_key(line.split("\t", 1)[0]) == wanted:
            try:
                return parse_line(line)
            except BadInput:
                return None
    return None


def _contains(path: Path, key: str) -> bool:
    return find(path, key) is not None


def add(path: Path, subscriber: Subscriber, sync: bool = True, absent: bool = False) -> None:
    """Append a new subscriber; Conflict if the address is in the file already.
    ``sync=False``: the caller fsyncs the file itself, later (a public page
    does it after its answer). ``absent``: the caller holds the record lock and
    has just looked the address up, so it is not looked up twice."""
    with files.record_lock(path):
        if not absent and _contains(path, subscriber.email):
            raise Conflict("{email} is subscribed already", email=subscriber.email)
        if not path.exists() or path.stat().st_size == 0:
            files.atomic_write(path, [HEADER + "\n", subscriber.to_line() + "\n"])
        else:
            _ensure_final_newline(path)
            files.append_line(path, subscriber.to_line(), sync=sync)


def _ensure_final_newline(path: Path) -> None:
    with open(path, "rb") as handle:
        handle.seek(-1, 2)
        last = handle.read(1)
    if last not in (b"\n", b""):
        files.append_line(path, "")


Change = Callable[[Subscriber], "Subscriber | None"]


def rewrite(path: Path, change: Change, on_line: Callable[[Subscriber], None] | None = None,
            parse: Callable[[int, str], bool] | None = None) -> int:
    """Stream-rewrite the file: ``change`` returns the subscriber (changed or not)
    or None to delete it. Malformed lines are kept. Returns how many changed.

    ``on_line`` sees every subscriber kept after its change (the sender uses it to
    compute the service's next due time in the same pass). With ``parse``, a
    line is parsed (and seen by ``change`` and ``on_line``) only when
    ``parse(index, line)`` says so, ``index`` counting the subscriber lines
    (malformed ones too) from 0; the others are copied through as they are.
    """
    changed = 0

    def lines() -> Iterator[str]:
        nonlocal changed
        yield HEADER + "\n"
        index = -1
        for line in files.read_lines(path):
            if not line.strip() or line.startswith("#"):
                continue
            index += 1
            if parse is not None and not parse(index, line):
                yield line + "\n"
                continue
            try:
                item = parse_line(line)
            except BadInput:
                yield line + "\n"  # malformed: kept as it is
                continue
            after = change(item)
            if after is not item:
                changed += 1
            if after is not None:
                if on_line:
                    on_line(after)
                yield after.to_line() + "\n"

    with files.record_lock(path):
        if not path.exists():
            return 0
        files.atomic_write(path, lines())
    return changed


def update_one(path: Path, email: str, change: Change) -> bool:
    """Apply ``change`` to one subscriber; False if the address is not there."""
    wanted = email_key(email)
    found = False

    def one(sub: Subscriber) -> Subscriber | None:
        nonlocal found
        if sub.key != wanted:
            return sub
        found = True
        return change(sub)

    if not path.exists() or find(path, email) is None:
        return False
    rewrite(path, one)
    return found


def remove(path: Path, email: str) -> bool:
    return update_one(path, email, lambda sub: None)


def counts(path: Path) -> dict[str, int]:
    """Subscribers by state, plus ``malformed`` lines."""
    result = {state.value: 0 for state in SubscriberState}
    result["malformed"] = 0
    for item in read(path):
        if isinstance(item, Malformed):
            result["malformed"] += 1
        else:
            result[item.state.value] += 1
    return result


def add_many(path: Path, new: list[Subscriber]) -> tuple[int, int]:
    """Add many subscribers in one rewrite; returns (added, already there)."""
    added = duplicates = 0
    with files.record_lock(path):
        seen = {item.key for item in read(path) if isinstance(item, Subscriber)}
        fresh = []
        for sub in new:
            if sub.key in seen:
                duplicates += 1
                continue
            seen.add(sub.key)
            fresh.append(sub)
            added += 1
        if fresh:
            def lines() -> Iterator[str]:
                yield HEADER + "\n"
                for line in files.read_lines(path):
                    if line and not line.startswith("#"):
                        yield line + "\n"
                for sub in fresh:
                    yield sub.to_line() + "\n"
            files.atomic_write(path, lines())
    return added, duplicates
