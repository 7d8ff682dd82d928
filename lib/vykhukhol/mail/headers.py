"""What may stand in a letter's header, and how it is written.

The policy every letter uses (SMTP line ends, 7-bit headers, list headers
written verbatim), the checks that keep user input out of header structure
(:func:`clean_header_text`, :func:`check_address`, list ids and links), and the
one-header writers the press uses. Nothing here builds a whole letter.
"""

from __future__ import annotations

import email.errors
import email.policy
import re
import unicodedata
from email.headerregistry import Address, HeaderRegistry, UnstructuredHeader

from vykhukhol.errors import BadInput

MAX_URL_LENGTH = 900  # a header line must stay under SMTP's 998 octets
_CRLF = b"\r\n"

class _VerbatimHeader(UnstructuredHeader):
    """A header written as it is, never folded nor RFC 2047-encoded.

    ``List-Unsubscribe: <https://…long URL…>`` longer than 78 characters would
    otherwise be turned into ``=?utf-8?q?…?=`` words by the email package,
    which no mail client reads as a link. Values are checked to be short
    printable ASCII before they get here; anything else falls back to the
    ordinary folding.
    """

    def fold(self, *, policy: email.policy.Policy) -> str:  # type: ignore[override]
        value = str(self)
        if value.isascii() and value.isprintable() and len(self.name) + len(value) < 990:
            return f"{self.name}: {value}{policy.linesep}"
        return super().fold(policy=policy)  # type: ignore[misc]


_headers = HeaderRegistry()
for _name in ("list-id", "list-unsubscribe", "list-unsubscribe-post", "x-vykhukhol-run"):
    _headers.map_to_type(_name, _VerbatimHeader)

#: The policy of every letter: SMTP line ends, 7-bit headers, verbatim list headers.
POLICY = email.policy.SMTP.clone(header_factory=_headers)
#: The same with Unix line ends, for piping to a local sendmail.
_LF_POLICY = POLICY.clone(linesep="\n")


_LOCAL_PART = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+")
_DOMAIN = re.compile(r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*")
_LIST_ID = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+")
_URL = re.compile(r"https?://[!#-;=?-~]+")  # printable ASCII without space, quote, < and >
_WHITE_SPACE = re.compile(r"\s")  # for str patterns, exactly the characters str.isspace() names


def clean_header_text(value: str) -> str:
    """``value`` fit for a header: control characters (CR, LF, tab, …) and line
    separators become spaces, runs of white space become one, ends are trimmed."""
    chars = [" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch for ch in str(value)]
    return " ".join("".join(chars).split())


def check_address(address: str, what: str = "address") -> str:
    """The address as it travels (an international domain in IDNA form).

    Raises :class:`BadInput` for anything that is not a plain ``local@domain``:
    white space, line breaks, brackets, quotes, a non-Latin local part (that
    would need SMTPUTF8, which this module does not speak).
    """
    text = address if isinstance(address, str) else ""
    if not text:
        raise BadInput(f"{what} is empty")
    if not text.isprintable() or _WHITE_SPACE.search(text):  # (a letter's hot path)
        raise BadInput(f"{what} {text!r} contains a space or a line break")
    local, at, domain = text.rpartition("@")
    if not at or not local or not domain or "@" in local:
        raise BadInput(f"{what} {text!r} is not of the form name@domain")
    if not domain.isascii():
        try:
            domain = domain.encode("idna").decode("ascii")
        except UnicodeError:
            raise BadInput(f"{what} {text!r} has a domain that cannot be written in IDNA") from None
    if not _LOCAL_PART.fullmatch(local):
        raise BadInput(
            f"{what} {text!r}: only Latin letters, digits and .!#$%&'*+/=?^_`{{|}}~- may precede @"
        )
    if not _DOMAIN.fullmatch(domain):
        raise BadInput(f"{what} {text!r} has an invalid domain")
    return f"{local}@{domain}"



def _fold(name: str, value: object) -> bytes:
    """One header exactly as the generator writes it for a message of POLICY."""
    stored = POLICY.header_store_parse(name, value)[1]
    return POLICY.fold_binary(name, stored)



def _verbatim(name: str, value: str) -> bytes:
    """A header of :class:`_VerbatimHeader` (value already checked)."""
    if "=?" in value:  # the package would decode what looks like an encoded word
        return _fold(name, value)
    return f"{name}: {value}".encode("ascii") + _CRLF


def _address(name: str, addr_spec: str) -> Address:
    try:
        return Address(display_name=clean_header_text(name or ""), addr_spec=addr_spec)
    except (ValueError, email.errors.HeaderParseError) as exc:  # the email package's refusal
        raise BadInput(f"cannot write the address {addr_spec!r} in a header: {exc}") from None


def _check_list_id(list_id: str) -> str:
    value = str(list_id).strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1]
    if not _LIST_ID.fullmatch(value) or len(value) > 255:
        raise BadInput(
            f"list id {list_id!r} must look like news.example.org (no spaces or brackets)"
        )
    return value


def _check_url(url: str) -> str:
    value = str(url)
    if not _URL.fullmatch(value) or len(value) > MAX_URL_LENGTH:
        raise BadInput(
            f"unsubscribe link {url!r} must be an http(s) URL of printable ASCII "
            f"without spaces, quotes or angle brackets, at most {MAX_URL_LENGTH} characters"
        )
    return value

