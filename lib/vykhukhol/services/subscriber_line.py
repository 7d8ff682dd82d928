"""One line of a subscriber file (docs/using/services.md#subscribers-file): the record and its format.

``subscribers.txt`` is one subscriber a line, tab-separated, a ``#`` header
first. Fields: email, name, state, subscribed, confirmed, sent, last_sent,
reminders, last_reminder, failures, ip; unknown trailing fields are kept.

A pause (the subscriber's own page, docs/using/own-page.md#own-page) is one trailing field
``paused=TIME`` after the eleven: a file stays readable by every older reader,
which keeps unknown trailing fields as they are. The reader's own language is
one more (``lang=ru``), and each value of the site's fields one more again
(``f.city=Тверь``; docs/using/services.md#subscriber-details), escaped so that
a value never breaks its line.

This module reads and writes one line; reading the file is
:mod:`~vykhukhol.services.subscribers`, choosing a newsletter's readers
:mod:`~vykhukhol.services.confirmed`.
"""

from __future__ import annotations

import re
from datetime import datetime

from vykhukhol.addresses import email_key
from vykhukhol.errors import BadInput
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import format_time, parse_time

FIELDS = ("email", "name", "state", "subscribed", "confirmed", "sent", "last_sent",
          "reminders", "last_reminder", "failures", "ip")
HEADER = "#" + "\t".join(FIELDS)
PAUSED = "paused="  # the trailing field of a paused subscriber: no letters before its time
LANGUAGE = "lang="  # the trailing field of the reader's own language
FIELD = "f."  # a trailing field "f.<name>=<value>": one value of the site's fields


class Subscriber:
    """One line of a subscriber file. A plain class, as a dataclass would
    write it (fields by position or name, ``==`` and ``repr`` over the
    fields): importing dataclasses cost a subscribe post more than the rest
    of its records."""

    def __init__(self, email: str, name: str = "",
                 state: SubscriberState = SubscriberState.NEW,
                 subscribed: datetime | None = None, confirmed: datetime | None = None,
                 sent: int = 0, last_sent: datetime | None = None, reminders: int = 0,
                 last_reminder: datetime | None = None, failures: int = 0, ip: str = "-",
                 extra: list[str] | None = None) -> None:
        self.email = email
        self.name = name
        self.state = state
        self.subscribed = subscribed
        self.confirmed = confirmed
        self.sent = sent
        self.last_sent = last_sent
        self.reminders = reminders
        self.last_reminder = last_reminder
        self.failures = failures
        self.ip = ip
        self.extra: list[str] = [] if extra is None else extra

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _FIELD_ORDER)

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq

    def __repr__(self) -> str:
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in _FIELD_ORDER)
        return f"Subscriber({fields})"

    @property
    def key(self) -> str:
        return email_key(self.email)

    def to_line(self) -> str:
        line = "\t".join((
            self.email, self.name, self.state.value, format_time(self.subscribed),
            format_time(self.confirmed), str(self.sent), format_time(self.last_sent),
            str(self.reminders), format_time(self.last_reminder), str(self.failures),
            self.ip or "-"))
        return "\t".join((line, *self.extra)) if self.extra else line

    def replace(self, **changes) -> Subscriber:
        """A copy with ``changes``: ``dataclasses.replace`` without its
        per-call field walk (a fold replaces twice per letter)."""
        if not changes.keys() <= _FIELD_NAMES:
            raise TypeError(f"not a subscriber field: {sorted(changes.keys() - _FIELD_NAMES)}")
        copy = object.__new__(Subscriber)
        copy.__dict__.update(self.__dict__, **changes)
        return copy

    @property
    def paused_until(self) -> datetime | None:
        """No letter of any kind before this time (None: not paused). A field
        whose time does not read is no pause: a hand edit never stops mail."""
        for value in self.extra:
            if value.startswith(PAUSED):
                try:
                    return parse_time(value[len(PAUSED):])
                except BadInput:
                    return None
        return None

    def paused(self, until: datetime | None) -> Subscriber:
        """This subscriber paused until ``until`` (None: not paused)."""
        extra = [value for value in self.extra if not value.startswith(PAUSED)]
        if until is not None:
            extra.append(PAUSED + format_time(until))
        return self.replace(extra=extra)

    @property
    def language(self) -> str | None:
        """The reader's own language as the line says it (None: none said;
        whether the site knows it is the reader's business)."""
        for value in self.extra:
            if value.startswith(LANGUAGE):
                return value[len(LANGUAGE):] or None
        return None

    def with_language(self, language: str | None) -> Subscriber:
        """This subscriber with ``language`` as their own (None: none)."""
        extra = [value for value in self.extra if not value.startswith(LANGUAGE)]
        if language:
            extra.append(LANGUAGE + escape_value(language))
        return self.replace(extra=extra)

    @property
    def fields(self) -> dict[str, str]:
        """The values of the site's fields this subscriber has, by name, as
        kept (text; a missing value is absent, never empty)."""
        values: dict[str, str] = {}
        for value in self.extra:
            if value.startswith(FIELD):
                name, equals, kept = value[len(FIELD):].partition("=")
                if equals and name:
                    values[name] = unescape_value(kept)
        return values

    def with_fields(self, changes: dict[str, str | None]) -> Subscriber:
        """This subscriber with the named fields set to these values; None or
        an empty value removes one. Other fields and trailing values stay."""
        changed = {FIELD + name + "=" for name in changes}
        extra = [value for value in self.extra
                 if not any(value.startswith(prefix) for prefix in changed)]
        extra.extend(FIELD + name + "=" + escape_value(value)
                     for name, value in changes.items() if value)
        return self.replace(extra=extra)


def escape_value(value: str) -> str:
    """A value made safe for one tab-separated field: ``%``, tab, carriage
    return and line feed written as ``%25``, ``%09``, ``%0D``, ``%0A``
    (every other character, Cyrillic included, as it is, for a person
    reading the file)."""
    return (value.replace("%", "%25").replace("\t", "%09")
            .replace("\r", "%0D").replace("\n", "%0A"))


def unescape_value(kept: str) -> str:
    """``escape_value`` undone. Every ``%`` of an escaped value begins one of
    its four sequences, so each is replaced on its own, ``%25`` last."""
    if "%" not in kept:
        return kept
    return (kept.replace("%09", "\t").replace("%0D", "\r").replace("%0A", "\n")
            .replace("%25", "%"))


_FIELD_ORDER = (*FIELDS, "extra")
_FIELD_NAMES = frozenset(_FIELD_ORDER)

_NOT_UTF8: list[re.Pattern[str]] = []  # compiled when a line that is not ASCII is first read


def _not_utf8(line: str) -> bool:
    """Whether ``line`` holds bytes that were not UTF-8 (surrogate escapes)."""
    if not _NOT_UTF8:
        _NOT_UTF8.append(re.compile("[\udc80-\udcff]"))
    return _NOT_UTF8[0].search(line) is not None


_STATES = {state.value: state for state in SubscriberState}


def parse_line(line: str) -> Subscriber:
    # Every line a take or a scan reads comes here: the state is
    # looked up rather than called for, and the counts read one by one.
    if not line.isascii() and _not_utf8(line):
        raise BadInput("the line is not UTF-8 text")
    parts = line.split("\t")
    if len(parts) < len(FIELDS):
        raise BadInput(f"{len(parts)} fields, {len(FIELDS)} expected")
    try:
        sent, reminders, failures = int(parts[5]), int(parts[7]), int(parts[9])
    except ValueError:
        raise BadInput("sent, reminders and failures must be whole numbers") from None
    if sent < 0 or reminders < 0 or failures < 0:
        raise BadInput("a count is negative")
    state = _STATES.get(parts[2])
    if state is None:
        raise BadInput(f"unknown state {parts[2]!r}")
    if "@" not in parts[0]:
        raise BadInput("no e-mail address")
    return Subscriber(parts[0], parts[1], state, parse_time(parts[3]), parse_time(parts[4]),
                      sent, parse_time(parts[6]), reminders, parse_time(parts[8]), failures,
                      parts[10], parts[11:])

