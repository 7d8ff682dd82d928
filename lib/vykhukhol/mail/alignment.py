"""DMARC alignment (RFC 7489 section 3.1): whether a signing (DKIM ``d=``) or
envelope (SPF) domain aligns with a letter's From domain.

The one rule both askers use, so they never say opposite things about the
same domains: the status pages' DKIM note (:func:`vykhukhol.mail.dkim.misaligned`,
always relaxed: they ask no DNS, so they cannot know the DMARC record's
``adkim``) and the doctor's DMARC check (:mod:`vykhukhol.mail.doctor.checks`,
strict when the record says ``adkim=s`` / ``aspf=s``).

Strict alignment wants the two names equal; relaxed wants one organisational
domain: the public suffix a name ends in, by the Public Suffix List, and the
one label before it (RFC 7489 section 3.2), so ``a.example.org`` and
``b.example.org`` align, while two strangers under ``co.uk``, ``me.uk`` or a
hosting suffix such as ``github.io`` do not, and neither does a public
suffix itself with anybody's domain. A name that is a public suffix (or
that the list cannot read) is its own organisational domain. Names are
compared as DNS compares them: without regard to case or a final dot, an
international name in the IDNA form it travels in
(:func:`vykhukhol.mail.headers.check_address`).

The list is read (about a tenth of a second) only when a relaxed question is
first asked, so a status page pays for it only when DKIM is on; importing
this module costs no more than :mod:`typing`, which its importers load
anyway. Deliberately not here: DNS look-ups (the doctor's :mod:`.lookup`),
DMARCbis's walk up the DNS tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vykhukhol.errors import MissingModule

if TYPE_CHECKING:
    from publicsuffixlist import PublicSuffixList

_suffixes: PublicSuffixList | None = None  # the list, read once a process


def normalised(domain: str) -> str:
    """``domain`` as DNS compares it: lower case, no final dot, IDNA (ASCII) form."""
    name = domain.strip().rstrip(".").lower()
    if not name.isascii():
        try:
            name = name.encode("idna").decode("ascii")
        except UnicodeError:
            pass  # not a name a letter can carry; compared as written
    return name


def domain_of(address: str) -> str:
    """The domain of an e-mail address (after its last ``@``), :func:`normalised`."""
    return normalised(address.rpartition("@")[2])


def public_suffixes() -> PublicSuffixList:
    """The Public Suffix List, read when first asked for."""
    global _suffixes
    if _suffixes is None:
        # A library, not a table of our own: the list has thousands of rules
        # (wildcards, exceptions, hosting suffixes like github.io), changes
        # every month, and a rule it lacks makes strangers look aligned; the
        # package ships it current and reads it by the list's own algorithm.
        try:
            from publicsuffixlist import PublicSuffixList
        except ImportError as exc:  # a host that vendored too little: one clear line
            raise MissingModule.of(exc) from None
        _suffixes = PublicSuffixList()
    return _suffixes


def organisational(domain: str) -> str:
    """The organisational domain of ``domain``: its public suffix and one
    label more; the name itself when it is a public suffix."""
    name = normalised(domain)
    return public_suffixes().privatesuffix(name) or name


def aligned(one: str, other: str, strict: bool = False) -> bool:
    """Whether two domains align for DMARC: the same name (``strict``) or the
    same organisational domain (relaxed). An empty one (signing off, no
    envelope) aligns with nothing."""
    one, other = normalised(one), normalised(other)
    if not one or not other:
        return False
    return one == other if strict else organisational(one) == organisational(other)
