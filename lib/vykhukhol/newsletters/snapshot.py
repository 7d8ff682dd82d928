"""What a newsletter's letters know of each recipient: their language and
field values as the job was made (docs/using/newsletters.md#newsletter-languages).

The ledger row names the recipient; ``<job>.readers`` (its format:
:mod:`vykhukhol.files.readers`) keeps, by the row's index, the reader's
``lang=`` and ``f.<name>=`` fields from their subscriber line. So a letter is
made the same in every run, a run killed midway included, whatever the reader
changes on their own page meanwhile. It does not choose the body
(:func:`body_for` does, from what it is given) nor write the ledger.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from vykhukhol import files
from vykhukhol.datadir import DataDir
from vykhukhol.files.readers import iter_readers, read_readers, write_readers
from vykhukhol.services.subscriber_line import FIELD, LANGUAGE, Subscriber

KEPT = (LANGUAGE, FIELD)  # the trailing fields of a subscriber line a job keeps
_BATCH = 1024  # rows asked at once whether they keep all their fields


class Reader(NamedTuple):
    """One recipient as the job was made."""

    language: str | None  # their own (None: none said, the site's is theirs)
    fields: dict[str, str]  # their values of the site's fields


NOBODY = Reader(None, {})  # a row the file says nothing of


def kept(extra: str) -> str:
    """The trailing fields of a subscriber line (tab-separated) that the job
    keeps, tab-separated ("": none)."""
    if _all_kept(extra):
        return extra
    if "lang=" not in extra and "f." not in extra:  # nothing to keep
        return ""
    return "\t".join([value for value in extra.split("\t") if value.startswith(KEPT)])


def _all_kept(extras: str) -> bool:
    """Whether every field of these trailing fields (of one line, or of several
    joined by newlines) is a kept one: counted in C, not split and joined. A
    value holds no tab nor newline (the line escapes them)."""
    fields = extras.count("\t") + extras.count("\n") + 1
    return fields == (extras.startswith(KEPT) + extras.count("\tf.") + extras.count("\nf.")
                      + extras.count("\tlang=") + extras.count("\nlang="))


def _kept_rows(rows: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """(index, what is kept) of each row that keeps something, from (index, the
    line's trailing fields, not empty): a thousand rows asked at once whether
    they keep all of theirs, as most do, rather than one by one."""
    left = iter(rows)
    while batch := list(itertools.islice(left, _BATCH)):
        if _all_kept("\n".join([extra for _, extra in batch])):
            yield from batch
            continue
        for index, extra in batch:
            if values := kept(extra):
                yield index, values


def path(data: DataDir, job: str) -> Path:
    return data.job(job, "readers")


def write(data: DataDir, job: str, rows: Iterable[tuple[int, str]]) -> None:
    """The job's readers file, when some row has something to keep: ``rows``
    are (ledger index, the subscriber line's trailing fields, not empty), of
    which it keeps the reader's language and field values (:func:`kept`)."""
    rows = _kept_rows(rows)
    first = next(rows, None)
    if first is not None:
        write_readers(path(data, job), itertools.chain((first,), rows))


def read(data: DataDir, job: str) -> dict[int, Reader]:
    """Each row's reader by ledger index (rows absent: :data:`NOBODY`)."""
    return {index: reader_of(values) for index, values in read_readers(path(data, job)).items()}


def follow(data: DataDir, job: str) -> Callable[[int], Reader]:
    """The reader of a ledger row, asked for in rising row order (as a run
    serves a job): the file, written in ledger order, is read alongside and
    never held whole, whatever the job's size."""
    rows = iter_readers(path(data, job))
    at: list[tuple[int, list[str]] | None] = [next(rows, None)]

    def reader(index: int) -> Reader:
        current = at[0]
        while current is not None and current[0] < index:
            current = next(rows, None)
        at[0] = current
        return reader_of(current[1]) if current is not None and current[0] == index else NOBODY

    return reader


def forget(data: DataDir, job: str, indexes: Collection[int]) -> bool:
    """The rows ``indexes`` no longer kept (an erased address); the file goes
    when nothing is left. False: none of them was kept."""
    where = path(data, job)
    with files.record_lock(where):
        rows = read_readers(where)
        if not rows.keys() & set(indexes):
            return False
        left = [(index, "\t".join(values)) for index, values in rows.items()
                if index not in indexes]
        if left:
            write_readers(where, left)
        else:
            files.remove(where)
    return True


def reader_of(values: list[str]) -> Reader:
    """The reader these trailing fields describe, read as a subscriber line's."""
    line = Subscriber("", extra=values)
    return Reader(line.language, line.fields)


Letter = tuple[str, str, "str | None"]  # subject, text and HTML templates


def body_for(reader: Reader, main: Letter, versions: dict[str, Letter],
             site_language: str) -> tuple[Letter, str | None]:
    """The letter ``reader`` gets and the language it is in (None: the main
    one, in the site's): the version in their language, else in the site's,
    else the main one."""
    language = reader.language or site_language
    version = versions.get(language)
    return (main, None) if version is None else (version, language)
