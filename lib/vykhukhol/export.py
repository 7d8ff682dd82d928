"""A service's subscribers as CSV: the one export, for the CLI and the admin.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a
formula (``=cmd|' /C calc'!A0``), and a subscriber chooses their own name.
Such a cell is written with a leading ``'``, which spreadsheets show as text;
the lone ``-`` that marks an empty field stays as it is.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from vykhukhol import subscribers as subs

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def defused(cell: str) -> str:
    """``cell`` as a spreadsheet will show it, never run it."""
    return "'" + cell if cell.startswith(_FORMULA_STARTS) and cell != "-" else cell


def write_csv(path: Path, out: TextIO, progress: Callable[[int], None] | None = None) -> int:
    """Write the header and every subscriber of the file at ``path`` to ``out``;
    ``progress(count)`` is called every 10,000 rows. Returns the rows written."""
    writer = csv.writer(out)
    writer.writerow(subs.FIELDS)
    count = 0
    for count, sub in enumerate(subs.subscribers(path), start=1):
        writer.writerow([defused(cell) for cell in sub.to_line().split("\t")[:len(subs.FIELDS)]])
        if progress and count % 10000 == 0:
            progress(count)
    return count
