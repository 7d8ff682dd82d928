"""What every transport shares: its settings, its failures, and the hand-over
rules (checked addresses, the envelope sender, ``dev_redirect``, the DKIM
signature) applied before any of them runs.

The transports themselves live in :mod:`.smtp`, :mod:`.sendmail` and
:mod:`.outbox`, which build on this module; :func:`.opener.open_transport`,
above them all, gives the one the settings name.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from vykhukhol.errors import BadInput, MissingModule
from vykhukhol.mail.config import MailConfig
from vykhukhol.mail.failures import (
    DeliveryError,
    PermanentFailure,
    TemporaryFailure,
    _by_code,
    _describe,
    _reply_text,
)
from vykhukhol.mail.headers import POLICY, check_address, encode_text
from vykhukhol.mail.message import Outgoing

__all__ = ["DeliveryError", "HandsOver", "PermanentFailure", "SignedLater", "TemporaryFailure",
           "Transport", "_by_code", "_describe", "_reply_text", "signed_now"]

if TYPE_CHECKING:
    from vykhukhol.mail.dkim import Signer
    from vykhukhol.mail.signing import SigningProcess

class HandsOver(Protocol):
    """What an alert or an admin's letter is handed to: a :class:`Transport`,
    or a run's lanes (:mod:`vykhukhol.sender.delivery`)."""

    def send(self, msg: EmailMessage | Outgoing, recipient: str) -> None: ...

    def close(self) -> None: ...


class Transport(ABC):
    """Hands letters over one by one; use it as a context manager to close it."""

    def __init__(self, config: MailConfig) -> None:
        self.config = config
        self._signer: Signer | SigningProcess | None = None

    def send(self, msg: EmailMessage | Outgoing, recipient: str,
             envelope_from: str | None = None, ready: Callable[[], None] | None = None,
             meanwhile: Callable[[], object] | None = None) -> None:
        """Deliver ``msg`` (a message, or one written by a :class:`Press`) to
        exactly ``recipient`` (or to ``dev_redirect``).

        ``ready`` is called once, before the letter is handed over for
        good (over SMTP: once MAIL FROM has left, so the journal's fsync and
        the server work at the same time); what it raises stops this letter
        unsent and is raised again. ``meanwhile``
        (which must not raise) is called once the letter is on its way, while
        the server's answer is awaited: the caller's next piece of work. It
        may return the caller's next letter: the SMTP transport then sends
        that letter's MAIL FROM as soon as this one is answered
        (:meth:`~.smtp.SmtpTransport.send_ahead`).

        The envelope sender is ``envelope_from``, else the one the letter
        carries (:attr:`Outgoing.envelope_from`, the tagged bounce address),
        else the configured ``from_email``, else the letter's ``From`` address.
        With ``dkim_domain`` set the letter is signed here, after
        ``dev_redirect``, so every transport hands over signed bytes; a DKIM
        key that cannot be used is a :class:`TemporaryFailure` (never an
        unsigned letter). Raises :class:`TemporaryFailure` or
        :class:`PermanentFailure`; :class:`BadInput` only when no usable
        envelope sender can be found (a settings error). ``msg`` itself is
        never changed.
        """
        try:
            rcpt = check_address(recipient, "recipient address")
        except BadInput as exc:
            raise PermanentFailure(exc.message, None, "local") from None
        sender = self.envelope_sender(msg, envelope_from)
        if self.config.dev_redirect:
            redirect = check_address(self.config.dev_redirect, "dev_redirect")
            if isinstance(msg, Outgoing):
                msg = msg.message()
            msg = _redirected(msg, redirect, rcpt)
            rcpt = redirect
        if self.config.dkim_domain:
            msg = self._signed(msg)
            if isinstance(msg, SignedLater) and not self.takes_later:
                msg = Outgoing(signed_now(msg), msg.from_address, msg.envelope_from)
        self._deliver(msg, rcpt, sender, ready or _nothing, meanwhile or _nothing)

    def envelope_sender(self, msg: EmailMessage | Outgoing, envelope_from: str | None = None
                        ) -> str:
        """The checked envelope sender :meth:`send` uses for ``msg`` (BadInput
        when there is none that mail can carry)."""
        carried = msg.envelope_from if isinstance(msg, Outgoing) else ""
        return check_address(
            envelope_from or carried or self.config.from_email or _from_address(msg),
            "envelope sender"
        )

    def prepare(self) -> None:
        """Make ready what every letter will need, before the first one is
        touched: with signing on, the process's signer (the key read and
        parsed, dkimpy imported). Raises :class:`~.dkim.DkimKeyError` or
        :class:`~vykhukhol.errors.MissingModule`; a sender calls it before it
        writes a letter's intent, so such a failure leaves no letter in doubt."""
        if self.config.dkim_domain and self._signer is None:
            from vykhukhol.mail.dkim import signer_for  # mail.dkim only when signing is on

            self._signer = signer_for(self.config.dkim_domain, self.config.dkim_selector,
                                      self.config.dkim_key or Path("-"))

    def use_signer(self, signer: Signer | SigningProcess) -> None:
        """Sign with ``signer`` (anything with ``sign(data) -> signed data``)
        instead of the process's own :class:`~.dkim.Signer`."""
        self._signer = signer

    #: Whether :meth:`_deliver` takes a :class:`SignedLater` (asking for its
    #: bytes only when they must go); else it is waited for before.
    takes_later = False

    def _signed(self, msg: EmailMessage | Outgoing) -> Outgoing:
        """The letter's bytes with a DKIM-Signature on top (the key read on the
        first letter, unless :meth:`prepare` did it); a :class:`SignedLater`
        when a helper process signs it meanwhile."""
        from vykhukhol.mail.dkim import DkimKeyError  # mail.dkim only when signing is on

        try:
            self.prepare()
            assert self._signer is not None
            if isinstance(msg, Outgoing):
                data, sender, envelope = msg.data, msg.from_address, msg.envelope_from
            else:
                data, sender, envelope = msg.as_bytes(policy=POLICY), _from_address(msg), ""
            submit = getattr(self._signer, "submit", None)
            if submit is not None:
                return SignedLater(submit(data), sender, envelope)
            return Outgoing(self._signer.sign(data), sender, envelope)
        except (DkimKeyError, MissingModule) as exc:
            raise TemporaryFailure(f"{exc.message}; nothing is sent unsigned", None,
                                   "dkim") from None

    @abstractmethod
    def _deliver(self, msg: EmailMessage | Outgoing, recipient: str, envelope_from: str,
                 ready: Callable[[], None], meanwhile: Callable[[], object]) -> None:
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


class SignedLater(Outgoing):
    """A letter a helper process is signing (:mod:`.signing`): ``data`` waits
    for the signed bytes, asked for only when they must go, so the signature
    is made while the envelope is exchanged. Raises what the signing raises
    (:class:`~.dkim.DkimKeyError`) when asked."""

    _collect: Callable[[], bytes]

    def __init__(self, collect: Callable[[], bytes], from_address: str,
                 envelope_from: str = "") -> None:
        object.__setattr__(self, "_collect", collect)
        object.__setattr__(self, "from_address", from_address)
        object.__setattr__(self, "envelope_from", envelope_from)

    @property  # Outgoing's field, here made when first read
    def data(self) -> bytes:
        made = self.__dict__.get("_made")
        if made is None:
            made = self._collect()
            object.__setattr__(self, "_made", made)
        return made


def signed_now(msg: SignedLater) -> bytes:
    """The bytes of ``msg``, a signing failure as the :class:`TemporaryFailure`
    a transport raises for it."""
    from vykhukhol.mail.dkim import DkimKeyError  # mail.dkim only when signing is on

    try:
        return msg.data
    except DkimKeyError as exc:
        raise TemporaryFailure(f"{exc.message}; nothing is sent unsigned", None,
                               "dkim") from None


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
    if "X-Vykhukhol-Original-To" not in copied:  # a letter redirected twice keeps the first
        original = _shown_to(copied) or recipient
        copied.set_raw("X-Vykhukhol-Original-To", encode_text("X-Vykhukhol-Original-To", original))
    if "To" in copied:
        copied.replace_header("To", redirect)  # keeps its place among the headers
    else:
        copied["To"] = redirect
    return copied


def _shown_to(msg: EmailMessage) -> str:
    """The letter's ``To`` as a reader sees it (``Name <address>``), decoded by
    RFC 2047's rules; it is written again by :func:`encode_text`, so what the
    decoding finds can never become a header of its own."""
    from email.header import decode_header, make_header

    raw = next((value for name, value in msg.raw_items() if name.lower() == "to"), "")
    try:
        return str(make_header(decode_header(str(raw))))
    except (ValueError, LookupError, UnicodeError):  # a To we did not write
        return str(raw)
