"""The SMTP transport: one connection reused for a run; plain, STARTTLS or SSL;
the envelope pipelined (RFC 2920) when the server offers it."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from email.message import EmailMessage
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import smtplib

from vykhukhol.errors import BadInput
from vykhukhol.mail.config import MailConfig
from vykhukhol.mail.headers import POLICY
from vykhukhol.mail.message import Outgoing
from vykhukhol.mail.transport import (
    SignedLater,
    TemporaryFailure,
    Transport,
    _by_code,
    _describe,
    _reply_text,
    signed_now,
)


class SmtpTransport(Transport):
    """One SMTP connection, opened lazily and reused for every letter of a run.

    Like GNU Mailman, any SMTP error closes the connection before it is raised;
    the next letter opens a new one. A connection idle for more than
    ``idle_check_after`` seconds is probed with NOOP first, so a server that
    hung up on a slow run costs a reconnect rather than a failed letter.

    Without PIPELINING, the next letter's MAIL FROM is sent ahead the moment
    a letter is answered (:meth:`send_ahead`): the server reads it while the
    caller journals the letter and asks its gates about the next one. A MAIL
    is no letter: nothing leaves before the caller's next :meth:`send`, and a
    MAIL sent ahead for a letter that does not come is called off by RSET
    (another letter first) or QUIT.
    """

    idle_check_after = 10.0  # seconds
    takes_later = True  # a helper's signature is waited for after the envelope

    def __init__(self, config: MailConfig) -> None:
        super().__init__(config)
        self._conn: smtplib.SMTP | None = None
        self._last_used = 0.0
        self.connections = 0  # connections opened so far (for logs and tests)
        self.pipelining = False  # whether the server offers PIPELINING (RFC 2920)
        self._armed: tuple[object, float] | None = None  # the socket and the timeout it has
        self._ahead: str | None = None  # the sender of a MAIL sent ahead, its answer unread

    def _deliver(self, msg: EmailMessage | Outgoing, recipient: str, envelope_from: str,
                 ready: Callable[[], None], meanwhile: Callable[[], object]) -> None:
        import smtplib

        later = msg if isinstance(msg, SignedLater) else None
        if later is None:
            data = msg.data if isinstance(msg, Outgoing) else msg.as_bytes(policy=POLICY)
        conn = self._connection()
        stage = "mail"

        def while_the_server_reads() -> None:
            try:
                ready()  # the journal's fsync, while the first command travels
            except BaseException:
                self._hang_up(polite=False)  # the server drops a letter with no final dot
                raise

        try:
            if self.pipelining:
                replies = self._envelope_at_once(conn, envelope_from, recipient,
                                                 while_the_server_reads)
            else:
                replies = self._envelope_one_by_one(conn, envelope_from, recipient,
                                                    while_the_server_reads)
            _check_envelope(replies, envelope_from, self._hang_up)
            if later is not None:  # signed by a helper while the envelope went
                try:
                    data = signed_now(later)
                except TemporaryFailure:
                    self._hang_up(polite=False)  # the server drops a letter with no final dot
                    raise
            # From here the server may have the letter, answered or not.
            stage = "payload"
            self._arm()
            conn.send(_dot_stuffed(data))
            following = meanwhile()  # the caller's work, while the server takes the letter in
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
        if following is not None and not self.pipelining:
            self.send_ahead(conn, following)

    def send_ahead(self, conn: smtplib.SMTP, following: object) -> None:
        """MAIL FROM for the caller's next letter, on its way before the caller
        has journalled this one; its answer is read by the next :meth:`send`.
        A letter whose sender cannot be known, or a line that fails here,
        sends nothing ahead (the next letter connects again)."""
        if not isinstance(following, (EmailMessage, Outgoing)):
            return
        try:
            sender = self.envelope_sender(following)
        except BadInput:
            return  # the letter's own send says why
        try:
            self._arm()
            conn.putcmd("mail", f"FROM:<{sender}>")
        except OSError:
            self._hang_up(polite=False)
            return
        self._ahead = sender

    def _sent_ahead(self, conn: smtplib.SMTP, envelope_from: str) -> bool:
        """Whether MAIL FROM:<envelope_from> is on its way already; a MAIL sent
        ahead for another sender (an alert came first) is called off."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return False
        if ahead == envelope_from:
            return True
        self._arm()
        conn.getreply()  # the answer to the MAIL sent ahead, whatever it says
        self._command(conn, "rset")
        return False

    def _command(self, conn: smtplib.SMTP, verb: str, args: str = "",
                 once_sent: Callable[[], None] | None = None) -> tuple[int, bytes]:
        self._arm()
        conn.putcmd(verb, args)
        if once_sent is not None:
            once_sent()
        return conn.getreply()

    def _envelope_one_by_one(self, conn: smtplib.SMTP, envelope_from: str, recipient: str,
                             once_sent: Callable[[], None]) -> list[tuple[int, bytes]]:
        """MAIL, RCPT, DATA, each after the answer to the one before; stops
        at the first refusal (the replies so far are returned). ``once_sent``
        runs once MAIL is on its way, or, when MAIL was sent ahead, once RCPT
        is (so the journal's fsync still has a server's answer to wait on)."""
        # Addresses are checked dot-atoms: <address> needs no further
        # quoting (smtplib's own quoting parses each address again).
        if self._sent_ahead(conn, envelope_from):
            self._arm()
            replies = [conn.getreply()]
            if replies[-1][0] == 250:
                replies.append(self._command(conn, "rcpt", f"TO:<{recipient}>", once_sent))
        else:
            replies = [self._command(conn, "mail", f"FROM:<{envelope_from}>", once_sent)]
            if replies[-1][0] == 250:
                replies.append(self._command(conn, "rcpt", f"TO:<{recipient}>"))
        if len(replies) == 2 and replies[-1][0] in (250, 251):
            replies.append(self._command(conn, "data"))
        return replies

    def _envelope_at_once(self, conn: smtplib.SMTP, envelope_from: str, recipient: str,
                          once_sent: Callable[[], None]) -> list[tuple[int, bytes]]:
        """RFC 2920: MAIL, RCPT and DATA in one write, then their three
        replies, so the envelope costs one round trip instead of three. A
        server refuses DATA (503/554) when it refused the recipient, so the
        letter itself is only sent after a 354, as without pipelining.
        ``once_sent`` runs once the three are on their way."""
        self._arm()
        conn.send(f"MAIL FROM:<{envelope_from}>\r\nRCPT TO:<{recipient}>\r\nDATA\r\n"
                  .encode("ascii"))
        once_sent()
        replies: list[tuple[int, bytes]] = []
        try:
            while len(replies) < 3:
                replies.append(conn.getreply())
        except OSError:
            # A server that refuses and hangs up (421 to RCPT, then closed):
            # the refusal read says more than the lost line.
            if not _refused(replies):
                raise
        return replies

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
        sock = None if self._conn is None else self._conn.sock
        if sock is not None and (sock, seconds) != self._armed:
            sock.settimeout(seconds)  # a system call: only when the value changes
            self._armed = (sock, seconds)
        return seconds

    # -- the connection

    def _helo(self) -> str:
        """The greeting's name (docs/reference/transports.md#transports): never the bare address smtplib
        would fall back to."""
        cfg = self.config
        return cfg.helo_name or cfg.from_email.rpartition("@")[2] or "localhost"

    def _where(self) -> str:
        return f"{self.config.smtp_host}:{self.config.smtp_port}"

    def _connection(self) -> smtplib.SMTP:
        if self._conn is not None and time.monotonic() - self._last_used > self.idle_check_after:
            try:
                if self._ahead is not None:  # its answer first, then RSET is the probe
                    self._ahead = None
                    self._conn.getreply()
                    code = self._conn.rset()[0]
                else:
                    code = self._conn.noop()[0]
            except OSError:
                code = -1
            if code != 250:
                self._hang_up(polite=False)
        if self._conn is None:
            self._conn = self._connect()
            self.pipelining = bool(self._conn.has_extn("pipelining"))
            self.connections += 1
            self._last_used = time.monotonic()
        return self._conn

    def _connect(self) -> smtplib.SMTP:
        """Connect, greet, start TLS and log in; every failure is temporary."""
        import smtplib  # only runs that use SMTP pay for smtplib, and TLS for ssl

        cfg = self.config
        conn: smtplib.SMTP | None = None
        timeout = self._arm()  # the whole session set-up fits the time left
        # A socket's timeout bounds each read, not the greeting: a server that
        # drips it a byte at a time is hung up on when the set-up as a whole
        # outlasts ``timeout``, so it cannot hold the run past its time limit.
        watch = _SetUpWatch(timeout)
        try:
            if cfg.smtp_security != "none":
                import ssl
                context = ssl.create_default_context()
            if cfg.smtp_security == "ssl":
                conn = smtplib.SMTP_SSL(timeout=timeout, context=context,
                                        local_hostname=self._helo())
            else:
                conn = smtplib.SMTP(timeout=timeout, local_hostname=self._helo())
            with watch.over(conn):
                code, greeting = conn.connect(cfg.smtp_host, cfg.smtp_port)
                if code != 220:  # what smtplib's constructor checks, when it connects
                    raise smtplib.SMTPConnectError(code, greeting)
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
            if watch.expired:
                raise TemporaryFailure(
                    f"{self._where()} did not finish its greeting within {timeout:.1f}s "
                    "(the time this run had left, or the SMTP timeout): hung up", None, "connect"
                ) from None
            raise TemporaryFailure(
                f"cannot connect to {self._where()}: {_describe(exc)}", None, "connect"
            ) from None
        return conn

    def _hang_up(self, polite: bool) -> None:
        conn, self._conn, self._armed = self._conn, None, None
        ahead, self._ahead = self._ahead, None
        if polite and ahead is not None and conn is not None:
            with contextlib.suppress(OSError):
                conn.getreply()  # the MAIL sent ahead: QUIT's answer comes after it
        _close(conn, polite)


class _SetUpWatch:
    """Hangs up a session whose set-up (connect, greeting, EHLO, TLS, login)
    outlasts ``seconds`` in all, from a timer thread: shutting the socket down
    wakes the read it is blocked in."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._done = False
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def over(self, conn: smtplib.SMTP) -> Iterator[None]:
        timer = threading.Timer(self.seconds, self._expire, (conn,))
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            with self._lock:
                self._done = True
            timer.cancel()

    def _expire(self, conn: smtplib.SMTP) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            sock = getattr(conn, "sock", None)
            if sock is None:  # still connecting (bounded by its timeout): look again soon
                again = threading.Timer(0.1, self._expire, (conn,))
                again.daemon = True
                again.start()
                return
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _check_envelope(replies: list[tuple[int, bytes]], envelope_from: str,
                    hang_up: Callable[[bool], None]) -> None:
    """Raise for the first refusal among the replies to MAIL, RCPT and DATA
    (hanging up first, as for any SMTP error); return when DATA got its 354."""
    (code, resp), stage = replies[0], "mail"
    if code != 250:
        # Not this recipient's fault: every letter would fail the same way.
        hang_up(not _data_open(replies))
        raise TemporaryFailure(f"sender {envelope_from} refused: {_reply_text(resp)}",
                               code, "mail")
    for (code, resp), stage, good in zip(replies[1:], ("rcpt", "data"), ((250, 251), (354,)),
                                         strict=False):
        if code not in good:
            hang_up(not _data_open(replies))
            default = "recipient refused" if stage == "rcpt" else ""
            raise _by_code(code, _reply_text(resp) or default, stage)


def _refused(replies: list[tuple[int, bytes]]) -> bool:
    """Whether MAIL or RCPT, among the replies read so far, was refused."""
    return bool(replies) and (replies[0][0] != 250
                              or (len(replies) > 1 and replies[1][0] not in (250, 251)))


def _data_open(replies: list[tuple[int, bytes]]) -> bool:
    """Whether the server said 354 to a DATA it should have refused (after a
    refused recipient): then only hanging up, with no final dot, keeps it
    from taking an empty letter."""
    return len(replies) == 3 and replies[2][0] == 354


_LINE_START_DOT = re.compile(rb"(?m)^\.")


def _dot_stuffed(data: bytes) -> bytes:
    """The DATA payload as smtplib's ``data`` sends it: leading dots doubled,
    a final CRLF, then the lone dot."""
    quoted = data
    if data.startswith(b".") or b"\n." in data:  # rare: the search costs a tenth of the sub
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


