"""The server's own words in a refusal, as the owner reads them.

:func:`final_answer` picks, from a diagnostic or the lines of a report
around an address, the words that decided: the last reply of a transcript
(the server's final answer, not the reporting system's own summary lines),
else the first line that says anything. :func:`clean` makes a piece of text
fit one bounces.log piece. Both are pure functions of their text; what a
refusal means is :mod:`.reasons`' work.
"""

from __future__ import annotations

import re

MAX_TEXT = 4000  # of a diagnostic or a report's lines read for the words
REPLY = re.compile(r"(?<![\d.])([245]\d\d)(?=[ -]|$)")
# "smtp; 550 …", "X-Notes; …": the Diagnostic-Code's type is not the server's word.
_DIAGNOSTIC_TYPE = re.compile(r"^(?:smtp|x-[\w.-]{1,40});\s*", re.IGNORECASE)


def final_answer(text: str) -> str:
    """The server's own words: the last reply in ``text`` (a transcript's
    final answer), else its first line that says anything; "" for none."""
    lines = [_DIAGNOSTIC_TYPE.sub("", " ".join(line.split()))
             for line in text[:MAX_TEXT].splitlines()]
    lines = [line for line in lines if line]
    # A transcript marks the server's replies "<<<"; the other lines are the
    # reporting system's own (sendmail's "421 … Deferred" summary).
    replies = [line[4:] for line in lines if line.startswith("<<< ") and REPLY.match(line[4:])] \
        or [line for line in lines if REPLY.match(line)]
    if replies:
        return replies[-1]
    return lines[0] if lines else ""


def clean(text: str, limit: int) -> str:
    """One line, no "; " (bounces.log's piece separator), at most ``limit`` characters."""
    text = " ".join(str(text).split()).replace("; ", ", ")
    return text if len(text) <= limit else text[:limit - 1] + "…"
