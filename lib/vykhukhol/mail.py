"""Letters and the three ways to hand them over: SMTP, a local sendmail, an outbox folder.

This module builds one letter (:func:`build_message`) the way SPEC §9 wants it —
an :class:`~email.message.EmailMessage` with the SMTP policy, UTF-8 text in
quoted-printable so Cyrillic travels as 7-bit, an HTML alternative when given,
and the list headers (``List-Id``, ``List-Unsubscribe``,
``List-Unsubscribe-Post``, ``X-Vykhukhol-Run``) — and delivers it to exactly
one envelope recipient through a :class:`Transport` from
:func:`open_transport`:

* ``smtp`` — one connection, opened on the first letter and reused for the
  whole run; plain, STARTTLS or SSL; login when a user is set; timeouts.
* ``sendmail`` — ``sendmail -i -f FROM -- RCPT`` with the letter on stdin.
* ``outbox`` — one ``.eml`` file per letter in a folder, for tests, previews
  and hosts without mail.

Every failure to deliver is a :class:`TemporaryFailure` (stop the run, try
again later) or a :class:`PermanentFailure` (this recipient or letter will
never go through). ``dev_redirect`` sends every letter to one address instead,
and it is applied here, in :meth:`Transport.send`, so no caller can forget it.

Deliberately *not* here: choosing recipients, pacing, retries, bounce
counting, journals of what was sent, and rendering templates (see
:mod:`vykhukhol.render`). No header is ever taken from user input: names,
subjects and ids pass :func:`clean_header_text`, addresses are checked, and
nothing lets a caller add an arbitrary header.
"""

from __future__ import annotations

import contextlib
import copy
import email
import email.errors
import email.policy
import re
import subprocess
import time
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from email import quoprimime
from email.headerregistry import Address, HeaderRegistry, UnstructuredHeader
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import smtplib

from vykhukhol import files
from vykhukhol.errors import BadInput, NotFound, StorageError

__all__ = [
    "POLICY",
    "DeliveryError",
    "MailConfig",
    "OutboxTransport",
    "Outgoing",
    "PermanentFailure",
    "Press",
    "SendmailTransport",
    "SmtpTransport",
    "TemporaryFailure",
    "Transport",
    "build_message",
    "check_address",
    "clean_header_text",
    "list_outbox",
    "open_transport",
    "read_outbox",
]

TRANSPORTS = ("outbox", "smtp", "sendmail")
SECURITIES = ("none", "starttls", "ssl")
MAX_URL_LENGTH = 900  # a header line must stay under SMTP's 998 octets


# --------------------------------------------------------------------------- policy


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


# --------------------------------------------------------------------------- config


@dataclass
class MailConfig:
    """How a service's letters leave: the settings of SPEC §9."""

    transport: str = "outbox"  # outbox | smtp | sendmail
    from_email: str = ""
    smtp_host: str = "127.0.0.1"
    smtp_port: int = 25
    smtp_security: str = "none"  # none | starttls | ssl
    smtp_user: str = ""
    smtp_password: str = ""
    sendmail_path: str = "/usr/sbin/sendmail"
    dev_redirect: str = ""  # when set, every letter goes to this one address
    outbox_dir: Path | None = None
    timeout: float = 20.0  # seconds for connect and each SMTP command, or for sendmail


# --------------------------------------------------------------------------- headers

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
    date: datetime | None = None,
    message_id: str | None = None,
) -> EmailMessage:
    """One letter, ready for :meth:`Transport.send`.

    Names, the subject and the run id lose any control characters (so no CR/LF
    can start a header of its own); addresses, ``list_id`` (``news.example.org``,
    written as ``<news.example.org>``) and ``unsubscribe_url`` (http or https)
    that cannot be written safely raise :class:`BadInput`. ``List-Unsubscribe``
    and ``List-Unsubscribe-Post`` are added only with ``unsubscribe_url``. A
    naive ``date`` is taken as UTC; none means now. ``message_id`` is for
    tests that compare letters; none means a new one.
    """
    sender = check_address(from_email, "sender address")
    recipient = check_address(to_email, "recipient address")
    run = clean_header_text(run_id)
    if not run:
        raise BadInput("the run id of a letter is empty")

    msg = EmailMessage(policy=POLICY)
    msg["From"] = _address(from_name, sender)
    msg["To"] = _address(to_name, recipient)
    msg["Subject"] = clean_header_text(subject)
    moment = date if date is not None else datetime.now(timezone.utc).replace(microsecond=0)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    msg["Date"] = format_datetime(moment)
    msg["Message-ID"] = message_id or make_msgid(domain=sender.rpartition("@")[2])
    if list_id is not None:
        msg["List-Id"] = f"<{_check_list_id(list_id)}>"
    if unsubscribe_url is not None:
        msg["List-Unsubscribe"] = f"<{_check_url(unsubscribe_url)}>"
        msg["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    msg["X-Vykhukhol-Run"] = run
    msg.set_content(str(text), subtype="plain", charset="utf-8", cte="quoted-printable")
    if html is not None:
        msg.add_alternative(str(html), subtype="html", charset="utf-8", cte="quoted-printable")
    return msg


# --------------------------------------------------------------------------- many copies


@dataclass(frozen=True)
class Outgoing:
    """A letter already written out: what ``build_message(...).as_bytes(policy=POLICY)``
    gives (CRLF line ends, 7-bit), and the address of its ``From``."""

    data: bytes
    from_address: str

    def message(self) -> EmailMessage:
        """The letter parsed back, for the transports that need a message."""
        parsed = email.message_from_bytes(self.data, policy=POLICY)
        assert isinstance(parsed, EmailMessage)
        return parsed


def _fold(name: str, value: object) -> bytes:
    """One header exactly as the generator writes it for a message of POLICY."""
    stored = POLICY.header_store_parse(name, value)[1]
    return POLICY.fold_binary(name, stored)


_CRLF = b"\r\n"
_TEXT_PART = (b'Content-Type: text/plain; charset="utf-8"\r\n'
              b"Content-Transfer-Encoding: quoted-printable\r\n"
              b"MIME-Version: 1.0\r\n")
_SIMPLE_NAME = re.compile(r"[A-Za-z0-9]+(?: [A-Za-z0-9]+)*")
_DOT_ATOM = re.compile(r"[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*@[A-Za-z0-9.-]+")
_SHORT = 78  # POLICY.max_line_length: a longer header line is folded by the package


class Press:
    """Many copies of one letter, each byte for byte what :func:`build_message`
    would write for that recipient, with what all copies share made once.

    Building a message with the e-mail package costs about 2 ms, most of it
    parsing and folding headers that are the same in every copy (``From``,
    ``List-Id``, the run, usually ``Subject``). A press folds those once,
    formats the per-recipient headers directly when they are plain ASCII (and
    through the package otherwise), and encodes the body line by line with a
    cache, since most lines of a letter do not depend on the recipient.
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
        self._from = _fold("From", _address(from_name, self.sender))
        self._list_id = b"" if list_id is None else _fold("List-Id", f"<{_check_list_id(list_id)}>")
        self._run = _fold("X-Vykhukhol-Run", self.run_id)
        self._subjects: dict[str, bytes] = {}
        self._dates: dict[datetime, bytes] = {}
        self._lines: dict[bytes, bytes] = {}

    def write(self, *, to_email: str, to_name: str = "", subject: str, text: str,
              html: str | None = None, unsubscribe_url: str | None = None,
              date: datetime | None = None, message_id: str | None = None) -> Outgoing:
        """One recipient's copy; raises what :func:`build_message` raises."""
        if html is not None:
            msg = build_message(from_name=self.from_name, from_email=self.sender,
                                to_email=to_email, to_name=to_name, subject=subject, text=text,
                                html=html, run_id=self.run_id, list_id=self.list_id,
                                unsubscribe_url=unsubscribe_url, date=date,
                                message_id=message_id)
            return Outgoing(msg.as_bytes(policy=POLICY), self.sender)
        recipient = check_address(to_email, "recipient address")
        head = [self._from, self._to(to_name, recipient), self._subject(subject),
                self._date(date), self._message_id(message_id), self._list_id]
        if unsubscribe_url is not None:
            head.append(_verbatim("List-Unsubscribe", f"<{_check_url(unsubscribe_url)}>"))
            head.append(b"List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n")
        head += [self._run, _TEXT_PART, _CRLF, self._body(str(text))]
        return Outgoing(b"".join(head), self.sender)

    def _to(self, name: str, recipient: str) -> bytes:
        name = clean_header_text(name or "")
        if _DOT_ATOM.fullmatch(recipient):
            line = f"To: {name} <{recipient}>" if name else f"To: {recipient}"
            if len(line) <= _SHORT and (not name or _SIMPLE_NAME.fullmatch(name)):
                return line.encode("ascii") + _CRLF
        return _fold("To", _address(name, recipient))

    def _subject(self, subject: str) -> bytes:
        folded = self._subjects.get(subject)
        if folded is None:
            folded = self._remember(self._subjects, subject,
                                    _fold("Subject", clean_header_text(subject)))
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
                encoded = quoprimime.body_encode(line.decode("latin-1") + "\n",
                                                 POLICY.max_line_length)
                encoded = self._remember(cache, line,
                                         encoded.replace("\n", "\r\n").encode("ascii"))
            out.append(encoded)
        return b"".join(out)

    def _remember(self, cache: dict, key: object, value: bytes) -> bytes:
        if len(cache) >= self._CACHE:
            cache.clear()
        cache[key] = value
        return value


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


# --------------------------------------------------------------------------- failures


class DeliveryError(Exception):
    """A letter was not accepted.

    ``code`` is the SMTP reply code (or None), ``detail`` the server's or the
    program's words, ``temporary`` whether trying again later may work, and
    ``stage`` where it happened: ``connect`` (connect, TLS, login), ``mail``
    (the envelope sender), ``rcpt``, ``data``, ``send`` (the connection broke
    mid-letter), ``local`` (sendmail, the outbox, an impossible address).
    """

    temporary: bool = True

    def __init__(self, detail: str, code: int | None = None, stage: str = "") -> None:
        super().__init__(f"{code} {detail}" if code is not None else detail)
        self.code = code
        self.detail = detail
        self.stage = stage


class TemporaryFailure(DeliveryError):
    """Try again later: refused or dropped connection, timeout, a 4xx reply, a
    misconfigured sender, server or sendmail. The caller stops the run."""

    temporary = True


class PermanentFailure(DeliveryError):
    """This letter to this recipient will never be accepted: a 5xx reply to RCPT
    or DATA, sendmail refusing it, an address that cannot be written."""

    temporary = False


def _by_code(code: int | None, detail: str, stage: str) -> DeliveryError:
    """4xx (and anything odd) is temporary, 5xx permanent."""
    if code is not None and 500 <= code <= 599:
        return PermanentFailure(detail, code, stage)
    return TemporaryFailure(detail, code, stage)


def _reply_text(resp: bytes | str) -> str:
    if isinstance(resp, bytes):
        resp = resp.decode("utf-8", "replace")
    return " ".join(str(resp).split())


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    words = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return " ".join(str(words).split())


# --------------------------------------------------------------------------- transports


class Transport(ABC):
    """Hands letters over one by one; use it as a context manager to close it."""

    def __init__(self, config: MailConfig) -> None:
        self.config = config

    def send(self, msg: EmailMessage | Outgoing, recipient: str,
             envelope_from: str | None = None, ready: Callable[[], None] | None = None,
             meanwhile: Callable[[], None] | None = None) -> None:
        """Deliver ``msg`` (a message, or one written by a :class:`Press`) to
        exactly ``recipient`` (or to ``dev_redirect``).

        ``ready`` is called once, just before the letter is handed over for
        good (over SMTP: after the server has said yes to DATA, so the
        journal's disk can work while the envelope is exchanged); what it
        raises stops this letter unsent and is raised again. ``meanwhile``
        (which must not raise) is called once the letter is on its way, while
        the server's answer is awaited: the caller's next piece of work.

        The envelope sender is ``envelope_from``, else the configured
        ``from_email``, else the letter's ``From`` address. Raises
        :class:`TemporaryFailure` or :class:`PermanentFailure`; :class:`BadInput`
        only when no usable envelope sender can be found (a settings error).
        ``msg`` itself is never changed.
        """
        try:
            rcpt = check_address(recipient, "recipient address")
        except BadInput as exc:
            raise PermanentFailure(exc.message, None, "local") from None
        sender = check_address(
            envelope_from or self.config.from_email or _from_address(msg), "envelope sender"
        )
        if self.config.dev_redirect:
            redirect = check_address(self.config.dev_redirect, "dev_redirect")
            if isinstance(msg, Outgoing):
                msg = msg.message()
            msg = _redirected(msg, redirect, rcpt)
            rcpt = redirect
        self._deliver(msg, rcpt, sender, ready or _nothing, meanwhile or _nothing)

    @abstractmethod
    def _deliver(self, msg: EmailMessage | Outgoing, recipient: str, envelope_from: str,
                 ready: Callable[[], None], meanwhile: Callable[[], None]) -> None:
        """Hand over one letter, calling ``ready`` first and ``meanwhile``
        when it is gone; addresses are checked, dev_redirect is applied."""

    deadline: float | None = None

    def set_deadline(self, deadline: float | None) -> None:
        """A ``time.monotonic()`` moment after which nothing should be waited for
        (honoured by the SMTP transport; the others are bounded by ``timeout``)."""
        self.deadline = deadline

    def close(self) -> None:
        """Release what the transport holds; sending again later reopens it."""
        return None

    def __enter__(self) -> Transport:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _nothing() -> None:
    return None


def _from_address(msg: EmailMessage | Outgoing) -> str:
    if isinstance(msg, Outgoing):
        return msg.from_address
    header = msg.get("From")
    addresses = getattr(header, "addresses", ()) if header is not None else ()
    return addresses[0].addr_spec if addresses else ""


def _redirected(msg: EmailMessage, redirect: str, recipient: str) -> EmailMessage:
    """A copy of ``msg`` addressed to ``redirect``, the original kept in a header."""
    copied = copy.deepcopy(msg)
    original = str(copied.get("To", "")) or recipient
    if "X-Vykhukhol-Original-To" not in copied:  # a letter redirected twice keeps the first
        copied["X-Vykhukhol-Original-To"] = clean_header_text(original)
    if "To" in copied:
        copied.replace_header("To", redirect)  # keeps its place among the headers
    else:
        copied["To"] = redirect
    return copied


class SmtpTransport(Transport):
    """One SMTP connection, opened lazily and reused for every letter of a run.

    Like GNU Mailman, any SMTP error closes the connection before it is raised;
    the next letter opens a new one. A connection idle for more than
    ``idle_check_after`` seconds is probed with NOOP first, so a server that
    hung up on a slow run costs a reconnect rather than a failed letter.
    """

    idle_check_after = 10.0  # seconds

    def __init__(self, config: MailConfig) -> None:
        super().__init__(config)
        self._conn: smtplib.SMTP | None = None
        self._last_used = 0.0
        self.connections = 0  # connections opened so far (for logs and tests)

    def _deliver(self, msg: EmailMessage | Outgoing, recipient: str, envelope_from: str,
                 ready: Callable[[], None], meanwhile: Callable[[], None]) -> None:
        import smtplib

        data = msg.data if isinstance(msg, Outgoing) else msg.as_bytes(policy=POLICY)
        conn = self._connection()
        stage = "mail"
        try:
            # Addresses are checked dot-atoms: <address> needs no further
            # quoting (smtplib's own quoting parses each address again).
            code, resp = self._command(conn, "mail", f"FROM:<{envelope_from}>")
            if code != 250:
                # Not this recipient's fault: every letter would fail the same way.
                self._hang_up(polite=True)
                raise TemporaryFailure(f"sender {envelope_from} refused: {_reply_text(resp)}",
                                       code, "mail")
            stage = "rcpt"
            code, resp = self._command(conn, "rcpt", f"TO:<{recipient}>")
            if code not in (250, 251):
                self._hang_up(polite=True)
                raise _by_code(code, _reply_text(resp) or "recipient refused", "rcpt")
            stage = "data"
            code, resp = self._command(conn, "data")
            if code != 354:
                self._hang_up(polite=True)
                raise _by_code(code, _reply_text(resp), "data")
            try:
                ready()
            except BaseException:
                self._hang_up(polite=False)  # the server drops a letter with no final dot
                raise
            # From here the server may have the letter, answered or not.
            stage = "payload"
            self._arm()
            conn.send(_dot_stuffed(data))
            meanwhile()  # the caller's work, while the server takes the letter in
            code, resp = conn.getreply()
            if code != 250:
                self._hang_up(polite=True)
                raise _by_code(code, _reply_text(resp), "data")
        except smtplib.SMTPResponseException as exc:
            self._hang_up(polite=True)
            raise _by_code(exc.smtp_code, _reply_text(exc.smtp_error),
                           "data" if stage == "payload" else stage) from None
        except OSError as exc:  # refused, timeout, dropped, and smtplib's other errors
            self._hang_up(polite=False)
            # Lost after the letter went, the server may have taken it:
            # the caller records it "in doubt" and never sends it again.
            raise TemporaryFailure(
                f"connection to {self._where()} failed: {_describe(exc)}", None,
                "data-unanswered" if stage == "payload" else "send",
            ) from None
        self._last_used = time.monotonic()

    def _command(self, conn: smtplib.SMTP, verb: str, args: str = "") -> tuple[int, bytes]:
        self._arm()
        conn.putcmd(verb, args)
        return conn.getreply()

    def close(self) -> None:
        self._hang_up(polite=True)

    def set_deadline(self, deadline: float | None) -> None:
        """A ``time.monotonic()`` moment no SMTP command may run past: each
        command's timeout is the time left until then (at most ``timeout``)."""
        self.deadline = deadline

    def _arm(self) -> float:
        """Set the socket's timeout for the next command; returns it."""
        seconds = self.config.timeout
        if self.deadline is not None:
            seconds = max(0.2, min(seconds, self.deadline - time.monotonic()))
        if self._conn is not None and self._conn.sock is not None:
            self._conn.sock.settimeout(seconds)
        return seconds

    # -- the connection

    def _where(self) -> str:
        return f"{self.config.smtp_host}:{self.config.smtp_port}"

    def _connection(self) -> smtplib.SMTP:
        if self._conn is not None and time.monotonic() - self._last_used > self.idle_check_after:
            try:
                code = self._conn.noop()[0]
            except OSError:
                code = -1
            if code != 250:
                self._hang_up(polite=False)
        if self._conn is None:
            self._conn = self._connect()
            self.connections += 1
            self._last_used = time.monotonic()
        return self._conn

    def _connect(self) -> smtplib.SMTP:
        """Connect, greet, start TLS and log in; every failure is temporary."""
        import smtplib  # only runs that use SMTP pay for smtplib, and TLS for ssl

        cfg = self.config
        conn: smtplib.SMTP | None = None
        timeout = self._arm()  # the whole session set-up fits the time left
        try:
            if cfg.smtp_security != "none":
                import ssl
                context = ssl.create_default_context()
            if cfg.smtp_security == "ssl":
                conn = smtplib.SMTP_SSL(
                    cfg.smtp_host, cfg.smtp_port, timeout=timeout, context=context
                )
            else:
                conn = smtplib.SMTP(cfg.smtp_host, cfg.smtp_port, timeout=timeout)
            conn.ehlo_or_helo_if_needed()
            if cfg.smtp_security == "starttls":
                conn.starttls(context=context)
                conn.ehlo()
            if cfg.smtp_user:
                conn.login(cfg.smtp_user, cfg.smtp_password)
        except smtplib.SMTPResponseException as exc:
            _close(conn, polite=True)
            raise TemporaryFailure(
                f"{self._where()} refused the session: {_reply_text(exc.smtp_error)}",
                exc.smtp_code,
                "connect",
            ) from None
        except OSError as exc:  # includes ssl.SSLError and smtplib's SMTPException
            _close(conn, polite=False)
            raise TemporaryFailure(
                f"cannot connect to {self._where()}: {_describe(exc)}", None, "connect"
            ) from None
        return conn

    def _hang_up(self, polite: bool) -> None:
        conn, self._conn = self._conn, None
        _close(conn, polite)


_LINE_START_DOT = re.compile(rb"(?m)^\.")


def _dot_stuffed(data: bytes) -> bytes:
    """The DATA payload as smtplib's ``data`` sends it: leading dots doubled,
    a final CRLF, then the lone dot."""
    quoted = _LINE_START_DOT.sub(b"..", data)
    if not quoted.endswith(b"\r\n"):
        quoted += b"\r\n"
    return quoted + b".\r\n"


def _close(conn: smtplib.SMTP | None, polite: bool) -> None:
    """QUIT (when asked and the line may still be good), then close; never raises."""
    if conn is None:
        return
    if polite:
        with contextlib.suppress(OSError):
            conn.quit()
    with contextlib.suppress(OSError):
        conn.close()


_NOT_FIRST = ("-", "|")  # an option, a pipe to a program: never the first character for sendmail

# sysexits.h codes that describe this machine, not the recipient: retry later.
_SENDMAIL_TEMPORARY = {
    71: "EX_OSERR",
    73: "EX_CANTCREAT",
    74: "EX_IOERR",
    75: "EX_TEMPFAIL",
    77: "EX_NOPERM",
    78: "EX_CONFIG",
}


class SendmailTransport(Transport):
    """Pipes each letter to ``sendmail -i -f FROM -- RCPT`` (Unix line ends).

    The program must be an absolute path to an executable file, and no address
    given to it may read as an option or a file (SPEC 13). A program that
    cannot run or such an envelope sender (a hand-edited setting) is a
    temporary failure: nothing is run, and the letter waits until the setting
    is fixed. Such a recipient is a permanent failure of that letter."""

    def _deliver(self, msg: EmailMessage | Outgoing, recipient: str, envelope_from: str,
                 ready: Callable[[], None], meanwhile: Callable[[], None]) -> None:
        path = self.config.sendmail_path
        problem = files.program_problem(path or "")
        if problem:
            raise TemporaryFailure(f"cannot run mail.sendmail_path: {problem}", None, "local")
        if "/" in envelope_from or envelope_from.startswith(_NOT_FIRST):
            raise TemporaryFailure(f"envelope sender {envelope_from!r} may not contain / or start "
                                   "with - or | (fix from_email or mail.bounce_address)", None, "local")
        if recipient.startswith(_NOT_FIRST + ("/",)):
            raise PermanentFailure(f"recipient {recipient!r} cannot be given to sendmail", None, "local")
        ready()
        meanwhile()
        if isinstance(msg, Outgoing):
            msg = msg.message()
        argv = [path, "-i", "-f", envelope_from, "--", recipient]
        try:
            done = subprocess.run(
                argv,
                input=msg.as_bytes(policy=_LF_POLICY),
                capture_output=True,
                timeout=self.config.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise TemporaryFailure(
                f"{path} did not finish within {self.config.timeout:g} s", None, "local"
            ) from None
        except OSError as exc:  # missing, not executable
            raise TemporaryFailure(f"cannot run {path}: {_describe(exc)}", None, "local") from None
        if done.returncode == 0:
            return
        said = " ".join(done.stderr.decode("utf-8", "replace").split())[-500:]
        if done.returncode < 0:
            raise TemporaryFailure(
                f"{path} was killed by signal {-done.returncode}: {said}".rstrip(": "),
                None,
                "local",
            )
        name = _SENDMAIL_TEMPORARY.get(done.returncode)
        words = f"{path} exited with {done.returncode}" + (f" ({name})" if name else "")
        if said:
            words += f": {said}"
        if name:
            raise TemporaryFailure(words, None, "local")
        raise PermanentFailure(words, None, "local")


class OutboxTransport(Transport):
    """Writes each letter to ``<outbox_dir>/<yyyymmddTHHMMSS>-<µs>-<recipient>.eml``.

    File names sort by the moment they were written and never overwrite one
    another. A disk that refuses the write is a :class:`TemporaryFailure`.
    """

    def __init__(self, config: MailConfig) -> None:
        super().__init__(config)
        if config.outbox_dir is None:
            raise BadInput("the outbox transport needs an outbox folder")
        self.folder = Path(config.outbox_dir)

    def _deliver(self, msg: EmailMessage | Outgoing, recipient: str, envelope_from: str,
                 ready: Callable[[], None], meanwhile: Callable[[], None]) -> None:
        ready()
        meanwhile()
        safe = re.sub(r"[^a-z0-9@._+-]", "_", recipient.lower())[:100]
        moment = datetime.now(timezone.utc)
        while True:
            path = self.folder / f"{moment:%Y%m%dT%H%M%S}-{moment:%f}-{safe}.eml"
            if not path.exists():
                break
            moment += timedelta(microseconds=1)
        try:
            text = (msg.data.decode("ascii", "surrogateescape") if isinstance(msg, Outgoing)
                    else msg.as_string(policy=POLICY))
            files.atomic_write(path, text)
        except StorageError as exc:
            raise TemporaryFailure(exc.message, None, "local") from None


def list_outbox(outbox_dir: Path) -> list[Path]:
    """The ``.eml`` files of an outbox, newest first; a missing folder is empty."""
    folder = Path(outbox_dir)
    try:
        found = [p for p in folder.iterdir() if p.suffix == ".eml" and not p.name.startswith(".")]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StorageError(f"cannot list {folder.name}: {exc.strerror or exc}") from exc
    return sorted(found, key=lambda p: p.name, reverse=True)


def read_outbox(path: Path) -> EmailMessage:
    """One outbox letter back as a message (with :data:`POLICY`)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise NotFound(f"no letter {path.name} in the outbox") from None
    except OSError as exc:
        raise StorageError(f"cannot read {path.name}: {exc.strerror or exc}") from exc
    message = email.message_from_bytes(data, policy=POLICY)
    assert isinstance(message, EmailMessage)
    return message


# --------------------------------------------------------------------------- opening


def open_transport(config: MailConfig) -> Transport:
    """The transport ``config`` names, with its settings checked.

    Nothing is connected yet: an SMTP transport connects on its first letter.
    Raises :class:`BadInput` for an unknown transport or security, a bad
    ``from_email`` or ``dev_redirect``, a missing outbox folder or a timeout
    that is not positive.
    """
    if config.transport not in TRANSPORTS:
        raise BadInput(
            f"unknown mail transport {config.transport!r} (use one of: {', '.join(TRANSPORTS)})"
        )
    if config.smtp_security not in SECURITIES:
        raise BadInput(
            f"unknown SMTP security {config.smtp_security!r} (use one of: {', '.join(SECURITIES)})"
        )
    if not config.timeout or config.timeout <= 0:
        raise BadInput(f"mail timeout must be a positive number of seconds, not {config.timeout!r}")
    if config.from_email:
        check_address(config.from_email, "sender address")
    if config.dev_redirect:
        check_address(config.dev_redirect, "dev_redirect")
    if config.transport == "smtp":
        return SmtpTransport(config)
    if config.transport == "sendmail":
        return SendmailTransport(config)
    return OutboxTransport(config)
