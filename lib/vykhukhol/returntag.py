"""The signed tag of a bounce address (docs/reference/transports.md#transports-envelope).

A list letter leaves with the envelope sender ``<local><sep><tag>@<domain>``.
The tag is 26 characters: the kind, a version digit, then 24 lower-case
base32 characters (15 bytes, so no padding) that say:

- the kind of letter: ``s`` a service's (series, reminder, confirmation) or
  ``n`` a newsletter's;
- which service or newsletter: 3 bytes of a plain hash of its name, so the
  reader only has to list the services' and jobs' names (never read a
  subscriber file) to find the candidates;
- which recipient: 12 bytes of HMAC-SHA256(secret, kind, name, lower-cased
  address). Without the secret nobody can make a tag for an address, and a
  changed character matches nobody. The reader recovers the address by
  computing the same HMAC over the one candidate service's (or job's)
  addresses — one file, read once for a whole batch of bounces.

A tag is not a secret: a person may report a bounce (or unsubscribe by
``mailto:``) for the letters they received, which is what docs/reference/security.md#security-strangers allows.

Made where a letter is composed (:mod:`vykhukhol.mail.compose`), read where
it comes back (:mod:`vykhukhol.bounces`), so it sits below both. Deliberately
not here: reading mailboxes, classifying messages, applying results.
"""

from __future__ import annotations

import base64
from _operator import _compare_digest as _equal  # hmac.compare_digest without OpenSSL's

from vykhukhol import tokens
from vykhukhol.records import NamedTuple

SERVICE = "s"
NEWSLETTER = "n"
KINDS = (SERVICE, NEWSLETTER)

NAME_BYTES = 3    # a name's id: collisions only widen the candidates, never confuse them
MAC_BYTES = 12    # 96 bits: no forgery by trial
TAG_LENGTH = 1 + 1 + (NAME_BYTES + MAC_BYTES) * 8 // 5  # kind, version digit, base32: 26
MAX_LOCAL_PART = 64  # RFC 5321 section 4.5.3.1.1
SEPARATORS = ("+", "-", "=", "")  # "" turns tagging off
_VERSION = "1"
_B32 = frozenset("abcdefghijklmnopqrstuvwxyz234567")


class Tag(NamedTuple):  # not a dataclass: a subscribe post need not import dataclasses
    """What a tag says before it is matched against an address."""

    kind: str       # SERVICE or NEWSLETTER
    name_id: bytes  # NAME_BYTES
    mac: bytes      # MAC_BYTES

    def names(self, candidates: list[str]) -> list[str]:
        """The names among ``candidates`` whose id this tag carries."""
        return [name for name in candidates if name_id(name) == self.name_id]

    def is_for(self, secret: bytes, name: str, address: str) -> bool:
        """True when this tag was made for ``address`` in ``name`` (constant time).
        The name's id is checked too, so a tag whose id was altered matches nobody
        even when a caller names the service directly."""
        same_name = _equal(name_id(name), self.name_id)
        return _equal(_mac(secret, self.kind, name, address), self.mac) and same_name


def _own_blake2s():
    """The interpreter's own BLAKE2s, or hashlib's where it was built without it:
    hashlib loads OpenSSL, about 3 ms of a subscribe post (tokens' SHA-256 likewise)."""
    try:
        from _blake2 import blake2s
    except ImportError:
        from hashlib import blake2s
    return blake2s


_blake2s = _own_blake2s()


def name_id(name: str) -> bytes:
    return _blake2s(name.encode("utf-8"), digest_size=NAME_BYTES).digest()


def _mac(secret: bytes, kind: str, name: str, address: str) -> bytes:
    message = "\n".join((kind, name, address.strip().lower())).encode("utf-8")
    return tokens.mac(secret, message)[:MAC_BYTES]  # hmac.new(secret, message, hashlib.sha256)


def make(secret: bytes, kind: str, name: str, address: str) -> str:
    """The tag for one letter to ``address`` from service or job ``name``."""
    if kind not in KINDS:
        raise ValueError(f"unknown tag kind {kind!r}")
    raw = name_id(name) + _mac(secret, kind, name, address)
    return kind + _VERSION + base64.b32encode(raw).decode("ascii").lower()


def parse(text: str) -> Tag | None:
    """The tag in ``text`` (case ignored), or None for anything that is not one."""
    text = text.strip().lower()
    if len(text) != TAG_LENGTH or text[0] not in KINDS or text[1] != _VERSION:
        return None
    body = text[2:]
    if not set(body) <= _B32:
        return None
    raw = base64.b32decode(body.upper())
    return Tag(text[0], raw[:NAME_BYTES], raw[NAME_BYTES:])


def bounce_address(base: str, separator: str, tag: str) -> str:
    """``base`` (local@domain) with ``tag`` after the separator in its local part.

    The base itself when tagging is off (empty separator) or when the tagged
    local part would pass RFC 5321's 64 characters."""
    local, _, domain = base.rpartition("@")
    if not separator or not local or len(local) + len(separator) + len(tag) > MAX_LOCAL_PART:
        return base
    return f"{local}{separator}{tag}@{domain}"


def split_address(address: str, separator: str) -> tuple[str, Tag] | None:
    """(the untagged base address, the tag) of a tagged bounce address, else None.

    The tag is the part after the *last* separator, so a base local part that
    itself contains the separator still works."""
    if not separator:
        return None
    local, at, domain = address.strip().strip("<>").rpartition("@")
    base_local, sep, text = local.rpartition(separator)
    if not at or not sep or not base_local:
        return None
    tag = parse(text)
    if tag is None:
        return None
    return f"{base_local}@{domain}", tag
