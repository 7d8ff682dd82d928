"""The words and codes of a server's diagnostic, matched as Sisimai's tables
say: the enhanced status code and the reply code found in a text, and the
patterns of each reason name (vetoes, pieces, pieces in order). Pure
functions over text; :mod:`.reasons` decides with them, :mod:`.evidence`
weighs the codes against the words."""

from __future__ import annotations

import re

from vykhukhol.bounces.reading import patterns

CONTINUED = re.compile(r"(?<=\s)[245]\d\d-(?:[245]\.\d{1,3}\.\d{1,3}\s)?")
# An enhanced status code, not a piece of an IPv4 address ("[4.79.181.168]").
STATUS = re.compile(r"(?<![\w.])([245])\.(\d{1,3})\.(\d{1,3})(?!\w|\.\d)")
REPLY = re.compile(r"(?<![\d.])([245]\d\d)(?=[ -]|$)")
MAX_TEXT = 4000  # a diagnostic is a line or two; the rest of a long text says nothing more

# The kinds of rule that decide a reading, most specific first.
BY_PROVIDER, BY_STATUS, BY_REPLY, BY_PHRASE, BY_COMMAND, BY_NONE = (
    "provider", "status", "reply", "phrase", "command", "none")


def included(name: str, text: str) -> bool:
    return bool(match(name, text))


def match(name: str, text: str) -> str:
    """The pattern of reason ``name`` that ``text`` holds ("" when none, or vetoed)."""
    if any(piece in text for piece in patterns.ISNOT.get(name, ())):
        return ""
    for piece in patterns.INDEX.get(name, ()):
        if piece in text:
            return piece
    for pieces in patterns.PAIRS.get(name, ()):
        if aligned(text, pieces):
            return " … ".join(pieces)
    return ""


def aligned(text: str, pieces: tuple[str, ...]) -> bool:
    """Every piece in ``text``, each after the one before (Sisimai's ``Aligned``)."""
    at = 0
    for piece in pieces:
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True
