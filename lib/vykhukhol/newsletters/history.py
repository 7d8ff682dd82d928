"""The newsletters' history: ``data/newsletters/history.txt``
(docs/using/newsletters.md#newsletter-history), the one module that reads and writes it.

One line per newsletter, tab-separated, kept after the job's own files are
deleted (and never pruned: a line is some 150 bytes, a newsletter a day is
55 KB a year)::

    #job  subject  services  started  finished  handed  failed  in_doubt  bounced  complaints  unsubscribed  once  end  where  matched

- ``subject``: as its recipients read it (rendered for a recipient without a
  name); ``services``: comma-separated; ``started``/``finished``: UTC times,
  ``-`` while not yet;
- ``handed``: letters the mail server accepted ("handed over", never
  "delivered": a letter that bounced later is still counted here);
  ``failed``: refused at hand-over; ``in_doubt``: no answer (a run died);
- ``bounced``, ``complaints``, ``unsubscribed``: grow as late reports arrive
  (:func:`count`), before and after the job finished;
- ``once``: the last bounce batch applied to the line. The bounce reader
  applies its batches one at a time under its journal's lock and finishes a
  killed one before the next, so only the last batch can come round twice:
  a batch already on the line counts nothing again;
- ``end``: ``cancelled`` for a job the admin cancelled (its ``finished`` is
  when), ``-`` otherwise (a line written before this field was too);
- ``where``: the condition of a newsletter to part of its services (a
  segment, docs/using/newsletters.md#newsletter-segments) as the job kept it, and
  ``matched`` how many it chose when the job was made; ``-`` for a newsletter
  to all (and on a line written before these fields).

A new field is appended at the end of the line: a reader that knows fewer
fields reads a newer line, and a line with fewer fields reads with ``-``.

The line is begun when the job's first run starts (:func:`begin`) and
completed when its files are deleted (:func:`close`); a report about a job
the file does not know yet (one made before this file existed) begins one.
The bounce reader learns here which jobs existed and for which services
(:func:`finished_jobs`); the older ``finished.txt`` is still read for that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from vykhukhol import files
from vykhukhol.timeutil import format_time

if TYPE_CHECKING:
    from vykhukhol.datadir import DataDir

#: What :func:`count` may grow.
LATE = ("bounced", "complaints", "unsubscribed")
HEADER = ("#job\tsubject\tservices\tstarted\tfinished\thanded\tfailed\tin_doubt\tbounced\t"
          "complaints\tunsubscribed\tonce\tend\twhere\tmatched")
CANCELLED = "cancelled"
NUMBERS = ("handed", "failed", "in_doubt", "bounced", "complaints", "unsubscribed")


@dataclass(frozen=True)
class Entry:
    job: str
    subject: str = ""
    services: tuple[str, ...] = ()
    started: str = "-"
    finished: str = "-"
    handed: int = 0
    failed: int = 0
    in_doubt: int = 0
    bounced: int = 0
    complaints: int = 0
    unsubscribed: int = 0
    once: str = "-"
    cancelled: bool = False
    where: str = ""  # a segment's condition; "" for a newsletter to all
    matched: int | None = None  # how many the condition chose when the job was made

    def to_line(self) -> str:
        def clean(text: str) -> str:  # one field of one line, whatever was typed
            return " ".join(text.replace("\t", " ").split()) or "-"

        return "\t".join((clean(self.job), clean(self.subject), clean(",".join(self.services)),
                          clean(self.started), clean(self.finished),
                          *(str(getattr(self, name)) for name in NUMBERS), clean(self.once),
                          CANCELLED if self.cancelled else "-", one_field(self.where),
                          "-" if self.matched is None else str(self.matched)))

    def to_json(self) -> dict:
        """The entry as ``newsletter history --json`` prints it."""
        values = asdict(self)
        del values["once"]
        values["services"] = list(self.services)
        for key in ("started", "finished"):
            values[key] = None if values[key] == "-" else values[key]
        values["where"] = self.where or None
        return values


def one_field(text: str) -> str:
    """``text`` as one field of a line, its own spaces kept (a condition's
    quoted text means them): only what would break the line becomes a space."""
    return "".join(" " if char in "\t\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029" else char
                   for char in text) or "-"


def path(data: DataDir) -> Path:
    return data.newsletters / "history.txt"


def parse(line: str) -> Entry | None:
    """One line as an Entry; None for a comment, a blank or a line without a job.
    A number a person spoiled by hand reads as 0, never as an error."""
    if not line or line.startswith("#"):
        return None
    parts = line.split("\t")
    if not parts[0]:
        return None
    parts += ["-"] * (len(fields(Entry)) - len(parts))
    numbers = {}
    for name, text in zip(NUMBERS, parts[5:11], strict=True):
        numbers[name] = int(text) if text.isdigit() else 0
    subject = "" if parts[1] == "-" else parts[1]
    where = "" if parts[13] == "-" else parts[13]
    matched = int(parts[14]) if parts[14].isdigit() else None
    return Entry(job=parts[0], subject=subject,
                 services=tuple(s for s in parts[2].split(",") if s and s != "-"),
                 started=parts[3], finished=parts[4], once=parts[11],
                 cancelled=parts[12] == CANCELLED, where=where, matched=matched, **numbers)


def entries(data: DataDir) -> list[Entry]:
    """Every newsletter's line, in the order they began (oldest first)."""
    return [entry for entry in map(parse, files.read_lines(path(data))) if entry is not None]


def _change(data: DataDir, jobs: Iterable[str], change) -> None:
    """Rewrite the file under its record lock: ``change(dict job -> Entry)`` gets
    the lines of ``jobs`` (those the file has) and may change or add them; every
    other line is copied as it is, unparsed (a history of years is one short
    rewrite per bounce batch)."""
    target = path(data)
    files.make_folder(target.parent)
    wanted = set(jobs)
    with files.record_lock(target):
        lines = [line for line in files.read_lines(target) if line and not line.startswith("#")]
        table = {}
        for line in lines:
            if line.split("\t", 1)[0] in wanted:
                entry = parse(line)
                if entry is not None:
                    table[entry.job] = entry
        found = set(table)
        change(table)
        out = [HEADER + "\n"]
        for line in lines:
            job = line.split("\t", 1)[0]
            out.append((table[job].to_line() if job in found else line) + "\n")
        out += [table[job].to_line() + "\n" for job in table if job not in found]
        files.atomic_write(target, out)


def begin(data: DataDir, job: str, subject: str, services: Iterable[str],
          started: datetime, segment: Mapping[str, str] | None = None) -> None:
    """A job's first run began: its line, unless it has one (a line a late
    report began keeps its counts and gets the subject and start).
    ``segment``: the job's values, whose ``where`` and ``matched`` the line keeps."""
    def change(table: dict[str, Entry]) -> None:
        old = table.get(job, Entry(job))
        table[job] = replace(old, subject=subject, services=tuple(services),
                             started=old.started if old.started != "-" else format_time(started),
                             **_segment(old, segment))
    _change(data, [job], change)


def _segment(old: Entry, values: Mapping[str, str] | None) -> dict:
    """The ``where`` and ``matched`` of a job's values, for its line (the line's own
    when the values have none)."""
    if not values or not values.get("where"):
        return {}
    matched = values.get("matched", "")
    return {"where": values["where"],
            "matched": int(matched) if matched.isdigit() else old.matched}


def close(data: DataDir, job: str, services: Iterable[str], ledger: Mapping[str, int],
          finished: datetime, subject: str | None = None, cancelled: bool = False,
          segment: Mapping[str, str] | None = None) -> None:
    """A job's files are being deleted (finished, cancelled, or unusable): its
    line gets the end and the ledger's counts. ``ledger`` holds ``handed``,
    ``failed`` and ``in_doubt``; ``subject`` (as sent) replaces the line's when given;
    ``cancelled``: the admin cancelled it (History says so); ``segment``: as
    for :func:`begin`."""
    def change(table: dict[str, Entry]) -> None:
        old = table.get(job, Entry(job))
        table[job] = replace(
            old, services=tuple(services) or old.services,
            subject=subject if subject is not None else old.subject,
            finished=format_time(finished), cancelled=cancelled,
            handed=int(ledger.get("handed", 0)), failed=int(ledger.get("failed", 0)),
            in_doubt=int(ledger.get("in_doubt", 0)), **_segment(old, segment))
    _change(data, [job], change)


def count(data: DataDir, changes: Mapping[tuple[str, str], int], once: str = "",
          services: Mapping[str, Iterable[str]] | None = None, create: bool = True) -> None:
    """Late reports: ``changes`` maps (job, field) to how many, the field one of
    :data:`LATE`. ``once``: the bounce batch they come from (see the module's
    docstring); a batch already applied to a job's line counts nothing again.
    A job the file does not know yet gets a line (its ``services`` where given),
    unless ``create`` is False (a name from a link, which anybody can type).
    Several changes cost one rewrite."""
    if not changes:
        return
    for _, field in changes:
        if field not in LATE:
            raise ValueError(f"not a count that grows late: {field!r}")

    def change(table: dict[str, Entry]) -> None:
        for job in dict.fromkeys(job for job, _ in changes):
            if not create and job not in table:
                continue
            old = table.get(job) or Entry(job, services=tuple((services or {}).get(job, ())))
            if once and old.once == once:
                continue
            grown = {field: getattr(old, field) + n for (name, field), n in changes.items()
                     if name == job}
            table[job] = replace(old, once=once or old.once, **grown)
    _change(data, [job for job, _ in changes], change)


def finished_jobs(data: DataDir) -> list[tuple[str, list[str]]]:
    """(name, services) of every job the history or the older ``finished.txt``
    knows, the older file's first."""
    result = []
    for line in files.read_lines(data.newsletters / "finished.txt"):
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0]:
            result.append((parts[0], [s for s in parts[1].split(",") if s]))
    # A line begun by a late report on a job older than this file may not know
    # the services: finished.txt's line says them then.
    for line in files.read_lines(path(data)):  # two fields of each line: no Entry needed
        parts = line.split("\t", 3)
        if len(parts) >= 3 and parts[0] and not line.startswith("#"):
            services = [s for s in parts[2].split(",") if s and s != "-"]
            if services:
                result.append((parts[0], services))
    return result
