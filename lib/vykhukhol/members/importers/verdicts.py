"""What a reader of another tool's export says of each record: a
:class:`Person` with a :class:`Standing`, or a :class:`RefusedLine` with the
reason; a whole file is a :class:`Reading`."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import NamedTuple

from vykhukhol.addresses import check_email, clean_name
from vykhukhol.errors import BadInput
from vykhukhol.i18n import tr
from vykhukhol.members.fieldmap import BadCell, Columns, Values
from vykhukhol.members.importers.parsing import Row, _
from vykhukhol.members.suppression import Why

SHOWN_REFUSED = 20            # refused records a dry run or a page lists


class Standing(str, enum.Enum):
    """Where a person of another tool's file ends up here."""

    CONFIRMED = "confirmed"          # a subscriber, confirmed
    UNCONFIRMED = "unconfirmed"      # a subscriber asked to confirm by the reminders
    SUPPRESSED = "suppressed"        # on the suppression list, never a subscriber

    def label(self, lang: str) -> str:
        return tr(lang, _LABELS[self])


_LABELS = {Standing.CONFIRMED: _("confirmed"), Standing.UNCONFIRMED: _("unconfirmed"),
           Standing.SUPPRESSED: _("to the suppression list")}


class Person(NamedTuple):
    email: str
    name: str
    standing: Standing
    subscribed: datetime | None = None   # the other tool's sign-up time
    confirmed: datetime | None = None    # its opt-in (confirmation) time
    why: Why | None = None               # a suppression.Why when SUPPRESSED
    ip: str = "import"                   # the consent's address, when the file has it
    left: datetime | None = None         # when the other tool saw them leave (SUPPRESSED)
    fields: dict[str, str] | None = None  # the site's fields, canonical values by name
    language: str | None = None          # the reader's own language (ru, en), if the file says


class RefusedLine(NamedTuple):
    file: str           # the zip's member it is in, or ""
    lineno: int         # the record's first line
    text: str           # the record, cut to SHOWN characters
    why: BadInput
    column: str = ""    # the column whose value did not fit its field, if that was why

    @property
    def where(self) -> str:
        """"line 7", "cleaned_members_export.csv, line 7" or "line 7, column
        City" (the CLI's English)."""
        return self.place("en")

    def place(self, lang: str) -> str:
        """Where the record is, in ``lang``."""
        place = (tr(lang, "line {line}, column {column}", line=self.lineno, column=self.column)
                 if self.column else tr(lang, "line {line}", line=self.lineno))
        return f"{self.file}, {place}" if self.file else place


class Reading(NamedTuple):
    tool: str
    people: list[Person]
    refused: list[RefusedLine]
    columns: Columns | None = None   # what filled the site's fields (a dry run lists it)


def person(row: Row, where: str, email: str, name: str, standing: Standing | BadInput,
           subscribed: datetime | None = None, confirmed: datetime | None = None,
           why: Why | None = None, ip: str = "", left: datetime | None = None,
           values: Values | BadCell | None = None) -> Person | RefusedLine:
    """One record's verdict: a :class:`Person`, or :class:`RefusedLine` with why.
    A value that does not fit its field refuses a record that would subscribe;
    one who left is suppressed all the same (their values are not kept)."""
    if isinstance(standing, BadInput):
        return RefusedLine(where, row.lineno, row.text, standing)
    if not email:
        return RefusedLine(where, row.lineno, row.text, BadInput("no e-mail address on this line"))
    try:
        address = check_email(email)
    except BadInput as exc:
        return RefusedLine(where, row.lineno, row.text, exc)
    if standing is Standing.SUPPRESSED or values is None:
        values = Values({}, None)
    if isinstance(values, BadCell):
        return RefusedLine(where, row.lineno, row.text, values.why, values.column)
    return Person(address, clean_name(name), standing, subscribed, confirmed, why,
                  _ip(ip), left if standing is Standing.SUPPRESSED else None,
                  values.fields, values.language)


def _ip(text: str) -> str:
    import ipaddress

    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        return "import"


def sorted_out(verdicts: list[Person | RefusedLine]) -> tuple[list[Person], list[RefusedLine]]:
    people = [v for v in verdicts if isinstance(v, Person)]
    return people, [v for v in verdicts if isinstance(v, RefusedLine)]


def by_status(status: str) -> tuple[Standing, Why | None] | BadInput:
    """A status word of the tools (subscribed, pending, unsubscribed, cleaned,
    blocklisted, bounced …) as a standing here and the suppression's reason. An
    empty cell says nothing: unconfirmed, as a file without a status column."""
    word = status.strip().lower()
    if not word:
        return Standing.UNCONFIRMED, None
    found = _STATUSES.get(word)
    if found is None:
        return BadInput("unknown status {status!r} (expected one of: {known})", status=status,
                        known=", ".join(_STATUSES))
    standing, why = found
    return standing, (Why(why) if why else None)


_STATUSES: dict[str, tuple[Standing, str | None]] = {
    "subscribed": (Standing.CONFIRMED, None), "confirmed": (Standing.CONFIRMED, None),
    "enabled": (Standing.CONFIRMED, None), "active": (Standing.CONFIRMED, None),
    "unconfirmed": (Standing.UNCONFIRMED, None), "pending": (Standing.UNCONFIRMED, None),
    "unsubscribed": (Standing.SUPPRESSED, "unsubscribed"),
    "cleaned": (Standing.SUPPRESSED, "address gone"),
    "bounced": (Standing.SUPPRESSED, "address gone"),
    "blocklisted": (Standing.SUPPRESSED, "blocklisted"),
    "blacklisted": (Standing.SUPPRESSED, "blocklisted"),
}
