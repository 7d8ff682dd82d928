"""The subscriber file format (docs/using/services.md#subscribers-file) and every change made to it.

``subscribers.txt`` is one subscriber a line, tab-separated, a ``#`` header
first. Fields: email, name, state, subscribed, confirmed, sent, last_sent,
reminders, last_reminder, failures, ip; unknown trailing fields are kept. A
line that does not parse is kept verbatim by every rewrite, skipped by the
sender and reported — never dropped.

A pause (the subscriber's own page, docs/using/own-page.md#own-page) is one trailing field
``paused=TIME`` after the eleven: a file stays readable by every older reader,
which keeps unknown trailing fields as they are. The reader's own language is
one more (``lang=ru``), and each value of the site's fields one more again
(``f.city=Тверь``; docs/using/services.md#subscriber-details), escaped so that
a value never breaks its line.

Reading streams; ``add`` appends one line (a scan for the address, no rewrite);
every other change is one streamed atomic rewrite under the file's record lock.
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Callable, Collection, Iterator
from datetime import datetime
from pathlib import Path

from vykhukhol import files
from vykhukhol.addresses import email_key
from vykhukhol.errors import BadInput, Conflict
from vykhukhol.records import NamedTuple
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


class Malformed(NamedTuple):
    """A line that does not parse: its number, its text as it is, and why."""

    lineno: int
    text: str
    reason: str


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


def read(path: Path) -> Iterator[Subscriber | Malformed]:
    """Every line of the file in order, parsed; comments and blank lines skipped."""
    for lineno, line in enumerate(files.read_lines(path), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            yield parse_line(line)
        except BadInput as exc:
            yield Malformed(lineno, line, exc.message)


def subscribers(path: Path) -> Iterator[Subscriber]:
    return (item for item in read(path) if isinstance(item, Subscriber))


# A subscriber line that parse_line certainly accepts, with a confirmed
# state: UTF-8 text (bytes that were not UTF-8 read as U+DC80..U+DCFF), an address
# with an @, the counts whole numbers, every time "-" or a real date in the
# canonical form. Nearly every line of a real file matches it; the others (state
# new, a leap day, a malformed line) go to parse_line for its verdict. So the
# recipients are exactly those parse_line gives, without a Subscriber or four
# datetimes built per line (the bulk of the time at a million). It spells the
# field order of FIELDS again; tests/unit/test_newsletter_create.py
# holds both readings to the same verdict on any line.
#
# It must fail in linear time on any line: every field is a run of non-tabs
# ended by a tab, so no two quantifiers compete for a character — except the
# address's, split at an @. Its first part stops at the first @ ("[^@]*"), so
# a field of many @ (20k of them once took 5 s, the time growing with the
# square) is split one way only, not once per @.
_TEXT = "[^\t\udc80-\udcff]*"
_BEFORE_AT = "[^\t@\udc80-\udcff]*"
_DATE = ("[1-9][0-9]{3}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"  # days 1-28
         "|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)")  # and the rest but Feb 29
_TIME = f"(?:-|{_DATE}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z)"
_COUNT = "[0-9]{1,18}"  # far below int()'s limit on digits
_CONFIRMED_STATES = frozenset(state.value for state in SubscriberState if state.confirmed)


@functools.lru_cache(maxsize=1)
def _confirmed_line() -> re.Pattern[str]:
    """Compiled on first use (~1.5 ms): a subscribe request never needs it."""
    return re.compile(
        f"(?!#)({_BEFORE_AT}@{_TEXT})\t({_TEXT})\t(?:{'|'.join(sorted(_CONFIRMED_STATES))})"
        f"\t{_TIME}\t{_TIME}\t{_COUNT}\t{_TIME}\t{_COUNT}\t{_TIME}\t{_COUNT}\t{_TEXT}"
        "(?:\t([^\udc80-\udcff]*))?")  # the trailing fields: confirmed_details


def confirmed(path: Path) -> Iterator[tuple[str, str]]:
    """(email, name) of the confirmed subscribers of a subscriber file, in file
    order: what :func:`subscribers` yields with a confirmed state, read
    without a Subscriber per line (newsletter creation at a million)."""
    fullmatch = _confirmed_line().fullmatch
    for line in files.read_lines(path):
        match = fullmatch(line)
        if match:
            yield match[1], match[2]
            continue
        # Another line: parse_line decides, unless its state field cannot be a
        # confirmed one (then it is a new subscriber or malformed, out either way).
        parts = line.split("\t", 3)
        if len(parts) < 3 or parts[2] not in _CONFIRMED_STATES or line.startswith("#"):
            continue
        try:
            sub = parse_line(line)
        except BadInput:
            continue  # malformed: skipped, as by every reader of the file
        yield sub.email, sub.name


def confirmed_lines(path: Path) -> Iterator[list[str]]:
    """The confirmed subscribers' lines of a subscriber file as
    :meth:`Subscriber.to_line` writes them, in file order, each split at its
    first eleven tabs (the eleven fields, then the trailing ones in one
    string when there are any): the lines :func:`confirmed` chooses, for a
    reader that needs more than the address and the name (a segment's
    condition)."""
    fullmatch = _confirmed_line().fullmatch
    for line in files.read_lines(path):
        if fullmatch(line):
            yield line.split("\t", len(FIELDS))
            continue
        parts = line.split("\t", 3)
        if len(parts) < 3 or parts[2] not in _CONFIRMED_STATES or line.startswith("#"):
            continue
        try:
            sub = parse_line(line)
        except BadInput:
            continue
        yield sub.to_line().split("\t", len(FIELDS))



def confirmed_details(path: Path) -> Iterator[tuple[str, str, str]]:
    """(email, name, trailing fields) of the confirmed subscribers, in file
    order: :func:`confirmed_lines` with what follows the eleven fields as the
    line has it, tab-separated ("": nothing; the reader's language and field
    values, escaped as on the line)."""
    last = len(FIELDS)
    for parts in confirmed_lines(path):
        yield parts[0], parts[1], parts[last] if len(parts) > last else ""

def among(path: Path, keys: Collection[str]) -> Iterator[Subscriber]:
    """The subscribers whose address (as :func:`email_key` has it) is one of
    ``keys``, in file order: :func:`subscribers` filtered, but only those lines
    are parsed, so looking a few addresses up in a big file stays cheap."""
    for line in files.read_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        if email_key(line.split("\t", 1)[0]) not in keys:
            continue
        try:
            yield parse_line(line)
        except BadInput:
            continue


def malformed(path: Path) -> list[Malformed]:
    return [item for item in read(path) if isinstance(item, Malformed)]


# The only characters outside ASCII whose lower case holds ASCII letters (K → k, İ → i̇).
_LOWER_TO_ASCII = ("\u212a".encode(), "\u0130".encode())
_BLOCK = 1 << 20  # bytes read at a time by _lines_maybe_starting
_LINE_END = re.compile(rb"[\r\n]")  # where files.read_lines ends a line


def _lines_maybe_starting(path: Path, prefix: str) -> Iterator[str]:
    """The lines of ``path`` (as :func:`files.read_lines` has them, in file order)
    that may start with ``prefix`` once lower-cased; a superset of those that do.

    In each block read, one case-blind byte search for a line end followed by
    ``prefix`` finds where it begins a line, and only those lines are decoded:
    a lookup in a big file costs a search of its bytes, not a Python loop over
    every line, nor a lower-cased copy of them. An empty or non-ASCII
    ``prefix`` reads every line."""
    if not prefix or not prefix.isascii():
        yield from files.read_lines(path)
        return
    needle = prefix.encode()
    try:
        handle = open(path, "rb", buffering=0)
    except FileNotFoundError:
        return
    # ASCII letters only, as bytes.lower() folds them (a bytes pattern knows no other case).
    after_a_line_end = re.compile(b"\n" + re.escape(needle), re.IGNORECASE)
    buffer = bytearray(_BLOCK)  # read into again and again: no new block to allocate each time
    with handle:
        carry: list[bytes] = [b""]  # the start of a line that the last blocks cut
        while True:
            size = handle.readinto(buffer)
            block = buffer if size == _BLOCK else buffer[:size]
            if not block:  # a last line without a line end
                yield from _lines_starting(b"".join(carry), needle, after_a_line_end)
                return
            first = _LINE_END.search(block)
            if first is None:  # one long line goes on; joined once when it ends,
                carry.append(bytes(block))  # not copied again with every block
                continue
            # Copying a block costs as much as searching it: only the line cut by
            # the last read is joined up; the whole lines after it are searched in place.
            last = max(block.rfind(b"\n"), block.rfind(b"\r")) + 1
            yield from _lines_starting(b"".join([*carry, block[:first.end()]]), needle,
                                       after_a_line_end)
            yield from _lines_starting(block, needle, after_a_line_end, first.end(), last)
            carry = [bytes(block[last:])]


def _lines_starting(data: bytes | bytearray, needle: bytes, after_a_line_end: re.Pattern[bytes],
                    start: int = 0, stop: int | None = None) -> Iterator[str]:
    """The lines of ``data`` beginning in ``data[start:stop]`` (where ``start`` and
    ``stop`` begin lines) whose ASCII-lower-cased bytes may start with ``needle``
    (``after_a_line_end`` finds it after a ``\\n``), decoded as files.read_lines
    decodes them. If ``data`` holds a character that lower-cases to ASCII, every
    line there is given."""
    stop = len(data) if stop is None else stop
    if not data.isascii() and any(char in data for char in _LOWER_TO_ASCII):
        # A \r\n cut in two reads as an extra empty line, which no prefix starts.
        text = data[start:stop].decode("utf-8", "surrogateescape")
        for line in io.StringIO(text, newline=""):
            yield line.rstrip("\r\n")
        return
    if data.find(b"\r", start, stop) >= 0:  # a line may end with \r alone: search a lowered copy
        yield from _lowered_lines_starting(data, needle, start, stop)
        return
    if start < stop and data[start:start + len(needle)].lower() == needle:
        yield _line_at(data, start)
    # A \n at stop - 1 begins the line at stop, which is not ours.
    for match in after_a_line_end.finditer(data, start, stop - 1 + len(needle)):
        yield _line_at(data, match.start() + 1)


def _line_at(data: bytes | bytearray, at: int) -> str:
    end = _LINE_END.search(data, at)
    return data[at:end.start() if end else len(data)].decode("utf-8", "surrogateescape")


def _lowered_lines_starting(data: bytes | bytearray, needle: bytes, start: int, stop: int
                            ) -> Iterator[str]:
    """:func:`_lines_starting` where a line may end with a lone \\r."""
    lowered = data.lower()
    limit = stop + len(needle) - 1  # a match must begin before stop
    at = lowered.find(needle, start, limit)
    while at >= 0:
        if at > start and lowered[at - 1] not in b"\r\n":  # inside a line
            at = lowered.find(needle, at + 1, limit)
            continue
        end = _LINE_END.search(data, at)
        after = end.start() if end else len(data)
        yield data[at:after].decode("utf-8", "surrogateescape")
        at = lowered.find(needle, after, limit)


def find(path: Path, email: str) -> Subscriber | None:
    wanted = email_key(email)
    # The whole key as the prefix: a line holding this address starts with it
    # once lower-cased (a line starting with white space never matched).
    for line in _lines_maybe_starting(path, wanted):
        # A cheap test on the raw line first: most lines are not the one.
        if not line.lower().startswith(wanted):
            continue
        if email_key(line.split("\t", 1)[0]) == wanted:
            try:
                return parse_line(line)
            except BadInput:
                return None
    return None


def _contains(path: Path, key: str) -> bool:
    return find(path, key) is not None


def add(path: Path, subscriber: Subscriber, sync: bool = True, absent: bool = False) -> None:
    """Append a new subscriber; Conflict if the address is in the file already.
    ``sync=False``: the caller fsyncs the file itself, later (a public page
    does it after its answer). ``absent``: the caller holds the record lock and
    has just looked the address up, so it is not looked up twice."""
    with files.record_lock(path):
        if not absent and _contains(path, subscriber.email):
            raise Conflict("{email} is subscribed already", email=subscriber.email)
        if not path.exists() or path.stat().st_size == 0:
            files.atomic_write(path, [HEADER + "\n", subscriber.to_line() + "\n"])
        else:
            _ensure_final_newline(path)
            files.append_line(path, subscriber.to_line(), sync=sync)


def _ensure_final_newline(path: Path) -> None:
    with open(path, "rb") as handle:
        handle.seek(-1, 2)
        last = handle.read(1)
    if last not in (b"\n", b""):
        files.append_line(path, "")


Change = Callable[[Subscriber], "Subscriber | None"]


def rewrite(path: Path, change: Change, on_line: Callable[[Subscriber], None] | None = None,
            parse: Callable[[int, str], bool] | None = None) -> int:
    """Stream-rewrite the file: ``change`` returns the subscriber (changed or not)
    or None to delete it. Malformed lines are kept. Returns how many changed.

    ``on_line`` sees every subscriber kept after its change (the sender uses it to
    compute the service's next due time in the same pass). With ``parse``, a
    line is parsed (and seen by ``change`` and ``on_line``) only when
    ``parse(index, line)`` says so, ``index`` counting the subscriber lines
    (malformed ones too) from 0; the others are copied through as they are.
    """
    changed = 0

    def lines() -> Iterator[str]:
        nonlocal changed
        yield HEADER + "\n"
        index = -1
        for line in files.read_lines(path):
            if not line.strip() or line.startswith("#"):
                continue
            index += 1
            if parse is not None and not parse(index, line):
                yield line + "\n"
                continue
            try:
                item = parse_line(line)
            except BadInput:
                yield line + "\n"  # malformed: kept as it is
                continue
            after = change(item)
            if after is not item:
                changed += 1
            if after is not None:
                if on_line:
                    on_line(after)
                yield after.to_line() + "\n"

    with files.record_lock(path):
        if not path.exists():
            return 0
        files.atomic_write(path, lines())
    return changed


def update_one(path: Path, email: str, change: Change) -> bool:
    """Apply ``change`` to one subscriber; False if the address is not there."""
    wanted = email_key(email)
    found = False

    def one(sub: Subscriber) -> Subscriber | None:
        nonlocal found
        if sub.key != wanted:
            return sub
        found = True
        return change(sub)

    if not path.exists() or find(path, email) is None:
        return False
    rewrite(path, one)
    return found


def remove(path: Path, email: str) -> bool:
    return update_one(path, email, lambda sub: None)


def counts(path: Path) -> dict[str, int]:
    """Subscribers by state, plus ``malformed`` lines."""
    result = {state.value: 0 for state in SubscriberState}
    result["malformed"] = 0
    for item in read(path):
        if isinstance(item, Malformed):
            result["malformed"] += 1
        else:
            result[item.state.value] += 1
    return result


def add_many(path: Path, new: list[Subscriber]) -> tuple[int, int]:
    """Add many subscribers in one rewrite; returns (added, already there)."""
    added = duplicates = 0
    with files.record_lock(path):
        seen = {item.key for item in read(path) if isinstance(item, Subscriber)}
        fresh = []
        for sub in new:
            if sub.key in seen:
                duplicates += 1
                continue
            seen.add(sub.key)
            fresh.append(sub)
            added += 1
        if fresh:
            def lines() -> Iterator[str]:
                yield HEADER + "\n"
                for line in files.read_lines(path):
                    if line and not line.startswith("#"):
                        yield line + "\n"
                for sub in fresh:
                    yield sub.to_line() + "\n"
            files.atomic_write(path, lines())
    return added, duplicates
