"""A service's subscribers (and the suppression list) as CSV: the one export,
for the CLI and the admin.

The file is in Excel's dialect (comma, ``"`` quotes, CRLF) and starts with a
UTF-8 byte order mark, without which spreadsheet programs on Windows read
Cyrillic names as a legacy code page. The state column says what the admin
says ("confirmed", "not confirmed", "received the whole series").

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a
formula (``=cmd|' /C calc'!A0``), and a subscriber chooses their own name.
The program that opens the file may split it on ``;`` or tab rather than on
``,`` (Russian Excel's default is ``;``), so every piece of a cell that any of
those would make a cell of its own is defused: such a piece gets a leading
``'``, which spreadsheets show as text. The lone ``-`` that marks an empty
field stays as it is.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from vykhukhol.services import subscribers as subs

BOM = "\ufeff"
_FORMULA_STARTS = ("=", "+", "-", "@")
# What a spreadsheet's import may split a cell at: the separators it offers
# (comma, semicolon, tab) and the line ends it would start a new row at.
_SPLITS = re.compile(r"([,;\t\r\n])")


def _defused_piece(piece: str) -> str:
    text = piece.lstrip(" ")  # an import that trims spaces would bare the formula
    if text.startswith(_FORMULA_STARTS) and text != "-":
        return piece[:len(piece) - len(text)] + "'" + text
    return piece


def defused(cell: str) -> str:
    """``cell`` as a spreadsheet will show it, never run it, however it splits the line."""
    pieces = _SPLITS.split(cell)
    # split() with a group gives the separators at odd places; they stay as they are
    return "".join(piece if i % 2 else _defused_piece(piece) for i, piece in enumerate(pieces))


def _cells(sub: subs.Subscriber) -> list[str]:
    cells = sub.to_line().split("\t")[:len(subs.FIELDS)]
    cells[subs.FIELDS.index("state")] = sub.state.label("en")
    return cells


def write_csv(path: Path, out: TextIO, progress: Callable[[int], None] | None = None) -> int:
    """Write the byte order mark, the header and every subscriber of the file at
    ``path`` to ``out``; ``progress(count)`` is called every 10,000 rows.
    Returns the rows written."""
    return write_table(out, subs.FIELDS, (_cells(sub) for sub in subs.subscribers(path)), progress)


def write_table(out: TextIO, header: Iterable[str], rows: Iterable[list[str]],
                progress: Callable[[int], None] | None = None) -> int:
    """Any table as this module's CSV (byte order mark, Excel's dialect, every
    cell defused): the subscribers, the suppression list. Returns the rows written."""
    out.write(BOM)
    writer = csv.writer(out, dialect="excel")
    writer.writerow(list(header))
    count = 0
    for count, row in enumerate(rows, start=1):
        writer.writerow([defused(cell) for cell in row])
        if progress and count % 10000 == 0:
            progress(count)
    return count
