"""What a returned message must be before anything parses it
(docs/deliverability/bounces.md#returned-message: reading one message is bounded in time and size before it is parsed).

The e-mail package and the bounce detectors take time that grows with a
message's lines and with how deep its MIME parts nest (2 MB of empty lines
took 28-53 s, a part nested 400 deep 81 s). So :func:`refusal`
looks at the raw bytes first, with a few passes of C-speed searches and no
parsing, and names what is too much. The counts are upper bounds of what a
parser could build from the bytes (within a factor of two for a
``multipart/digest``, whose parts are messages without saying so):

- parts: every MIME part but the first begins at a line starting with
  ``--`` (a boundary), and a ``message/…`` part holds one more;
- a line: header fields are decoded in time that grows with the square of
  their length, so one long field (a line and the indented lines that
  continue it) is as bad as many lines; a message whose lines end in a
  bare CR (which the parser also splits on) is one long line here;
- nesting: every level of nesting is a ``Content-Type: multipart/…`` or
  ``message/…`` header, so there are at least as many of them as levels
  (counted wherever the parser would see one: after a bare CR too, and with
  its value folded over several lines).

A real bounce (a report, its status part and the returned letter) stays far
below every limit. A pure function of the bytes; which message stopped a
reader before is :mod:`vykhukhol.bounces.tries`' work.
"""

from __future__ import annotations

import re

# The limits, each in its unit; a message over any of them is refused unread.
MAX_BYTES = 500_000     # bytes of one message (a bounce with our letter attached stays far below)
MAX_LINES = 5_000       # lines of one message
MAX_FIELD = 16_000      # bytes of one line with the indented lines that continue it (RFC 5322: 998 a line)
MAX_PARTS = 200         # MIME parts of one message
MAX_NESTING = 20        # levels of MIME parts inside parts

_LINE_START = re.compile(rb"^(?![ \t])", re.MULTILINE)  # a line that continues none
_BOUNDARY_LINE = re.compile(rb"^--", re.MULTILINE)
# A Content-Type field at the start of a line (after LF, CRLF or a bare CR, all of
# which the parser ends lines at), its value folded over any number of lines.
_CONTAINER = re.compile(rb"(?:\A|(?<=[\r\n]))content-type[ \t]*:(?:[ \t]|\r\n?[ \t]|\n[ \t])*"
                        rb"\"?(multipart|message)/", re.IGNORECASE)


def refusal(raw: bytes) -> str | None:
    """Why ``raw`` must not be parsed (a sentence for bounces.log), or None."""
    size = len(raw)
    if size > MAX_BYTES:
        return f"too big: {size} bytes (at most {MAX_BYTES})"
    lines = raw.count(b"\n") + (not raw.endswith(b"\n"))
    if lines > MAX_LINES:
        return f"too many lines: {lines} (at most {MAX_LINES})"
    starts = [match.start() for match in _LINE_START.finditer(raw)] + [size]
    field = max(b - a for a, b in zip(starts, starts[1:], strict=False)) if len(starts) > 1 else size
    if field > MAX_FIELD:
        return f"a line (or header field) too long: {field} bytes (at most {MAX_FIELD})"
    containers = [match[1].lower() for match in _CONTAINER.finditer(raw)]
    if len(containers) > MAX_NESTING:
        return f"MIME parts nested too deep: up to {len(containers)} levels (at most {MAX_NESTING})"
    parts = 1 + containers.count(b"message") + sum(1 for _ in _BOUNDARY_LINE.finditer(raw))
    if parts > MAX_PARTS:
        return f"too many MIME parts: up to {parts} (at most {MAX_PARTS})"
    return None
