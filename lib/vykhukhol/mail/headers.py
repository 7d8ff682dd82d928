"""What may stand in a letter's header, and how it is written.

The policy every letter uses (SMTP line ends, 7-bit headers, list headers
written verbatim), the checks of list ids and links, and the one-header
writers the press uses. Nothing here builds a whole letter. Names, subjects
and addresses are written by :mod:`.header_values` (re-exported here), which
needs no e-mail package; :data:`POLICY` never refolds what it writes
(``refold_source="none"``), so a letter parsed back and written again
(sendmail, dev_redirect) keeps those bytes.
"""

from __future__ import annotations

import email.policy
import re
from email.headerregistry import BaseHeader, HeaderRegistry, UnstructuredHeader

from vykhukhol.errors import BadInput
from vykhukhol.mail.header_values import (
    _CRLF,
    MAX_LINE,
    check_address,
    clean_header_text,
    encode_mailbox,
    encode_text,
    header_line,
)

__all__ = ["MAX_LINE", "MAX_URL_LENGTH", "POLICY", "_CRLF", "check_address", "clean_header_text",
           "encode_mailbox", "encode_text", "header_line"]

MAX_URL_LENGTH = 900  # a header line must stay under SMTP's 998 octets


class _VerbatimHeader(UnstructuredHeader, BaseHeader):
    """A header written as it is, never folded nor RFC 2047-encoded.

    ``List-Unsubscribe: <https://…long URL…>`` longer than 78 characters would
    otherwise be turned into ``=?utf-8?q?…?=`` words by the email package,
    which no mail client reads as a link. Values are checked to be short
    printable ASCII before they get here; anything else falls back to the
    ordinary folding. (The registry would add :class:`BaseHeader` after it
    anyway; naming it here gives the same order of bases, and a type.)
    """

    def fold(self, *, policy: email.policy.Policy) -> str:
        value = str(self)
        if value.isascii() and value.isprintable() and len(self.name) + len(value) < 990:
            return f"{self.name}: {value}{policy.linesep}"
        return super().fold(policy=policy)


_headers = HeaderRegistry()
for _name in ("list-id", "list-unsubscribe", "list-unsubscribe-post", "x-vykhukhol-run"):
    _headers.map_to_type(_name, _VerbatimHeader)

#: The policy of every letter: SMTP line ends, 7-bit headers, verbatim list headers;
#: a header read back from a letter is written out again as it was, never refolded
#: (refolding would decode our encoded words and write the text anew).
POLICY = email.policy.SMTP.clone(header_factory=_headers, refold_source="none")
#: The same with Unix line ends, for piping to a local sendmail.
_LF_POLICY = POLICY.clone(linesep="\n")


_LIST_ID = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+")
_URL = re.compile(r"https?://[!#-;=?-~]+")  # printable ASCII without space, quote, < and >



def _fold(name: str, value: object) -> bytes:
    """One header exactly as the generator writes it for a message of POLICY."""
    stored = POLICY.header_store_parse(name, value)[1]
    return POLICY.fold_binary(name, stored)



def _verbatim(name: str, value: str) -> bytes:
    """A header of :class:`_VerbatimHeader` (value already checked)."""
    if "=?" in value:  # the package would decode what looks like an encoded word
        return _fold(name, value)
    return f"{name}: {value}".encode("ascii") + _CRLF


def _check_list_id(list_id: str) -> str:
    value = str(list_id).strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1]
    if not _LIST_ID.fullmatch(value) or len(value) > 255 or "=?" in value:
        raise BadInput(
            f"list id {list_id!r} must look like news.example.org (no spaces or brackets)"
        )
    return value


def _check_url(url: str) -> str:
    value = str(url)
    # "=?" would be decoded as an encoded word by the e-mail package, line breaks and all
    if not _URL.fullmatch(value) or len(value) > MAX_URL_LENGTH or "=?" in value:
        raise BadInput(
            f"unsubscribe link {url!r} must be an http(s) URL of printable ASCII "
            f"without spaces, quotes, angle brackets or '=?', at most {MAX_URL_LENGTH} characters"
        )
    return value

