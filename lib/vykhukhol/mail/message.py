"""One letter (:func:`build_message`) and many copies of one (:class:`Press`).

``build_message`` writes the letter docs/reference/transports.md#transports-headers describes with the e-mail package; a
:class:`Press` writes the same bytes for many recipients with what they share
made once. tests/unit/test_press.py holds the two together byte for byte.
"""

from __future__ import annotations

import email
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from email import quoprimime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

from vykhukhol.errors import BadInput
from vykhukhol.mail.headers import (
    _CRLF,
    POLICY,
    _check_list_id,
    _check_url,
    _fold,
    _verbatim,
    check_address,
    clean_header_text,
    encode_mailbox,
    encode_text,
    header_line,
)


def build_message(
    *,
    from_name: str,
    from_email: str,
    to_email: str,
    to_name: str = "",
    subject: str,
    text: str,
    html: str | None = None,
    run_id: str,
    list_id: str | None = None,
    unsubscribe_url: str | None = None,
    unsubscribe_mailto: str | None = None,
    date: datetime | None = None,
    message_id: str | None = None,
    tag: str | None = None,
) -> EmailMessage:
    """One letter, ready for :meth:`Transport.send`.

    Names, the subject and the run id lose any control characters (so no CR/LF
    can start a header of its own); names and the subject are written by
    :func:`~vykhukhol.mail.headers.encode_mailbox` and
    :func:`~vykhukhol.mail.headers.encode_text`, never by the e-mail package,
    so nothing in them is decoded on the way out; addresses, ``list_id`` (``news.example.org``,
    written as ``<news.example.org>``) and ``unsubscribe_url`` (http or https)
    that cannot be written safely raise :class:`BadInput`. ``List-Unsubscribe``
    is added only with ``unsubscribe_url`` (and carries ``unsubscribe_mailto``,
    an address, as a ``mailto:`` with subject ``unsubscribe``);
    ``List-Unsubscribe-Post`` only when that link is https (RFC 8058 3.1). A
    naive ``date`` is taken as UTC; none means now. ``message_id`` is for
    tests that compare letters; none means a new one. ``tag`` (the letter's
    signed tag, docs/reference/transports.md#transports-envelope) is written as ``X-Vykhukhol-Tag``, so a provider that
    returns a header of the letter names it.
    """
    sender = check_address(from_email, "sender address")
    recipient = check_address(to_email, "recipient address")
    run = clean_header_text(run_id)
    if not run:
        raise BadInput("the run id of a letter is empty")

    msg = EmailMessage(policy=POLICY)
    msg.set_raw("From", encode_mailbox("From", from_name, sender))  # written as it is
    msg.set_raw("To", encode_mailbox("To", to_name, recipient))
    msg.set_raw("Subject", encode_text("Subject", subject))
    moment = date if date is not None else datetime.now(timezone.utc).replace(microsecond=0)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    msg["Date"] = format_datetime(moment)
    msg["Message-ID"] = message_id or make_msgid(domain=sender.rpartition("@")[2])
    if list_id is not None:
        msg["List-Id"] = f"<{_check_list_id(list_id)}>"
    if unsubscribe_url is not None:
        msg["List-Unsubscribe"] = list_unsubscribe(unsubscribe_url, unsubscribe_mailto)
        if unsubscribe_url.startswith("https://"):
            msg["List-Unsubscribe-Post"] = ONE_CLICK
    msg["X-Vykhukhol-Run"] = run
    if tag is not None:
        msg["X-Vykhukhol-Tag"] = _check_tag(tag)
    msg.set_content(str(text), subtype="plain", charset="utf-8", cte="quoted-printable")
    if html is not None:
        msg.add_alternative(str(html), subtype="html", charset="utf-8", cte="quoted-printable")
        for part in msg.iter_parts():  # set_content gives each part one; RFC 2045 wants it on top
            del part["MIME-Version"]
    return msg


_TAG = re.compile(r"[a-z0-9]{1,64}")


def _check_tag(tag: str) -> str:
    """A tag is a short word of lower-case letters and digits (returntag):
    anything else would be a header a stranger could shape."""
    if not _TAG.fullmatch(tag):
        raise BadInput("a letter's tag must be lower-case letters and digits")
    return tag


ONE_CLICK = "List-Unsubscribe=One-Click"
_MAX_LIST_UNSUBSCRIBE = 900  # the header's value; the line stays under SMTP's 998 octets


def list_unsubscribe(url: str, mailto: str | None = None) -> str:
    """The value of ``List-Unsubscribe``: the link, then (when given, and when
    the line stays short enough to travel unfolded) the ``mailto:`` address."""
    value = f"<{_check_url(url)}>"
    if mailto:
        address = check_address(mailto, "unsubscribe address")
        both = f"{value}, <mailto:{address}?subject=unsubscribe>"
        if len(both) <= _MAX_LIST_UNSUBSCRIBE:
            value = both
    return value


# --------------------------------------------------------------------------- many copies


@dataclass(frozen=True)
class Outgoing:
    """A letter already written out: what ``build_message(...).as_bytes(policy=POLICY)``
    gives (CRLF line ends, 7-bit), the address of its ``From``, and the envelope
    sender it should leave with (empty: the transport's default)."""

    data: bytes
    from_address: str
    envelope_from: str = ""

    def message(self) -> EmailMessage:
        """The letter parsed back, for the transports that need a message."""
        parsed = email.message_from_bytes(self.data, policy=POLICY)
        assert isinstance(parsed, EmailMessage)
        return parsed


_TEXT_PART = (b'Content-Type: text/plain; charset="utf-8"\r\n'
              b"Content-Transfer-Encoding: quoted-printable\r\n"
              b"MIME-Version: 1.0\r\n")
_DOT_ATOM = re.compile(r"[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*@[A-Za-z0-9.-]+")
_SHORT = 78  # POLICY.max_line_length: a longer line is folded (headers) or broken (the body)


class Press:
    """Many copies of one letter, each byte for byte what :func:`build_message`
    would write for that recipient, with what all copies share made once.

    Building a message with the e-mail package costs about 2 ms, most of it
    parsing and folding headers that are the same in every copy (``From``,
    ``List-Id``, the run, usually ``Subject``). A press folds those once,
    writes ``To`` with the same writer as :func:`build_message`, and encodes
    the body line by line with a cache, since most lines of a letter do not
    depend on the recipient.
    Letters with an HTML part go through :func:`build_message` whole.
    """

    _CACHE = 4096  # entries per cache before it is emptied (names make lines unique)

    def __init__(self, *, from_name: str, from_email: str, run_id: str,
                 list_id: str | None = None) -> None:
        self.from_name = from_name
        self.sender = check_address(from_email, "sender address")
        self.run_id = clean_header_text(run_id)
        if not self.run_id:
            raise BadInput("the run id of a letter is empty")
        self.list_id = list_id
        self._domain = self.sender.rpartition("@")[2]
        self._from = header_line("From", encode_mailbox("From", from_name, self.sender))
        self._list_id = b"" if list_id is None else _fold("List-Id", f"<{_check_list_id(list_id)}>")
        self._run = _fold("X-Vykhukhol-Run", self.run_id)
        self._subjects: dict[str, bytes] = {}
        self._dates: dict[datetime, bytes] = {}
        self._lines: dict[bytes, bytes] = {}

    def write(self, *, to_email: str, to_name: str = "", subject: str, text: str,
              html: str | None = None, unsubscribe_url: str | None = None,
              unsubscribe_mailto: str | None = None,
              date: datetime | None = None, message_id: str | None = None,
              tag: str | None = None) -> Outgoing:
        """One recipient's copy; raises what :func:`build_message` raises."""
        if html is not None:
            msg = build_message(from_name=self.from_name, from_email=self.sender,
                                to_email=to_email, to_name=to_name, subject=subject, text=text,
                                html=html, run_id=self.run_id, list_id=self.list_id,
                                unsubscribe_url=unsubscribe_url,
                                unsubscribe_mailto=unsubscribe_mailto, date=date,
                                message_id=message_id, tag=tag)
            return Outgoing(msg.as_bytes(policy=POLICY), self.sender)
        recipient = check_address(to_email, "recipient address")
        head = [self._from, self._to(to_name, recipient), self._subject(subject),
                self._date(date), self._message_id(message_id), self._list_id]
        if unsubscribe_url is not None:
            head.append(_verbatim("List-Unsubscribe",
                                  list_unsubscribe(unsubscribe_url, unsubscribe_mailto)))
            if unsubscribe_url.startswith("https://"):
                head.append(b"List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n")
        head.append(self._run)
        if tag is not None:
            head.append(b"X-Vykhukhol-Tag: " + _check_tag(tag).encode("ascii") + _CRLF)
        head += [_TEXT_PART, _CRLF, self._body(str(text))]
        return Outgoing(b"".join(head), self.sender)

    def _to(self, name: str, recipient: str) -> bytes:
        return header_line("To", encode_mailbox("To", name, recipient))

    def _subject(self, subject: str) -> bytes:
        folded = self._subjects.get(subject)
        if folded is None:
            folded = self._remember(self._subjects, subject,
                                    header_line("Subject", encode_text("Subject", subject)))
        return folded

    def _date(self, date: datetime | None) -> bytes:
        moment = date if date is not None else datetime.now(timezone.utc).replace(microsecond=0)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        folded = self._dates.get(moment)
        if folded is None:
            folded = self._remember(self._dates, moment, _fold("Date", format_datetime(moment)))
        return folded

    def _message_id(self, message_id: str | None) -> bytes:
        value = message_id or make_msgid(domain=self._domain)
        line = f"Message-ID: {value}"
        if len(line) <= _SHORT and _DOT_ATOM.fullmatch(value[1:-1]) and value[0] == "<" \
                and value[-1] == ">":
            return line.encode("ascii") + _CRLF
        return _fold("Message-ID", value)

    def _body(self, text: str) -> bytes:
        """The quoted-printable body, as ``set_content`` and the generator write it."""
        lines = text.encode("utf-8").splitlines() or [b""]
        cache = self._lines
        out = []
        for line in lines:
            encoded = cache.get(line)
            if encoded is None:
                quoted = quoprimime.body_encode(line.decode("latin-1") + "\n", _SHORT)
                encoded = self._remember(cache, line,
                                         quoted.replace("\n", "\r\n").encode("ascii"))
            out.append(encoded)
        return b"".join(out)

    def _remember(self, cache: dict, key: object, value: bytes) -> bytes:
        if len(cache) >= self._CACHE:
            cache.clear()
        cache[key] = value
        return value

