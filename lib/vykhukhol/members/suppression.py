"""The suppression list (docs/deliverability/suppression.md#suppression-list): addresses Vykhukhol must never write to again.

``data/suppressed.txt`` is one entry a line, tab-separated, a ``#`` header
first: the address (lower-cased, as :func:`~vykhukhol.addresses.email_key`
makes it), when (UTC, ISO 8601), why (:class:`Why`) and from where (free
text: ``imap``, ``pipe``, ``ses``, ``admin``, ``cli``…). An address has a
line for each reason it stands for (a complaint after a bounce adds one), so a
restore that undoes the bounce sees the complaint. An erased address
(a subscriber's right to erasure, docs/reference/security.md#security-erase) stays only as its keyed hash —
``hmac:`` and the hex HMAC-SHA256 of the address under ``security.secret`` —
so an unsubscribe is still honoured and a later import cannot bring it back,
while the file no longer names anyone. (A new secret makes those hashes
match nobody: docs/reference/security.md#security-erase says so.)

It is the one list a list manager must never lose, so it is written like
every other data file: an entry is appended under the file's record lock
(one ``write``, fsynced), and a removal is one atomic rewrite. A line that
does not parse is kept as it is by every rewrite and matches nothing.

Looking one address up reads the file's bytes and searches them (no
parsing): a subscribe answer pays one read and two searches of the file
(~17 ms of CPU at 100,000 entries on a loaded machine: docs/performance.md#performance-table).
A batch (an import, a newsletter's gate) reads the file once into a set.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable, Iterator
from datetime import datetime

from vykhukhol import files, tokens
from vykhukhol.addresses import email_key
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.files import events
from vykhukhol.records import NamedTuple
from vykhukhol.timeutil import format_time, parse_time

TYPE_CHECKING = False  # typing is not imported: a subscribe post pays for every import
if TYPE_CHECKING:
    import mmap

FILE_NAME = "suppressed.txt"
FIELDS = ("address", "when", "why", "from")
HEADER = "#" + "\t".join(FIELDS)
HASHED = "hmac:"  # an erased address: its keyed hash, never the address


class Why(str, enum.Enum):
    """Why an address is suppressed; the value is what the file holds."""

    GONE = "address gone"            # a bounce said the address does not exist
    BOUNCES = "soft bounces"         # bounce_limit soft failures of different letters
    COMPLAINT = "complaint"          # a spam complaint (feedback loop, provider report)
    ADMIN = "admin"                  # the owner put it there
    ERASED = "erased"                # the subscriber asked for erasure
    UNSUBSCRIBED = "unsubscribed"    # they left, in the tool an import came from
    BLOCKLISTED = "blocklisted"      # the tool an import came from would not write to them

    def label(self, lang: str) -> str:
        from vykhukhol.i18n import tr

        return tr(lang, _LABELS[self])


def label(why: str, lang: str) -> str:
    """What a reason in the file says to a person: its label, or the text as
    it stands when it is none of :class:`Why` (written by hand)."""
    try:
        return Why(why).label(lang)
    except ValueError:
        return why


def _(text: str) -> str:  # marks a text for the catalog (tools/i18n.py extract)
    return text


_LABELS = {Why.GONE: _("the address does not exist"), Why.BOUNCES: _("repeated soft bounces"),
           Why.COMPLAINT: _("spam complaint"), Why.ADMIN: _("added by the admin"),
           Why.ERASED: _("erased at the subscriber's request"),
           Why.UNSUBSCRIBED: _("unsubscribed in the tool the list came from"),
           Why.BLOCKLISTED: _("blocklisted in the tool the list came from")}


# What the admin and the CLI are told when they add a suppressed address to a service.
REFUSAL = _("{email} is on the suppression list, so it is not added; nothing changed (if they "
            "asked to be written to again, take it off the list first: Suppressed, or "
            "`vykhukhol suppress remove`)")


class Entry(NamedTuple):
    address: str            # lower-cased address, or HASHED + hex for an erased one
    when: datetime | None
    why: str                # a Why value (kept as text: a hand-edited reason survives)
    source: str

    @property
    def erased(self) -> bool:
        return self.address.startswith(HASHED)

    def to_line(self) -> str:
        return "\t".join(" ".join(str(v).split()) or "-" for v in (
            self.address, format_time(self.when), self.why, self.source))


def path(data: DataDir):
    return data.root / FILE_NAME


def hashed(secret: bytes, email: str) -> str:
    """The entry an erased address leaves: its keyed hash, never the address."""
    # tokens' HMAC-SHA256, as hmac's: hmac and hashlib would load OpenSSL on a subscribe post
    return HASHED + tokens.mac(secret, b"suppressed\0" + email_key(email).encode()).hex()


def _parse(line: str) -> Entry | None:
    parts = line.split("\t")
    if not line or line.startswith("#") or len(parts) < 3 or not parts[0]:
        return None
    try:
        when = parse_time(parts[1])
    except BadInput:  # a hand-edited time: the entry still suppresses
        when = None
    return Entry(parts[0].strip().lower(), when, parts[2], parts[3] if len(parts) > 3 else "-")


def entries(data: DataDir) -> Iterator[Entry]:
    """Every entry, in the file's order (lines that do not parse are skipped)."""
    for line in files.read_lines(path(data)):
        entry = _parse(line)
        if entry is not None:
            yield entry


def _needles(secret: bytes, email: str) -> tuple[bytes, bytes]:
    return (email_key(email).encode("utf-8", "surrogateescape") + b"\t",
            hashed(secret, email).encode() + b"\t")


def _holds(raw: mmap.mmap, needle: bytes) -> bool:
    """``needle`` at the start of a line of ``raw``."""
    at = raw.find(needle)
    while at != -1:
        if at == 0 or raw[at - 1:at] == b"\n":
            return True
        at = raw.find(needle, at + 1)
    return False


def is_suppressed(data: DataDir, secret: bytes, email: str) -> bool:
    """Is this address (or its erased hash) on the list? A search of the bytes."""
    import mmap  # searched where it lies: no copy of a 6 MB list into memory

    try:
        with open(path(data), "rb") as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                return False
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as raw:
                plain, keyed = _needles(secret, email)
                return _holds(raw, plain) or _holds(raw, keyed)
    except FileNotFoundError:
        return False


def secret_of(settings) -> bytes:
    """The key of erased entries' hashes; empty (they then match nobody) on a
    site without a secret, where nothing can be signed anyway."""
    return (settings["security.secret"] or "").encode()


def blocked(data: DataDir, settings, email: str) -> bool:
    """:func:`is_suppressed` with the site's settings (one address, one reading)."""
    return is_suppressed(data, secret_of(settings), email)


class Checker:
    """Many lookups against one reading of the file (imports, a newsletter batch).
    Only each line's first field is read: 100,000 entries load in a blink."""

    def __init__(self, data: DataDir, secret: bytes) -> None:
        self.secret = secret
        self.keys = set()
        for line in files.read_lines(path(data)):
            # the same lines as _parse takes: not a comment, at least three fields
            if line and not line.startswith("#") and line.count("\t") >= 2:
                first = line.partition("\t")[0].strip().lower()
                if first:
                    self.keys.add(first)
        self._erased = any(key.startswith(HASHED) for key in self.keys)

    def __contains__(self, email: object) -> bool:
        # Every letter of a run asks: the keyed hash only when there are erased entries.
        return isinstance(email, str) and (email_key(email) in self.keys or (
            self._erased and hashed(self.secret, email) in self.keys))


def _ends_a_line(target) -> bool:
    with open(target, "rb") as handle:
        handle.seek(0, 2)
        if handle.tell() == 0:
            return True
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"


def add(data: DataDir, secret: bytes, email: str, why: Why, source: str,
        moment: datetime) -> bool:
    """Suppress an address; False if it was already (for whatever reason:
    a new reason is still written, :func:`add_many`). The webhooks hear of a
    new one (not of an erasure: that address must not be told anywhere)."""
    if add_many(data, secret, [email], why, source, moment) != 1:
        return False
    if why is not Why.ERASED:
        events.emit_quietly(data.root, "suppression.added",
                            {"email": email_key(email), "reason": why.value, "source": source})
    return True


def _reasons(data: DataDir) -> set[tuple[str, str]]:
    """(address, why) of every entry: the reasons each address stands for."""
    return {(entry.address, entry.why) for entry in entries(data)}


def add_many(data: DataDir, secret: bytes, emails: Iterable[str], why: Why, source: str,
             moment: datetime, times: dict[str, datetime] | None = None) -> int:
    """Suppress several addresses at once; returns how many were new. Each line
    is dated ``moment``, or its address's time in ``times`` (by
    :func:`email_key`: an import keeps when the other tool saw them leave). Every
    reason is kept: an address suppressed already gets a line for a reason it
    did not stand for yet (a complaint after a bounce), so undoing one reason
    (:func:`remove` with ``only``) leaves the others standing. An erased
    address gets no other line: the file must not name it again."""
    target = path(data)
    with files.record_lock(target):
        known = Checker(data, secret)
        reasons = _reasons(data)
        new: list[str] = []
        added = 0
        for email in emails:
            key = email_key(email)
            if not key:
                continue
            before = key in known
            if why is Why.ERASED:
                if before:
                    continue
                address = hashed(secret, key)
            elif known._erased and hashed(secret, key) in known.keys:
                continue
            else:
                address = key
            if (address, why.value) in reasons:
                continue
            reasons.add((address, why.value))
            known.keys.add(key)
            added += not before
            new.append(Entry(address, (times or {}).get(key, moment), why.value, source).to_line())
        if new:
            if not target.exists():
                files.atomic_write(target, HEADER + "\n")
            elif not _ends_a_line(target):  # a hand edit without a final line end
                new.insert(0, "")
            files.append_line(target, "\n".join(new))
    return added


def remove(data: DataDir, secret: bytes, email: str, only: Iterable[str] | None = None) -> bool:
    """Take an address off the list (the admin's decision); False if it was not on it.
    With ``only`` (Why values), just its entries for those reasons (a restore
    undoes a bounce's entry, never a complaint's). An erased address's hash is
    never removed this way: it would need the address."""
    target = path(data)
    key, keyed = email_key(email), hashed(secret, email)
    reasons = None if only is None else set(only)
    with files.record_lock(target):
        lines = list(files.read_lines(target))
        kept = [line for line in lines
                if (entry := _parse(line)) is None or entry.address not in (key, keyed)
                or entry.why == Why.ERASED.value
                or (reasons is not None and entry.why not in reasons)]
        if len(kept) == len(lines):
            return False
        files.atomic_write(target, (line + "\n" for line in kept))
    return True


def erase(data: DataDir, secret: bytes, email: str, moment: datetime) -> None:
    """The address's own entries replaced by its keyed hash (docs/reference/security.md#security-erase):
    the file no longer names it, and it stays suppressed."""
    target = path(data)
    key, keyed = email_key(email), hashed(secret, email)
    with files.record_lock(target):
        lines = list(files.read_lines(target)) or [HEADER]
        kept = [line for line in lines if (entry := _parse(line)) is None
                or entry.address not in (key, keyed)]
        kept.append(Entry(keyed, moment, Why.ERASED.value, "subscriber").to_line())
        files.atomic_write(target, (line + "\n" for line in kept))


# --- what the admin page and `vykhukhol suppress` do with the list ----------------

class Page(NamedTuple):
    entries: list[Entry]   # this page's entries, newest first
    total: int             # entries that match the search
    page: int
    pages: int


def search(data: DataDir, query: str = "", page: int = 1, size: int = 50) -> Page:
    """One page of the entries whose address (or reason, or source) holds
    ``query``, newest first. Only the page's lines are parsed: 100,000
    entries cost one reading of the file."""
    needle = query.strip().lower()
    found = [line for line in files.read_lines(path(data))
             if line and not line.startswith("#") and line.count("\t") >= 2
             and (not needle or needle in line.lower())]
    pages = max(1, (len(found) + size - 1) // size)
    page = min(max(1, page), pages)
    end = len(found) - (page - 1) * size
    shown = [entry for line in reversed(found[max(0, end - size):end])
             if (entry := _parse(line)) is not None]
    return Page(shown, len(found), page, pages)


def write_csv(data: DataDir, out, progress=None, dialect: str = "comma") -> int:
    """The list as CSV (the project's export: byte order mark, defused cells):
    address, when, why, from. An erased address's hash names nobody and is of
    no use elsewhere, so it is left out (the file itself keeps it)."""
    from vykhukhol.members.export import write_table

    def rows():
        for line in files.read_lines(path(data)):
            # the lines _parse takes, their cells as written (no time parsed and made again)
            cells = line.split("\t")[:len(FIELDS)]
            address = cells[0].strip().lower()
            if line.startswith("#") or len(cells) < 3 or not address or address.startswith(HASHED):
                continue
            yield [address, *cells[1:]] + ["-"] * (len(FIELDS) - len(cells))

    return write_table(out, FIELDS, rows(), progress, dialect)
