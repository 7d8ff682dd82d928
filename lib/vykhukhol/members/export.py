"""A service's subscribers (and the suppression list) as CSV: the one export,
for the CLI and the admin.

The file is in Excel's dialect (``"`` quotes, CRLF) with the separator of
:data:`DIALECTS` the admin chose: a comma (Excel in English, LibreOffice,
Google Sheets) or a semicolon (Excel in Russian and most of Europe, whose list
separator is ``;``: a comma-separated file opened by a double click lands
there in one column). It starts with a UTF-8 byte order mark, without which
spreadsheet programs on Windows read Cyrillic names as a legacy code page.
No ``sep=`` line: with one, Excel ignores the byte order mark and garbles the
Cyrillic names it was meant to help. The state column says what the admin
says ("confirmed", "not confirmed", "received the whole series"); then a
column per field of the site and the reader's ``language``.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a
formula (``=cmd|' /C calc'!A0``), and a subscriber chooses their own name.
The program that opens the file may split it on ``;`` or tab rather than on
``,`` (Russian Excel's default is ``;``), so every piece of a cell that any of
those would make a cell of its own is defused: such a piece gets a leading
``'``, which spreadsheets show as text. The lone ``-`` that marks an empty
field stays as it is. A piece that starts with ``'`` and then such a sign gets
one more, so :func:`undefused` (what an import reads) gives every cell back
exactly as it was stored: an export read back in changes no name.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import FIELDS, Subscriber

BOM = "\ufeff"
#: The separators offered, by name (the admin's choice, remembered in a cookie).
DIALECTS = {"comma": ",", "semicolon": ";"}
_FORMULA_STARTS = ("=", "+", "-", "@")
# What a spreadsheet's import may split a cell at: the separators it offers
# (comma, semicolon, tab) and the line ends it would start a new row at.
_SPLITS = re.compile(r"([,;\t\r\n])")


def dialect_for(lang: str) -> str:
    """The separator a spreadsheet of the site's language splits on."""
    return "semicolon" if lang == "ru" else "comma"


def _defused_piece(piece: str) -> str:
    text = piece.lstrip(" ")  # an import that trims spaces would bare the formula
    if text.lstrip("'").startswith(_FORMULA_STARTS) and text != "-":
        return piece[:len(piece) - len(text)] + "'" + text
    return piece


def _undefused_piece(piece: str) -> str:
    text = piece.lstrip(" ")
    if text.startswith("'") and text[1:].lstrip("'").startswith(_FORMULA_STARTS):
        return piece[:len(piece) - len(text)] + text[1:]
    return piece


def undefused(cell: str) -> str:
    """A cell of an export as it was stored: the ``'`` :func:`defused` put
    before a piece is taken off again (an import of an export keeps the names)."""
    pieces = _SPLITS.split(cell)
    return "".join(piece if i % 2 else _undefused_piece(piece) for i, piece in enumerate(pieces))


def defused(cell: str) -> str:
    """``cell`` as a spreadsheet will show it, never run it, however it splits the line."""
    pieces = _SPLITS.split(cell)
    # split() with a group gives the separators at odd places; they stay as they are
    return "".join(piece if i % 2 else _defused_piece(piece) for i, piece in enumerate(pieces))


LANGUAGE = "language"  # the column of the reader's own language, after the fields'


def _cells(sub: Subscriber, names: list[str]) -> list[str]:
    cells = sub.to_line().split("\t")[:len(FIELDS)]
    cells[FIELDS.index("state")] = sub.state.label("en")
    values = sub.fields
    return [*cells, *(values.get(name, "") for name in names), sub.language or ""]


def write_csv(path: Path, out: TextIO, progress: Callable[[int], None] | None = None,
              dialect: str = "comma", fields: Iterable[str] = ()) -> int:
    """Write the byte order mark, the header and every subscriber of the file at
    ``path`` to ``out``; ``progress(count)`` is called every 10,000 rows.
    After the subscriber's own columns come ``fields`` (the site's fields'
    names, docs/using/fields.md#fields), a column each, and ``language``: an
    import reads them back as they were (docs/using/import.md#export).
    Returns the rows written."""
    names = list(fields)
    return write_table(out, [*FIELDS, *names, LANGUAGE],
                       (_cells(sub, names) for sub in subs.subscribers(path)), progress, dialect)


def write_table(out: TextIO, header: Iterable[str], rows: Iterable[list[str]],
                progress: Callable[[int], None] | None = None, dialect: str = "comma") -> int:
    """Any table as this module's CSV (byte order mark, Excel's dialect with
    the separator of ``dialect``, every cell defused): the subscribers, the
    suppression list. Returns the rows written."""
    out.write(BOM)
    writer = csv.writer(out, dialect="excel", delimiter=DIALECTS[dialect])
    writer.writerow(list(header))
    count = 0
    for count, row in enumerate(rows, start=1):
        writer.writerow([defused(cell) for cell in row])
        if progress and count % 10000 == 0:
            progress(count)
    return count
