"""Many addresses at once into a service (or onto the suppression list): the
imports of the admin and the CLI.

The text is read with the csv module's own reader, record by record, so a
quoted field may hold a newline (``"Smith,\\nDan"``) as a spreadsheet writes
it. What it takes: CSV with an ``email`` column (and ``name``), header-less
``email,name`` lines, or one address a line; ``;`` is the separator when the
first line has more of them than commas (Russian Excel's CSV), or the one a
first ``sep=;`` line names (Excel's own hint). Blank lines and ``#`` comment
lines between records are skipped.

A name is stored as it was before an export defused it: the ``'`` the export
put before a leading ``=``, ``+``, ``-`` or ``@`` (:func:`vykhukhol.members.export.undefused`)
is taken off, so exporting and importing again changes no name. The data
files are not spreadsheets: a name that begins with ``=`` is text there,
escaped on every page, and every CSV the site writes defuses it again, so no
formula is ever live in anything Vykhukhol writes (docs/reference/security.md#security-templates).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from vykhukhol import services as svc
from vykhukhol.addresses import check_email, clean_name
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.members.export import undefused
from vykhukhol.members.fieldmap import BadCell, Columns, Values
from vykhukhol.services import due_summary
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.settings import Settings
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now

SHOWN = 200  # characters of a refused record kept to show the admin

Invalid = tuple[int, str, BadInput]  # line number, the record's text, why (str() English, .text(lang))


def _skipped(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def _lines_from(first: str, rest: Iterator[str], taken: list[str]) -> Iterator[str]:
    """``first`` and then ``rest``, each noted in ``taken``: the reader pulls one
    line at a time, and a second only while a quoted field is still open."""
    taken.append(first)
    yield first + "\n"
    for more in rest:
        taken.append(more)
        yield more + "\n"


def _records(text: str, delimiter: str) -> Iterator[tuple[int, str, list[str] | BadInput]]:
    """(first line number, text, cells or why not) of every record that is not
    blank or a comment; a record spans lines when a quoted field holds a newline."""
    import csv

    lines = iter(text.split("\n"))
    lineno = 0
    for line in lines:
        lineno += 1
        if _skipped(line):
            continue
        taken: list[str] = []
        reader = csv.reader(_lines_from(line, lines, taken), delimiter=delimiter)
        try:
            row: list[str] | BadInput = next(reader, [])
        except csv.Error as exc:
            row = BadInput("not CSV: {reason}", reason=str(exc))
        start, lineno = lineno, lineno + len(taken) - 1
        yield start, "\n".join(taken).rstrip("\r"), row


class Entry(NamedTuple):
    """One valid record of an import: the address, the name, and the values
    of the site's fields with the reader's language its columns give."""

    email: str
    name: str
    values: Values = Values({}, None)


def parse_import(text: str) -> tuple[list[tuple[str, str]], list[Invalid]]:
    """Returns (valid (email, name) pairs, invalid (line number, text, reason));
    every record that is neither blank nor a ``#`` comment is one or the other,
    so the counts always add up."""
    entries, invalid = read_entries(text)
    return [(entry.email, entry.name) for entry in entries], invalid


def read_entries(text: str, columns: Columns | None = None) -> tuple[list[Entry], list[Invalid]]:
    """:func:`parse_import` with each record's values: a header's other
    columns fill the site's fields as ``columns`` maps them
    (docs/using/import.md#import-fields); a value that does not fit refuses
    its record, naming the column."""
    columns = columns or Columns()
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    first = next((line for line in text.split("\n") if not _skipped(line)), "")
    delimiter = ";" if first.count(";") > first.count(",") else ","
    hint = first.strip().lower()
    if len(hint) == 5 and hint.startswith("sep=") and hint[4] in ",;\t":
        delimiter = hint[4]
        text = text.replace(first, "#" + first, 1)  # a comment now: no record, no refusal
    valid: list[Entry] = []
    invalid: list[Invalid] = []
    at = 0  # no header: "address" or "address,name" a line
    name_at: int | None = 1
    header: list[str] = []
    mapping = None
    for number, (lineno, record, row) in enumerate(_records(text, delimiter)):
        if isinstance(row, BadInput):
            invalid.append((lineno, record[:SHOWN], row))
            continue
        if number == 0:
            lower = [cell.strip().lower() for cell in row]
            if "email" in lower:
                at, name_at = lower.index("email"), lower.index("name") if "name" in lower else None
                header = [cell.strip() for cell in row]
                mapping = columns.map(header, (header[at], header[name_at] if name_at is not None
                                               else None))
                continue
        address = row[at] if len(row) > at else ""
        person = row[name_at] if name_at is not None and len(row) > name_at else ""
        if not address.strip():
            invalid.append((lineno, record[:SHOWN], BadInput("no e-mail address on this line")))
            continue
        values: Values | BadCell = Values({}, None)
        if mapping is not None:
            values = columns.values(mapping, {column: undefused(cell.strip())
                                              for column, cell in zip(header, row, strict=False)})
        try:
            entry = Entry(check_email(address), clean_name(undefused(person)), Values({}, None))
        except BadInput as exc:
            invalid.append((lineno, record[:SHOWN], exc))
            continue
        if isinstance(values, BadCell):
            invalid.append((lineno, record[:SHOWN], BadInput(
                "column {column}: {reason}", column=values.column, reason=values.why)))
            continue
        valid.append(entry._replace(values=values))
    columns.check_met()
    return valid, invalid


def import_addresses(data: DataDir, settings: Settings, service_name: str, text: str,
                     confirmed: bool = False, choices: dict[str, str] | None = None,
                     lang: str = "en") -> dict:
    """Add every valid address at once. Unconfirmed imports are asked to confirm
    by the sender's reminders (no mass mailing from a web request). Addresses
    on the suppression list (docs/deliverability/suppression.md#suppression-list) are skipped and counted in ``suppressed``.
    A header's columns fill the site's fields (``choices``: ``--map``'s)."""
    from vykhukhol.settings import fields as site_fields  # off the command line's start

    svc.find_service(data, service_name)  # an unknown service before the file is read
    columns = Columns(site_fields.load(data.root), choices, lang)
    valid, invalid = read_entries(text, columns)
    result = add_people(data, settings, service_name,
                        [Newcomer(e.email, e.name, confirmed, fields=e.values.fields,
                                  language=e.values.language) for e in valid])
    return {**result, "invalid": invalid, "columns": columns}


@dataclass(frozen=True)
class SeriesStart:
    """Where the confirmed readers an import brings join the service's series
    (docs/using/import.md#import-from). A reader is at the letter after its
    ``sent`` count (docs/design/run.md#run-steps): "end" writes them as a
    subscriber who received the whole series (state ``done``, ``sent`` the
    number of letters), so no letter of today's series is due and one added
    to it later is; "letter N" writes ``sent`` N-1, "start" 0. Unconfirmed
    readers start the series when they confirm, as anyone does."""

    first: int  # the first letter they get: 1 the start, 0 none (after the series)

    @classmethod
    def parse(cls, text: str) -> SeriesStart:
        """``start``, ``end``, ``letter N`` (or ``N``); BadInput otherwise."""
        word = " ".join(text.lower().split())
        if word in ("start", "end"):
            return START if word == "start" else END
        number = re.fullmatch(r"(?:letter ?)?([0-9]{1,3})", word)
        if number and int(number.group(1)) >= 1:
            return cls(int(number.group(1)))
        raise BadInput("where in the series: start, end or letter N, not {given!r}", given=text)

    @property
    def word(self) -> str:
        """How the option and the form spell it."""
        return "end" if self.first == 0 else "start" if self.first == 1 else f"letter {self.first}"

    def letters(self, count: int) -> int:
        """Letters of a series of ``count`` each reader gets from here."""
        return 0 if self.first == 0 else max(count - self.first + 1, 0)

    def check(self, service_name: str, count: int) -> None:
        if self.first > max(count, 1):
            raise BadInput("the series of {service} has {count} letters: start, end or a letter "
                           "from 1 to {count}; nothing was imported", service=service_name,
                           count=count)

    def place(self, count: int) -> tuple[SubscriberState, int]:
        """The state and ``sent`` count a confirmed reader is written with."""
        if self.first == 0 and count:
            return SubscriberState.DONE, count
        return SubscriberState.ACTIVE, max(self.first - 1, 0)


START, END = SeriesStart(1), SeriesStart(0)


class Newcomer(NamedTuple):
    """One address an import adds, with the times another tool kept for it."""

    email: str
    name: str
    confirmed: bool
    subscribed: datetime | None = None      # when they signed up (None: now)
    confirmed_at: datetime | None = None    # when they confirmed (None: now)
    ip: str = "import"                      # where the consent came from, if the file says
    fields: dict[str, str] | None = None    # the site's fields, canonical values by name
    language: str | None = None             # the reader's own language (ru, en)


def add_people(data: DataDir, settings: Settings, service_name: str,
               people: list[Newcomer], series: SeriesStart = START) -> dict:
    """The final write of every import: ``people`` into the service in one
    rewrite, skipping the suppressed, the confirmed placed in its series as
    ``series`` says. Returns ``added``, ``duplicates``, ``suppressed``
    (skipped) and ``readers`` (the confirmed among the added)."""
    from vykhukhol.members import suppression  # off the command line's start

    service = svc.find_service(data, service_name)
    count = svc.letter_count(service)
    series.check(service.name, count)
    state, sent = series.place(count)
    checker = suppression.Checker(data, suppression.secret_of(settings))
    kept = [p for p in people if p.email not in checker]
    # Read before the write only to count the readers it adds; a subscribe
    # in between can make that count one off, never a line.
    known = {item.key for item in subs.read(service.subscribers_path)
             if isinstance(item, Subscriber)}
    moment = now()
    # An unconfirmed import is dated when it came (or when the other tool says
    # it signed up); its last request is put one reminder period back, so the
    # sender's next runs ask it to confirm, in its polite batches.
    asked = moment - timedelta(seconds=settings["reminder_period"])
    new = [Subscriber(email=p.email, name=p.name, state=state if p.confirmed
                      else SubscriberState.NEW, subscribed=p.subscribed or moment,
                      confirmed=(p.confirmed_at or moment) if p.confirmed else None,
                      sent=sent if p.confirmed else 0,
                      last_reminder=None if p.confirmed else asked, ip=p.ip)
           .with_fields(dict(p.fields or {})).with_language(p.language)
           for p in kept]
    readers = len({sub.key for sub in new if sub.confirmed is not None} - known)
    added, duplicates = subs.add_many(service.subscribers_path, new)
    due_summary.forget_due(data, service.name)
    return {"added": added, "duplicates": duplicates, "suppressed": len(people) - len(kept),
            "readers": readers}


def suppress_addresses(data: DataDir, secret: bytes, text: str, source: str,
                       moment: datetime) -> dict:
    """The suppression list's import (docs/deliverability/suppression.md#suppression-list): every address of ``text`` (what
    a subscriber import takes: CSV with an ``email`` column, or one address a
    line) suppressed by the admin. Returns ``added``, ``already`` (on the list
    before, or twice in the text) and ``invalid`` (line number, text, why)."""
    from vykhukhol.members import suppression  # off the command line's start

    valid, invalid = parse_import(text)
    added = suppression.add_many(data, secret, [email for email, _ in valid],
                                 suppression.Why.ADMIN, source, moment)
    return {"added": added, "already": len(valid) - added, "invalid": invalid}
