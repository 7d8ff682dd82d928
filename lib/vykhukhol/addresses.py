"""E-mail address and display-name checks shared by forms, CLI and imports.

email-validator has the last word on an address. Importing it compiles large
Unicode patterns (~30 ms), which every CGI process that reads an address would
pay; so a plain address — an ASCII dot-atom, ``@``, host-name labels and a
top-level domain of letters — is answered here, the way email-validator answers
it, and anything else is handed to it. tests/unit/test_addresses.py holds the
two to the same answers.
"""

from __future__ import annotations

import re
from functools import lru_cache

from vykhukhol.errors import BadInput

MAX_EMAIL = 254  # RFC 5321 path limit
MAX_NAME = 100   # a subscriber's name, at most 100 characters (docs/using/services.md#subscribers-file)
MAX_DOMAIN = 253  # RFC 1035, as email-validator counts it

_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"  # RFC 5322 atext
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"  # RFC 952/1123, at most 63
# Top-level domains that email-validator refuses as special-use (its
# SPECIAL_USE_DOMAIN_NAMES), and a few reserved ones it may refuse one day:
# addresses there are always left to it.
RESERVED_TLDS = frozenset({
    "arpa", "invalid", "local", "localhost", "onion", "test",
    "alt", "example", "home", "internal", "lan", "corp", "intranet", "private",
})


def check_email(address: str) -> str:
    """The address with its domain lower-cased, or BadInput saying why not."""
    address = (address or "").strip()
    if not address:
        raise BadInput("an e-mail address is required")
    if len(address) > MAX_EMAIL or any(ch in address for ch in "\r\n\t\0 "):
        raise BadInput("this e-mail address is not valid")
    if "=?" in address:  # legal, but mail software would decode it as an encoded word
        raise BadInput("this e-mail address is not valid: it contains '=?'")
    return plain_address(address) or validated_address(address)


def check_mailbox(address: str) -> str:
    """A sender, bounce or admin address set by the site owner: :func:`check_email`,
    and nothing a program's command line could read as an option or a file
    (``sendmail -f ADDRESS``): no ``/`` anywhere, no ``-`` or ``|`` first."""
    address = check_email(address)
    if "/" in address or address.startswith(("-", "|")):
        raise BadInput("this address may not contain / or start with - or | (it is given to "
                       "the mail program on its command line)")
    return address


@lru_cache(maxsize=1)
def _plain() -> re.Pattern:
    """The plain-address pattern, compiled on first use: a page that reads no
    address (the subscribe form, the cron URL) does not pay for it."""
    return re.compile(rf"({_ATOM}(?:\.{_ATOM})*)@((?:{_LABEL}\.)+([A-Za-z]{{2,63}}))")


def _plain_parts(address: str) -> tuple[str, str, str] | None:
    """(local part, domain, top-level domain) of a plain address within the
    lengths mail allows, else None."""
    match = _plain().fullmatch(address)
    if match is None or len(address) > MAX_EMAIL or len(match.group(2)) > MAX_DOMAIN:
        return None
    local, domain, tld = match.groups()
    return local, domain, tld


def plain_address(address: str) -> str | None:
    """``address`` with its domain lower-cased if it is plain enough to need no
    email-validator (which accepts every such address the same way), else None."""
    parts = _plain_parts(address)
    # "--" would need the IDNA checks (xn-- labels, R-LDH labels like ab--c).
    if parts is None or "--" in parts[1] or parts[2].lower() in RESERVED_TLDS:
        return None
    return f"{parts[0]}@{parts[1].lower()}"


def validated_address(address: str) -> str:
    """email-validator's verdict: the address with its domain lower-cased, or BadInput."""
    from email_validator import EmailNotValidError, validate_email

    if not address.rpartition("@")[0].isascii():
        # Ours, not the validator's English: the refusal speaks the page's language.
        raise BadInput("this e-mail address is not valid: it has letters other than Latin ones "
                       "before the @, which most mail servers cannot deliver to")
    try:
        result = validate_email(address, check_deliverability=False, allow_smtputf8=False)
    except EmailNotValidError as exc:
        # email-validator's own sentence stays as it wrote it (English).
        raise BadInput("this e-mail address is not valid: {reason}", reason=str(exc)) from None
    local, _, domain = address.rpartition("@")
    # Keep the local part as given (docs/reference/decisions.md#decisions) but the domain in the validator's lower-case form.
    return f"{local}@{(result.ascii_domain or result.domain).lower()}"


def email_key(address: str) -> str:
    """What makes two addresses the same subscriber: the whole address lower-cased."""
    return address.strip().lower()


def reserved_address(address: str) -> str | None:
    """``address`` (its domain lower-cased) when it is plain but in a domain kept
    for tests and local networks (``RESERVED_TLDS``: ``.invalid``, ``.test``,
    ``.local``…), which :func:`check_email` refuses, so no list holds one; else
    None. A bounce report naming such an address is still a report, and is read
    as one (docs/design/bounces.md#bounces-unread)."""
    parts = _plain_parts(address)
    if parts is None or parts[2].lower() not in RESERVED_TLDS:
        return None
    return f"{parts[0]}@{parts[1].lower()}"


def clean_name(name: str) -> str:
    """A display name: control characters (tabs, line breaks) removed, length capped."""
    text = name or ""
    if not text.isprintable():  # a character of Unicode's "Other" (or a separator) is in it
        import unicodedata  # only then: loading its tables costs a subscribe post 1 ms

        text = "".join(" " if unicodedata.category(ch)[0] == "C" else ch for ch in text)
    return " ".join(text.split())[:MAX_NAME]
