"""What a name, a subject or an address becomes in a letter's header, written
without the e-mail package.

Names and subjects are written here, not by the e-mail package: before the
CVE-2024-6923 fix (3.10.15, 3.11.10, 3.12.5, 3.13.0) the package decoded an
``=?utf-8?q?=0D=0A…?=`` typed by a subscriber and wrote the line break it
found into the header. :func:`encode_text` and :func:`encode_mailbox` give a
value that is either plain ASCII words no reader decodes, or utf-8 encoded
words holding every character of the text, folded here into lines of at most
78 characters. :func:`clean_header_text` and :func:`check_address` keep user
input out of a header's structure.

Apart from :mod:`.headers` (the policy, which imports the e-mail package) so
that the confirmation request a subscribe post writes (:mod:`.quick_letter`)
needs none of it.
"""

from __future__ import annotations

import base64
import functools
import re

from vykhukhol.errors import BadInput

_CRLF = b"\r\n"
_LOCAL_PART = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+")
_DOMAIN = re.compile(r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*")
_WHITE_SPACE = re.compile(r"\s")  # for str patterns, exactly the characters str.isspace() names


def clean_header_text(value: str) -> str:
    """``value`` fit for a header: control characters (CR, LF, tab, …) and line
    separators become spaces, runs of white space become one, ends are trimmed.
    (A printable text holds none of them: Unicode's tables are read only for
    one that is not, as loading them costs a subscribe post 1 ms.)"""
    text = str(value)
    if not text.isprintable():
        import unicodedata

        text = "".join(" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch
                       for ch in text)
    return " ".join(text.split())


def check_address(address: str, what: str = "address") -> str:
    """The address as it travels (an international domain in IDNA form).

    Raises :class:`BadInput` for anything that is not a plain ``local@domain``:
    white space, line breaks, brackets, quotes, a non-Latin local part (that
    would need SMTPUTF8, which this module does not speak).
    """
    text = address if isinstance(address, str) else ""
    if not text:
        raise BadInput("{what} is empty", what=what)
    return _checked(text, what)


@functools.lru_cache(maxsize=256)  # five checks a letter, of two addresses
def _checked(text: str, what: str) -> str:
    """:func:`check_address` of a text (a refusal raises, and is not kept)."""
    if not text.isprintable() or _WHITE_SPACE.search(text):  # (a letter's hot path)
        raise BadInput("{what} {text} contains a space or a line break", what=what, text=repr(text))
    if "=?" in text:  # the e-mail package would decode it as an encoded word
        raise BadInput("{what} {text} contains '=?'", what=what, text=repr(text))
    local, at, domain = text.rpartition("@")
    if not at or not local or not domain or "@" in local:
        raise BadInput("{what} {text} is not of the form name@domain", what=what, text=repr(text))
    if not domain.isascii():
        try:
            domain = domain.encode("idna").decode("ascii")
        except UnicodeError:
            raise BadInput("{what} {text} has a domain that cannot be written in IDNA", what=what,
                           text=repr(text)) from None
    if not _LOCAL_PART.fullmatch(local):
        raise BadInput("{what} {text}: only Latin letters, digits and .!#$%&'*+/=?^_`{{|}}~- may "
                       "precede @", what=what, text=repr(text))
    if not _DOMAIN.fullmatch(domain):
        raise BadInput("{what} {text} has an invalid domain", what=what, text=repr(text))
    return f"{local}@{domain}"


# --------------------------------------------------------------------------- names and subjects

MAX_LINE = 78  # a header line we write is at most this long (RFC 5322's SHOULD)
_MAX_WORD = 75  # RFC 2047: an encoded word is at most 75 characters
_EW_OVERHEAD = len("=?utf-8?q??=")
_FOLD = "\r\n "
# Words that stand in a display name as they are: atext without "=" and "?",
# so nothing in them can start an encoded word.
_PLAIN_PHRASE = re.compile(r"[A-Za-z0-9!#$%&'*+/^_`{|}~-]+(?: [A-Za-z0-9!#$%&'*+/^_`{|}~-]+)*")
# Bytes that stand for themselves in a "Q" encoded word anywhere (RFC 2047 5(3)).
_Q_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!*+-/")
_Q_BYTE = [chr(b) if b in _Q_SAFE else "_" if b == 0x20 else f"={b:02X}" for b in range(256)]


def encode_text(header: str, text: str) -> str:
    """The value of an unstructured header (``Subject``) holding ``text``
    cleaned by :func:`clean_header_text`, folded for a header named ``header``.

    ASCII words without ``=?`` stay as they are (folded between words);
    anything else becomes utf-8 encoded words that together hold exactly the
    cleaned text, so no reader can find a header or an encoded word of the
    sender's making in it.
    """
    text = clean_header_text(text)
    if not text:
        return ""
    words = text.split(" ")
    if text.isascii() and "=?" not in text and _fits(header, words):
        return _folded(header, words)
    return _folded(header, _encoded_words(text, _first_room(header)))


def encode_mailbox(header: str, display_name: str, address: str) -> str:
    """The value of an address header (``From``, ``To``): ``address`` (already
    checked by :func:`check_address`) with ``display_name`` cleaned and written
    as plain words, a quoted string, or utf-8 encoded words."""
    name = clean_header_text(display_name or "")
    if not name:
        return address
    words = name.split(" ")
    quoted = ['"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"']
    if _PLAIN_PHRASE.fullmatch(name) and _fits(header, words):
        phrase = words
    elif name.isascii() and "=?" not in name and _fits(header, quoted):
        phrase = quoted
    else:
        phrase = _encoded_words(name, _first_room(header))
    return _folded(header, [*phrase, f"<{address}>"])


def _first_room(header: str) -> int:
    return MAX_LINE - len(header) - 2  # after "Header: "


def _fits(header: str, words: list[str]) -> bool:
    """Whether ``words`` folded between them keep every line within :data:`MAX_LINE`."""
    return len(words[0]) <= _first_room(header) and all(len(w) < MAX_LINE for w in words)


def _encoded_words(text: str, first: int) -> list[str]:
    """``text`` as utf-8 encoded words of whole characters, the first at most
    ``first`` characters long and the others at most 75: "Q" unless "B" is
    shorter, as the e-mail package chooses. Readers join adjacent encoded
    words without the white space between them (RFC 2047 6.2)."""
    data = text.encode("utf-8")
    b_form = (len(data) + 2) // 3 * 4 < sum(len(_Q_BYTE[b]) for b in data)
    kind = "b" if b_form else "q"
    words: list[str] = []
    chunk, q_size = b"", 0
    room = max(first, 2 * _EW_OVERHEAD) - _EW_OVERHEAD
    for ch in text:
        piece = ch.encode("utf-8")
        piece_q = sum(len(_Q_BYTE[b]) for b in piece)
        size = (len(chunk) + len(piece) + 2) // 3 * 4 if b_form else q_size + piece_q
        if size > room and chunk:
            words.append(_encoded_word(kind, chunk))
            chunk, q_size, room = piece, piece_q, _MAX_WORD - _EW_OVERHEAD
        else:
            chunk, q_size = chunk + piece, q_size + piece_q
    words.append(_encoded_word(kind, chunk))
    return words


def _q(data: bytes) -> str:
    return "".join(_Q_BYTE[b] for b in data)


def _encoded_word(kind: str, data: bytes) -> str:
    encoded = base64.b64encode(data).decode("ascii") if kind == "b" else _q(data)
    return f"=?utf-8?{kind}?{encoded}?="


def _folded(header: str, tokens: list[str]) -> str:
    """``tokens`` joined by single spaces, a line break before each token
    that would take a line past :data:`MAX_LINE` (never before the first)."""
    out = [tokens[0]]
    length = len(header) + 2 + len(tokens[0])
    for token in tokens[1:]:
        if length + 1 + len(token) > MAX_LINE:
            out.append(_FOLD)
            length = 1 + len(token)
        else:
            out.append(" ")
            length += 1 + len(token)
        out.append(token)
    return "".join(out)


def header_line(header: str, value: str) -> bytes:
    """One header as the generator writes a value made by :func:`encode_text`
    or :func:`encode_mailbox` (the press's bytes)."""
    return f"{header}: {value}".encode("ascii") + _CRLF
