"""DMARC alignment (RFC 7489 section 3.1): whether a signing (DKIM ``d=``) or
envelope (SPF) domain aligns with a letter's From domain.

The one rule both askers use, so they never say opposite things about the
same domains: the status pages' DKIM note (:func:`vykhukhol.mail.dkim.misaligned`,
always relaxed: they ask no DNS, so they cannot know the DMARC record's
``adkim``) and the doctor's DMARC check (:mod:`vykhukhol.mail.doctor.checks`,
strict when the record says ``adkim=s`` / ``aspf=s``).

Strict alignment wants the two names equal; relaxed wants one organisational
domain, found by a simple rule instead of the public suffix list: the last
two labels of the name, three under a few well-known two-label suffixes such
as ``co.uk`` or ``msk.ru`` (so ``a.example.org`` and ``b.example.org`` align,
``example.org`` and ``org`` do not). A rare suffix it does not know makes two
strangers under it look aligned: the rule errs towards "aligned"; README
section 17 ("Reputation") says so. Names are compared as DNS compares them:
without regard to case or a final dot, an international name in the IDNA
form it travels in (:func:`vykhukhol.mail.headers.check_address`).

A leaf: it imports nothing at its top, so a status page pays nothing more for
it than a few lines. Deliberately not here: the public suffix list itself (a
file to ship and keep current), DNS look-ups (the doctor's :mod:`.lookup`).
"""

from __future__ import annotations

#: Public suffixes of two labels common among this project's users (the rule above).
TWO_LABEL_SUFFIXES = frozenset({
    "co.uk", "org.uk", "ac.uk", "gov.uk", "com.au", "net.au", "org.au", "co.jp", "co.nz",
    "com.br", "com.tr", "com.ua", "org.ua", "com.ru", "net.ru", "org.ru", "msk.ru", "spb.ru",
    "com.cn", "co.il", "co.in", "co.za"})


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


def organisational(domain: str) -> str:
    """The organisational domain of ``domain`` by the rule of the module's docstring."""
    labels = normalised(domain).split(".")
    keep = 3 if ".".join(labels[-2:]) in TWO_LABEL_SUFFIXES else 2
    return ".".join(labels[-keep:])


def aligned(one: str, other: str, strict: bool = False) -> bool:
    """Whether two domains align for DMARC: the same name (``strict``) or the
    same organisational domain (relaxed). An empty one (signing off, no
    envelope) aligns with nothing."""
    one, other = normalised(one), normalised(other)
    if not one or not other:
        return False
    return one == other if strict else organisational(one) == organisational(other)
