"""Every file that can name an address, and how each one names it: the one
list the own page's export and erase share (docs/using/own-page.md#own-page, docs/reference/security.md#security-erase).

An address is named only as a *whole* address, compared as everywhere else
(:func:`~vykhukhol.addresses.email_key`: the whole address, lower-cased):
``brien@example.org`` is not inside ``o'brien@example.org`` nor
``x&brien@example.org`` (``'`` and ``&`` are address characters), nor inside
a display name of somebody else's letter. A candidate is a run of the
characters an address is made of (RFC 5322 atext and dots, ``@``, a host
name), so quotes, angle brackets, tabs and spaces end it, and a sentence's
full stop after it is not part of it. Formats whose fields are joined by an
address character (``service|address`` in ``state/soft``) are read by their
fields, never searched.

Each :class:`Place` says which files it covers and, for one line, whom the
line is *about* (its subject: the recipient of a log line, the address of a
bounce line, the key of a state entry). Export takes the lines about the
address, with any other address in them masked; erase drops them. A line
about somebody else (or about nobody) that also names the address keeps its
place with the address replaced by its keyed hash (the suppression list's
``hmac:…``), so alice's erase leaves the record of why brien was removed.
The bounce reader's journal (``bounces/processed.txt``) is never cut: its
lines say which messages were done, so the address becomes its hash there.

Letters are whole files: an outbox letter is the address's when the
address is its recipient (its ``To``), a kept bounce when a bounces.log line
of its message id is about the address; a letter that merely contains the
text is never taken (a planted name must not pull a victim's letter, with
its signed links, into somebody else's export).

It does not cover the subscriber lines, running newsletters' ledgers and the
suppression list (their own modules read and change them: see
:mod:`vykhukhol.members.personal`), nor a run's journal, which lives only
while its run does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from vykhukhol import files
from vykhukhol.addresses import email_key
from vykhukhol.datadir import DataDir
from vykhukhol.members import removed

# A candidate address: RFC 5322 atext and dots, "@", a host name (ends alnum).
ADDRESS = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?")
MASK = "…@…"  # what an export shows instead of someone else's address (no words: any language)

OUTBOX_NAME = re.compile(r"\d{8}T\d{6}-\d{6}-(.+)\.eml")  # mail/outbox.py's file names
Change = Callable[[str], str]  # an address as found → what stands there instead


def addresses_in(text: str) -> list[str]:
    """The whole addresses a text names, as written, in order."""
    return ADDRESS.findall(text)


def _sub(text: str, change: Change) -> str:
    return ADDRESS.sub(lambda found: change(found.group(0)), text)


# --- the formats -------------------------------------------------------------------

class Format(NamedTuple):
    """How one kind of file names addresses: ``subject(line)`` is the key of
    the address a line is about (None: nobody in particular); ``rewrite(line,
    change)`` puts ``change(address)`` in place of every address in it."""

    subject: Callable[[str], str | None]
    rewrite: Callable[[str, Change], str]
    droppable: bool = True  # a line about the address may go (else it keeps its place)


def _field(index: int, sep: str = "\t") -> Callable[[str], str | None]:
    def subject(line: str) -> str | None:
        parts = line.split(sep)
        value = parts[index].strip() if len(parts) > index else ""
        return email_key(value) if "@" in value else None
    return subject


def _first_in_message(line: str) -> str | None:
    """run.log: time, lease, level, message; the line is about the first address
    its message names ("news: anna@… refused (550): <…>")."""
    found = addresses_in(line.split("\t", 3)[-1])
    return email_key(found[0]) if found else None


def _keyed(address_of: Callable[[str], tuple[str, str, str]]) -> Format:
    """A state file of ``key<TAB>value`` lines whose key holds the address
    between two parts joined by ``|`` (``address_of(key)`` → before, address,
    after); the value names nobody."""
    def subject(line: str) -> str | None:
        _, address, _ = address_of(line.partition("\t")[0])
        return email_key(address) if "@" in address else None

    def rewrite(line: str, change: Change) -> str:
        key, tab, value = line.partition("\t")
        before, address, after = address_of(key)
        return (before + change(address) + after + tab + value) if "@" in address else line

    return Format(subject, rewrite)


def _soft_key(key: str) -> tuple[str, str, str]:  # service|address
    service, bar, address = key.partition("|")
    return service + bar, address, ""


def _tempfail_key(key: str) -> tuple[str, str, str]:  # target|address|item
    target, bar, rest = key.partition("|")
    address, bar2, item = rest.rpartition("|")
    return target + bar, address, bar2 + item


def _journal_rewrite(line: str, change: Change) -> str:
    """processed.txt: ``batch<TAB>id<TAB>JSON``, ``before<TAB>id<TAB>service<TAB>JSON``;
    the JSON is rewritten as its writer writes it (ASCII, no spaces), so a
    reader finds it the same apart from the address."""
    head, tab, raw = line.rpartition("\t")
    if not tab or not raw.startswith(("{", "[")):
        return _sub(line, change)
    try:
        value = json.loads(raw)
    except ValueError:
        return _sub(line, change)

    def walk(item):
        if isinstance(item, str):
            return _sub(item, change)
        if isinstance(item, list):
            return [walk(x) for x in item]
        if isinstance(item, dict):
            return {walk(k): walk(v) for k, v in item.items()}
        return item

    return head + tab + json.dumps(walk(value), ensure_ascii=True, separators=(",", ":"))


TEXT_LOG = Format(_first_in_message, _sub)
BOUNCE_LOG = Format(_field(4), _sub)
UNSENT = Format(_field(1), _sub)
SOFT = _keyed(_soft_key)
TEMPFAIL = _keyed(_tempfail_key)
BOUNCE_JOURNAL = Format(lambda line: None, _journal_rewrite, droppable=False)
REMOVED = Format(_field(0), _sub)  # removed.txt: address, when, cause, source, words, service, line
MISSED = Format(_field(0), _sub)  # <job>.missed: a ledger's rows (address first) kept after its job


# --- the places --------------------------------------------------------------------

def _rotated(path: Path) -> list[Path]:
    """A log and its rotations (``run.log``, ``run.log.1`` …), those that exist."""
    if not path.parent.is_dir():
        return []
    return sorted(p for p in path.parent.iterdir() if p.is_file() and (
        p.name == path.name or re.fullmatch(re.escape(path.name) + r"\.\d+", p.name)))


def _one(path: Path) -> list[Path]:
    return [path] if path.is_file() else []


class Place(NamedTuple):
    """Line files of one format: ``paths(data)`` the files, ``part`` the key of
    the export they go under."""

    what: str
    paths: Callable[[DataDir], list[Path]]
    format: Format
    part: str


def places() -> list[Place]:
    """Every line file that can name an address. A new file that holds
    addresses is added here, and nowhere else, for export and erase alike."""
    return [
        Place("log/run.log", lambda d: _rotated(d.log / "run.log"), TEXT_LOG, "log_lines"),
        Place("log/pages.log", lambda d: _rotated(d.log / "pages.log"), TEXT_LOG, "log_lines"),
        Place("log/bounces.log", lambda d: _rotated(d.bounce_log), BOUNCE_LOG, "bounces"),
        Place("state/unsent-confirmations", lambda d: _one(d.state / "unsent-confirmations"),
              UNSENT, "log_lines"),
        Place("state/held-confirmations", lambda d: _one(d.state / "held-confirmations"),
              UNSENT, "log_lines"),
        Place("state/tempfail", lambda d: _one(d.state / "tempfail"), TEMPFAIL, "log_lines"),
        Place("state/soft", lambda d: _one(d.soft_counts), SOFT, "bounces"),
        Place("bounces/processed.txt", lambda d: _one(d.bounce_journal), BOUNCE_JOURNAL,
              "bounces"),
        # What a bounce deleted, kept for an undo: the export lists the address's own
        # lines structured (removed.find); a line of somebody else's that names it
        # keeps its place with the address hashed, as everywhere.
        Place("removed.txt", lambda d: _one(removed.path(d)), REMOVED, "removed_by_bounces"),
        # Who did not get a finished newsletter, and the server's reply (newsletters.missed).
        Place("newsletters/*.missed", _kept_missed, MISSED, "newsletter_rows"),
    ]


def _kept_missed(data: DataDir) -> list[Path]:
    folder = data.newsletters
    return sorted(folder.glob("*.missed")) if folder.is_dir() else []


class Found(NamedTuple):
    place: Place
    path: Path
    line: str
    about: bool  # the line is about the address (else it only names it)


def lines_naming(data: DataDir, email: str) -> Iterator[Found]:
    """Every line of every place that names the address as a whole address."""
    key = email_key(email)
    needle = key.encode("utf-8", "surrogateescape")
    for place in places():
        for path in place.paths(data):
            try:
                raw = path.read_bytes()
            except OSError:
                continue
            if needle not in raw.lower():  # most files: one search, no parse
                continue
            for line in files.read_lines(path):
                if key not in line.lower():
                    continue
                about = place.format.subject(line) == key
                if about or any(email_key(a) == key for a in _named(place.format, line)):
                    yield Found(place, path, line, about)


def _named(fmt: Format, line: str) -> list[str]:
    seen: list[str] = []

    def note(address: str) -> str:
        seen.append(address)
        return address

    fmt.rewrite(line, note)
    return seen


def masked(fmt: Format, line: str, email: str) -> str:
    """The line as an export shows it: the address itself, nobody else's."""
    key = email_key(email)
    return fmt.rewrite(line, lambda a: a if email_key(a) == key else MASK)


def scrub(data: DataDir, email: str, hashed: str) -> int:
    """The erase's part in the line files: lines about the address go (where
    the format allows), the address becomes ``hashed`` in every other line.
    One atomic rewrite per file under its record lock; returns how many files
    changed."""
    key = email_key(email)
    paths: dict[Path, Format] = {}
    for found in lines_naming(data, email):
        paths.setdefault(found.path, found.place.format)
    changed = 0
    for path, fmt in paths.items():
        changed += _scrub_file(path, fmt, key, hashed)
    return changed


def _scrub_file(path: Path, fmt: Format, key: str, hashed: str) -> bool:
    def change(address: str) -> str:
        return hashed if email_key(address) == key else address

    with files.record_lock(path):
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return False
        # Lines end where files.read_lines ends them (bytes.splitlines: \n, \r,
        # \r\n), never at a U+2028 a decoded string would also split at.
        out: list[bytes] = []
        for chunk in raw.splitlines(keepends=True):
            body = chunk.rstrip(b"\r\n")
            end = chunk[len(body):]
            line = body.decode("utf-8", "surrogateescape")
            if key not in line.lower():
                out.append(chunk)
            elif fmt.droppable and fmt.subject(line) == key:
                continue
            else:
                out.append(fmt.rewrite(line, change).encode("utf-8", "surrogateescape") + end)
        if out == raw.splitlines(keepends=True):
            return False
        files.atomic_write_bytes(path, out)
    return True


# --- letters ---------------------------------------------------------------------

def _recipients(path: Path) -> list[str]:
    """The addresses in a letter's To header (its recipient), read from the
    header block only."""
    from email.parser import BytesHeaderParser
    from email.utils import getaddresses

    try:
        with open(path, "rb") as handle:
            head = handle.read(65536).split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0]
    except OSError:
        return []
    headers = BytesHeaderParser().parsebytes(head + b"\n\n")
    return [address for _, address in getaddresses(headers.get_all("To", [])) if address]


def letters(data: DataDir, email: str) -> list[Path]:
    """The whole letters that are the address's: outbox letters to it alone,
    kept bounces a bounces.log line says are about it."""
    key = email_key(email)
    found: list[Path] = []
    # The outbox transport names a file after its recipient (made safe, cut to
    # 100): a file named for another is not read. One of another shape is.
    safe = re.sub(r"[^a-z0-9@._+-]", "_", key)[:100]
    if data.outbox.is_dir():
        for path in sorted(data.outbox.iterdir()):
            named_for = OUTBOX_NAME.fullmatch(path.name)
            if named_for is not None and named_for.group(1) != safe:
                continue
            if path.is_file() and path.suffix == ".eml":
                named = {email_key(a) for a in _recipients(path)}
                if named == {key}:
                    found.append(path)
    folder = data.kept_bounces
    if folder.is_dir():
        ids = set()
        for path in _rotated(data.bounce_log):
            for line in files.read_lines(path):
                parts = line.split("\t")
                if len(parts) == 7 and email_key(parts[4]) == key and parts[1] != "-":
                    ids.add(parts[1])
        if ids:
            found.extend(p for p in sorted(folder.iterdir()) if p.is_file() and p.suffix == ".eml"
                         and p.stem.rpartition("-")[2] in ids)
    return found


def masked_text(text: str, email: str) -> str:
    """A kept message as an export shows it: other people's addresses masked."""
    key = email_key(email)
    return _sub(text, lambda a: a if email_key(a) == key else MASK)
