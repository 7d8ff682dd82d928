"""One plain-text letter written as bytes without the e-mail package.

The confirmation request a subscribe post writes to the outbox after its
answer would otherwise import ``email.message``, ``email.policy`` and
``email.utils`` (and, through them, socket, calendar and locale): about half
of that process's work. :func:`letter` writes what
:func:`.message.build_message` writes for a letter without an HTML part,
list headers or a tag, byte for byte (tests/unit/test_quick_letter.py holds
the two together over generated and hostile names, subjects and texts), with
the same writers of names and subjects (:mod:`.header_values`). Whatever the
e-mail package would fold by its own rules (a ``Message-ID`` or run id too
long for one line) it leaves to that package: :func:`letter` returns None.
"""

from __future__ import annotations

import os
import re
import time
from datetime import datetime, timezone

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

_TEXT_PART = (b'Content-Type: text/plain; charset="utf-8"\r\n'
              b"Content-Transfer-Encoding: quoted-printable\r\n"
              b"MIME-Version: 1.0\r\n")
_DOT_ATOM = re.compile(r"[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*@[A-Za-z0-9.-]+")
_PLAIN_RUN = re.compile(r"[A-Za-z0-9_.+-]+")
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# Quoted-printable as the e-mail package writes a body: these bytes stand for
# themselves, every other is =XX (RFC 2045 6.7).
_QP_SAFE = frozenset(b" !\"#$%&'()*+,-./0123456789:;<>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`"
                     b"abcdefghijklmnopqrstuvwxyz{|}~\t")
_QP = [chr(b) if b in _QP_SAFE else f"={b:02X}" for b in range(256)]


def letter(*, from_name: str, from_email: str, to_email: str, to_name: str, subject: str,
           text: str, run_id: str, date: datetime | None = None,
           message_id: str | None = None) -> bytes | None:
    """``build_message(...).as_bytes(policy=POLICY)`` of a plain-text letter
    with these fields and nothing else, or None when a header would be folded
    by the e-mail package's rules. Raises what ``build_message`` raises."""
    sender = check_address(from_email, "sender address")
    recipient = check_address(to_email, "recipient address")
    run = clean_header_text(run_id)
    if not run:
        raise BadInput("the run id of a letter is empty")
    moment = date if date is not None else datetime.now(timezone.utc).replace(microsecond=0)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    ident = message_id or made_message_id(sender.rpartition("@")[2])
    ident_line = f"Message-ID: {ident}"
    run_line = f"X-Vykhukhol-Run: {run}"
    if len(ident_line) > MAX_LINE or not (ident[0] == "<" and ident[-1] == ">"
                                          and _DOT_ATOM.fullmatch(ident[1:-1])) \
            or len(run_line) > MAX_LINE or not _PLAIN_RUN.fullmatch(run):
        return None
    return b"".join([
        header_line("From", encode_mailbox("From", from_name, sender)),
        header_line("To", encode_mailbox("To", to_name, recipient)),
        header_line("Subject", encode_text("Subject", subject)),
        f"Date: {date_value(moment)}".encode("ascii") + _CRLF,
        ident_line.encode("ascii") + _CRLF,
        run_line.encode("ascii") + _CRLF,
        _TEXT_PART, _CRLF, body(str(text))])


def date_value(moment: datetime) -> str:
    """``email.utils.format_datetime(moment)`` of an aware moment (RFC 5322 3.3)."""
    return (f"{_DAYS[moment.weekday()]}, {moment.day:02d} {_MONTHS[moment.month - 1]} "
            f"{moment.year:04d} {moment.hour:02d}:{moment.minute:02d}:{moment.second:02d} "
            f"{moment.strftime('%z')}")


def made_message_id(domain: str) -> str:
    """A new ``Message-ID`` value as ``email.utils.make_msgid(domain=domain)``
    makes one: hundredths of a second, the process, 64 random bits."""
    random = int.from_bytes(os.urandom(8), "big")
    return f"<{int(time.time() * 100)}.{os.getpid()}.{random}@{domain}>"


def body(text: str) -> bytes:
    """The quoted-printable body of ``text``, as ``set_content`` and the
    generator write it: each line on its own, broken with soft line breaks
    into lines of at most 78 characters, a white space ending a line quoted."""
    lines = text.encode("utf-8").splitlines() or [b""]
    return "".join(_quoted_line(line) for line in lines).encode("ascii")


def _quoted_line(raw: bytes) -> str:
    """One line (without its end) as ``quoprimime.body_encode(line + "\\n", 78)``
    writes it, with CRLF line ends."""
    line = "".join(_QP[b] for b in raw)
    out = []
    start = 0
    last_start = len(line) - 1 - MAX_LINE
    while start <= last_start:  # never split an =XX between two lines
        stop = start + MAX_LINE - 1
        if line[stop - 2] == "=":
            out.append(line[start:stop - 1])
            start = stop - 2
        elif line[stop - 1] == "=":
            out.append(line[start:stop])
            start = stop - 1
        else:
            out.append(line[start:stop] + "=")
            start = stop
    if line and line[-1] in " \t":  # white space ending a line is quoted, room permitting
        room = start - last_start
        end = f"={ord(line[-1]):02X}"
        if room >= 3:
            tail = end
        elif room == 2:
            tail = line[-1] + "=\r\n"
        else:
            tail = "=\r\n" + end
        out.append(line[start:-1] + tail)
    else:
        out.append(line[start:])
    out.append("")
    return "\r\n".join(out)
