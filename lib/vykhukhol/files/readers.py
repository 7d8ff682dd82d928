"""A newsletter job's readers, ``<job>.readers``, written and read here only
(docs/using/newsletters.md#newsletter-languages).

Beside the ledger ``<job>.list`` (whose format stays as it is), the job keeps
what its letters need to know of each recipient as the job was made: one line
per ledger row that has something to keep, ``<index>\\t<fields>``, where
``<index>`` is the row's place in the ledger (from 0) and ``<fields>`` are the
subscriber line's own trailing fields ``lang=`` and ``f.<name>=``, tab-
separated and escaped as on that line (docs/using/services.md#subscriber-details).
A row without a line has no language and no values: the site's language is
used, and every field is empty.

Written once, atomically, in ledger order, when the job is made, and only
when some recipient has a language or a field value; read alongside the
ledger by each run that sends the job (so a million rows are never held at
once); an erase rewrites it without the erased rows; deleted with the job. It does not say what the fields mean
(:mod:`vykhukhol.newsletters.readers` does).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator

from vykhukhol import files

HEADER = "#index\tfields"
_BATCH = 1024  # rows written at a time


def write_readers(path: str | os.PathLike[str], rows: Iterable[tuple[int, str]]) -> None:
    """The file of these (index, trailing fields tab-separated) rows, atomically."""
    def lines() -> Iterator[str]:  # streamed: a million rows are never one list
        yield HEADER + "\n"
        left = iter(rows)
        while batch := list(itertools.islice(left, _BATCH)):  # not a write per row
            yield "".join([f"{index}\t{kept}\n" for index, kept in batch])

    files.atomic_write(path, lines())


def read_readers(path: str | os.PathLike[str]) -> dict[int, list[str]]:
    """Each row's kept trailing fields by ledger index (empty: no file)."""
    return dict(iter_readers(path))


def iter_readers(path: str | os.PathLike[str]) -> Iterator[tuple[int, list[str]]]:
    """(index, kept trailing fields) of each line, in file order, streamed; a
    line that does not read is passed over, as a row with nothing kept."""
    for line in files.read_lines(path):
        if not line or line.startswith("#"):
            continue
        index, _, kept = line.partition("\t")
        if index.isdigit() and kept:
            yield int(index), kept.split("\t")
