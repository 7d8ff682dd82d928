"""The lines of a big file that may start with a given prefix, found by a
byte search rather than a Python loop over every line.

:func:`~vykhukhol.services.subscribers.find` looks one address up in a
subscriber file of a million lines with it, and so does a subscribe request.
It yields a superset (the caller checks each line); it knows nothing of the
subscriber format.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

from vykhukhol import files

# The only characters outside ASCII whose lower case holds ASCII letters (K → k, İ → i̇).
_LOWER_TO_ASCII = ("\u212a".encode(), "\u0130".encode())
_BLOCK = 1 << 20  # bytes read at a time by lines_maybe_starting
_LINE_END = re.compile(rb"[\r\n]")  # where files.read_lines ends a line


def lines_maybe_starting(path: Path, prefix: str) -> Iterator[str]:
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
