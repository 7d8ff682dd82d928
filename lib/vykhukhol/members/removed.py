"""Addresses a bounce deleted, kept for 90 days so the owner can undo it.

A bounce, a provider's report or the bounce limit deletes an address from
every service at once (docs/deliverability/suppression.md#undo-bounce). A misread refusal then costs a working
subscriber, so what the deletion took is kept in ``data/removed.txt`` for
:data:`KEEP_DAYS` days: one line per service the address left,
tab-separated, a ``#`` header first:

    address  when  cause  source  words  service  the subscriber line as it was…

``address`` is lower-cased (:func:`~vykhukhol.addresses.email_key`);
``when`` UTC, ISO 8601; ``cause`` the suppression's why (``address gone``,
``soft bounces``); ``source`` where the refusal came from (``imap``,
``pipe``, ``smtp`` for a refusal at hand-over, a provider's name); ``words``
what the server said (white space folded, at most :data:`WORDS_LIMIT`
characters, ``-`` when none came: a refusal at hand-over keeps its words in
the run log); ``service`` the service; then the eleven (or more) fields of
the subscriber line exactly as the file held it, so its state, its place in
the series and its dates come back with it.

Only deletions decided by a refusal come here: an address that left by
itself, the admin's delete and an erase never do, and an erase takes the
address's lines away (:func:`forget`).

:func:`restore` puts the lines back and takes the suppression away. Crash
safety, in the order of its steps (each one done twice changes nothing):

1. the subscriber files' record locks (sorted by path), then this file's —
   the order every writer takes them in, so nobody waits in a circle;
2. the suppression entries of the refusal (``address gone``, ``soft
   bounces``) removed — one atomic rewrite;
3. each service's line appended unless the address is there again
   (fsynced), its ``failures`` set to 0 (the owner has judged those
   refusals wrong), the service's next-due summary dropped;
4. ``settle`` (the soft failures counted for it forgotten: the caller's, it
   lives with the counting);
5. the address's lines removed from this file — one atomic rewrite, last.

A kill at any point leaves every file old or new and the record in place;
``restore`` again finishes the work. Lines older than :data:`KEEP_DAYS` are
never shown and are dropped by the next change of the file (the admin page
and ``vykhukhol removed list`` make one).

It deliberately knows nothing of how a refusal is read or counted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from vykhukhol import files
from vykhukhol import services as svc
from vykhukhol.addresses import email_key
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, Conflict, NotFound, Term
from vykhukhol.members import suppression
from vykhukhol.services import due_summary, subscriber_line
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.timeutil import format_time, parse_time

FILE_NAME = "removed.txt"
KEEP_DAYS = 90          # days a deletion by a refusal can be undone
WORDS_LIMIT = 500       # characters of the server's words kept
FIELDS = ("address", "when", "cause", "source", "words", "service", "line")
HEADER = "#" + "\t".join(FIELDS)
UNDONE_CAUSES = ("address gone", "soft bounces")  # suppression.Why values a restore takes away


class Kept(NamedTuple):
    """One service line of an address a refusal deleted."""

    address: str
    when: datetime
    cause: str
    source: str
    words: str
    service: str
    line: str   # the subscriber line, tabs and all

    def to_line(self) -> str:
        return "\t".join([*(_field(v) for v in (self.address, format_time(self.when), self.cause,
                                                self.source, self.words, self.service)),
                          self.line])

    @property
    def subscriber(self) -> Subscriber | None:
        """The line parsed (None: edited by hand into something that does not parse)."""
        try:
            return subscriber_line.parse_line(self.line)
        except BadInput:
            return None


class Removal(NamedTuple):
    """Every kept line of one address, newest first."""

    address: str
    lines: list[Kept]

    @property
    def when(self) -> datetime:
        return max(kept.when for kept in self.lines)

    @property
    def latest(self) -> Kept:
        return max(self.lines, key=lambda kept: kept.when)


class Restored(NamedTuple):
    """What a restore did, service by service."""

    address: str
    services: list[str]   # put back
    already: list[str]    # held the address again: left as they are
    missing: list[str]    # gone meanwhile, or a line that no longer parses


def _field(value: str) -> str:
    return " ".join(_printable(str(value)).split()) or "-"


def _printable(text: str) -> str:
    """Control characters out: the words come from a stranger's mail, and
    ``removed list`` prints them on the owner's terminal."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


def path(data: DataDir) -> Path:
    return data.root / FILE_NAME


def _parse(line: str) -> Kept | None:
    parts = line.split("\t")
    if not line or line.startswith("#") or len(parts) < len(FIELDS):
        return None
    try:
        when = parse_time(parts[1])
    except BadInput:
        return None
    if when is None or "@" not in parts[0]:
        return None
    cause, source, words, service = parts[2:6]
    return Kept(parts[0].strip().lower(), when, cause, source, words, service, "\t".join(parts[6:]))


def _expired(kept: Kept, moment: datetime) -> bool:
    return kept.when < moment - timedelta(days=KEEP_DAYS)


def entries(data: DataDir, moment: datetime) -> list[Kept]:
    """Every line kept and not expired at ``moment``, in the file's order."""
    found = []
    for line in files.read_lines(path(data)):
        kept = _parse(line)
        if kept is not None and not _expired(kept, moment):
            found.append(kept)
    return found


def removals(data: DataDir, moment: datetime) -> list[Removal]:
    """The addresses kept, newest removal first."""
    grouped: dict[str, list[Kept]] = {}
    for kept in entries(data, moment):
        grouped.setdefault(kept.address, []).append(kept)
    result = [Removal(address, sorted(lines, key=lambda k: k.when, reverse=True))
              for address, lines in grouped.items()]
    return sorted(result, key=lambda removal: removal.when, reverse=True)


def find(data: DataDir, email: str, moment: datetime) -> Removal | None:
    key = email_key(email)
    lines = [kept for kept in entries(data, moment) if kept.address == key]
    return Removal(key, lines) if lines else None


def _rewrite(data: DataDir, change: Callable[[list[Kept]], list[Kept]], moment: datetime) -> bool:
    """One atomic rewrite of the file under its record lock: ``change`` gets
    the lines not expired. Lines that do not parse are kept as they are;
    expired ones go. False (and nothing written) when nothing changed."""
    target = path(data)
    with files.record_lock(target):
        raw = list(files.read_lines(target))
        odd = [line for line in raw if line and not line.startswith("#") and _parse(line) is None]
        parsed = [kept for line in raw if (kept := _parse(line)) is not None]
        live = [kept for kept in parsed if not _expired(kept, moment)]
        after = change(list(live))
        if after == live and len(live) == len(parsed):
            return False
        files.atomic_write(target, [HEADER + "\n", *(line + "\n" for line in odd),
                                    *(kept.to_line() + "\n" for kept in after)])
    return True


def note(data: DataDir, service: str, line: str, cause: str, source: str, words: str,
         moment: datetime) -> None:
    """Keep one subscriber line that is about to be deleted because of a
    refusal. The caller holds the subscriber file's record lock and deletes
    the line after this returns (fsynced), so a kill between the two leaves
    the record and the line, never neither. A line already kept for this
    address and service is replaced (a batch finished again, or a later
    deletion after the address came back by hand)."""
    key = email_key(line.split("\t", 1)[0])
    new = Kept(key, moment, cause, source, _field(words)[:WORDS_LIMIT], service, line)

    def change(lines: list[Kept]) -> list[Kept]:
        return [k for k in lines if (k.address, k.service) != (key, service)] + [new]

    _rewrite(data, change, moment)


@contextlib.contextmanager
def keeping(data: DataDir, service: svc.Service, email: str, cause: str, source: str,
            words: str, moment: datetime) -> Iterator[None]:
    """Around one service's deletion of an address: under the subscriber
    file's record lock (held until the block ends, so the line kept is the
    line deleted), the address's line is kept first."""
    target = service.subscribers_path
    with files.record_lock(target):
        sub = subs.find(target, email) if target.exists() else None
        if sub is not None:
            note(data, service.name, sub.to_line(), cause, source, words, moment)
        yield


def prune(data: DataDir, moment: datetime) -> bool:
    """Drop the lines older than KEEP_DAYS; False when there were none."""
    if not path(data).exists():
        return False
    return _rewrite(data, lambda lines: lines, moment)


def forget(data: DataDir, email: str, moment: datetime) -> bool:
    """Every kept line of the address removed (an erase, docs/reference/security.md#security-erase); False when
    there were none."""
    key = email_key(email)
    if not path(data).exists():
        return False
    return _rewrite(data, lambda lines: [k for k in lines if k.address != key], moment)


def _other_suppression(data: DataDir, key: str) -> str | None:
    """The address's suppression for a reason a restore must not undo, if
    one stands: a complaint before the admin's, before any other (the one
    named; taking the address off the list takes every reason away)."""
    first = (suppression.Why.COMPLAINT.value, suppression.Why.ADMIN.value)
    others = [entry.why for entry in suppression.entries(data)
              if entry.address == key and entry.why not in UNDONE_CAUSES]
    return min(others, key=lambda why: first.index(why) if why in first else len(first),
               default=None)


def restore(data: DataDir, settings, email: str, moment: datetime,
            settle: Callable[[DataDir, str, list[str]], None] | None = None) -> Restored:
    """Put the address back into every service it left, as it was, and take its
    suppression away (the steps of the module's docstring). NotFound when
    nothing is kept for it; Conflict when it is suppressed for another reason
    (nothing changes then)."""
    key = email_key(email)
    found = find(data, key, moment)
    if found is None:
        raise NotFound("{email} is not among the addresses removed by bounces in the last "
                       "{days} days; nothing changed", email=key, days=KEEP_DAYS)
    other = _other_suppression(data, key)
    if other is not None:
        shown = suppression.label(other, "en")
        raise Conflict("{email} is also suppressed for another reason ({why}); nothing changed. "
                       "Take it off the suppression list first if its owner asked to be written "
                       "to.", email=key, why=Term(shown))
    services: dict[str, svc.Service] = {}
    missing: list[str] = []
    for kept in found.lines:
        try:
            services[kept.service] = svc.find_service(data, kept.service)
        except (NotFound, BadInput):
            missing.append(kept.service)
    done, already = [], []
    with contextlib.ExitStack() as stack:
        for locked in sorted(services.values(), key=lambda s: str(s.subscribers_path)):
            stack.enter_context(files.record_lock(locked.subscribers_path))
        stack.enter_context(files.record_lock(path(data)))
        found = find(data, key, moment)  # again, under the locks: another restore may have run
        if found is None:
            raise NotFound("{email} is not among the addresses removed by bounces in the last "
                           "{days} days; nothing changed", email=key, days=KEEP_DAYS)
        suppression.remove(data, suppression.secret_of(settings), key, only=UNDONE_CAUSES)
        for kept in found.lines:
            service = services.get(kept.service)
            sub = kept.subscriber
            if service is None:
                continue
            if sub is None:
                missing.append(kept.service)
                continue
            target = service.subscribers_path
            if target.exists() and subs.find(target, key) is not None:
                already.append(kept.service)
                continue
            subs.add(target, sub.replace(failures=0), absent=True)
            due_summary.forget_due(data, service.name)  # the next run reads the file whole
            done.append(kept.service)
        if settle is not None:  # "already" too: a killed restore put those back
            settle(data, key, done + already)
        forget(data, key, moment)
    return Restored(key, done, already, missing)
