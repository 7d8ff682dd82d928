"""Reading another tool's export: its text, CSV records with their line
numbers, columns found by name whatever their spelling, and the tools' times.
What a record then is, is :mod:`.verdicts`'."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import NamedTuple

from vykhukhol.addresses import clean_name
from vykhukhol.errors import BadInput, Term
from vykhukhol.members.fieldmap import squash
from vykhukhol.timeutil import UTC

MAX_BYTES = 64 * 1024 * 1024  # a file (or a zip's CSVs together): ~500 000 people
SHOWN = 200                   # characters of a refused record kept to show


def _(text: str) -> str:  # marks a text for the catalog (tools/i18n.py extract)
    return text


class TooLarge(BadInput):
    """The file, or what its zip inflates to, is over the caller's cap; nothing
    was read. ``size`` is the cap in MiB."""



def text_of(raw: bytes) -> str:
    """UTF-8 text (a byte order mark dropped, CRLF as LF), or BadInput."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadInput("the file is not UTF-8 text; nothing was imported") from None
    return text.replace("\r\n", "\n")


class Row(NamedTuple):
    lineno: int          # the record's first line
    text: str            # the record as written (cut)
    cells: dict[str, str]


def rows(text: str, delimiter: str = ",", where: str = "") -> tuple[list[str], Iterator[Row]]:
    """The header (as written) and every record after it as a dict by header
    cell. A record may span lines (a quoted field with a newline); blank lines
    are skipped. A broken quote or a field over the csv module's limit is
    BadInput naming the line: a file half readable is not imported at all."""
    import csv
    import io

    lines = text.split("\n")
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    prefix = f"{where}, " if where else ""

    def refuse(exc: csv.Error) -> BadInput:
        return BadInput("{where}line {line}: not CSV ({reason}); nothing was imported",
                        where=prefix, line=reader.line_num, reason=str(exc))

    try:
        header = next(reader, [])
    except csv.Error as exc:
        raise refuse(exc) from None

    def records() -> Iterator[Row]:
        start = reader.line_num + 1
        try:
            for cells in reader:
                end = reader.line_num
                if any(cell.strip() for cell in cells):
                    record = "\n".join(lines[start - 1:end])
                    yield Row(start, record[:SHOWN],
                              {key: cells[i].strip() if i < len(cells) else ""
                               for i, key in enumerate(header)})
                start = end + 1
        except csv.Error as exc:
            raise refuse(exc) from None

    return header, records()


def column(header: list[str], *names: str) -> str | None:
    """The header cell that is one of ``names`` (any case, spaces, ``_`` or
    ``-`` alike), or None."""
    wanted = {squash(name) for name in names}
    return next((cell for cell in header if squash(cell) in wanted), None)


def expected(tool: str, columns: str, header: list[str]) -> BadInput:
    """The clear line for a file that is not ``tool``'s export: what was
    expected, and what its first line holds."""
    found = ", ".join(cell for cell in header if cell.strip())[:300] or "nothing"
    return BadInput("this file is not {tool}: expected the columns {columns}; its first line "
                    "has {found}. Nothing was imported", tool=Term(tool), columns=columns,
                    found=found)


def cell(cells: dict[str, str], col: str | None) -> str:
    """The record's value in column ``col`` (found by :func:`column`), or ""."""
    return cells.get(col, "") if col else ""


def full_name(*parts: str) -> str:
    return clean_name(" ".join(part for part in parts if part))


_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.\d+)?\s*"
                   r"(Z|[+-]\d\d:?\d\d)?")


def when(text: str) -> datetime | None:
    """A tool's time ("2024-01-15 10:30:00", "2024-01-15T10:30:00Z",
    Go's "2024-01-15 10:30:00.123 +0000 UTC") in UTC; a time without a zone
    is taken as UTC; anything else is None (the import's own time is used)."""
    match = _TIME.match((text or "").strip())
    if not match:
        return None
    year, month, day, hour, minute, second, zone = match.groups()
    offset = UTC
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                          tzinfo=offset)
    except ValueError:
        return None
    return moment.astimezone(UTC)
