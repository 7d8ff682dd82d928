"""The outbox transport (one ``.eml`` file a letter) and reading the outbox back.

:func:`read_outbox` gives a letter back as a message; :func:`show_outbox` gives
what the admin's outbox pages show of any ``.eml`` file in the folder, even one
put there by hand that is not a letter at all.
"""

from __future__ import annotations

import email
import email.errors
import email.policy
import re
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

from vykhukhol.errors import BadInput, NotFound, StorageError
from vykhukhol.mail import outbox_files
from vykhukhol.mail.config import MailConfig
from vykhukhol.mail.headers import POLICY, clean_header_text
from vykhukhol.mail.message import Outgoing
from vykhukhol.mail.transport import TemporaryFailure, Transport


class OutboxTransport(Transport):
    """Writes each letter to ``<outbox_dir>/<yyyymmddTHHMMSS>-<µs>-<recipient>.eml``.

    File names sort by the moment they were written and never overwrite one
    another. The envelope sender is the file's first line, a ``Return-Path``
    header, as a receiving server would put it on top of a delivered letter;
    the rest is the letter exactly as a server would get it (its DKIM
    signature, when there is one, verifies). A disk that refuses the write is
    a :class:`TemporaryFailure`.
    """

    def __init__(self, config: MailConfig) -> None:
        super().__init__(config)
        if config.outbox_dir is None:
            raise BadInput("the outbox transport needs an outbox folder")
        self.folder = Path(config.outbox_dir)

    def _deliver(self, msg: EmailMessage | Outgoing, recipient: str, envelope_from: str,
                 ready: Callable[[], None], meanwhile: Callable[[], object]) -> None:
        ready()
        meanwhile()
        try:
            outbox_files.put(self.folder, recipient, envelope_from,
                             msg.data.decode("ascii", "surrogateescape")
                             if isinstance(msg, Outgoing) else msg.as_string(policy=POLICY))
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



SHOWN_BYTES = 5_000_000   # of an .eml file read for the outbox pages
SHOWN_HEADER = 2_000      # characters of one header shown
SHOWN_HEADERS = 200       # headers of one letter shown
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # in a shown body: all but tab and line feed
# What the e-mail package may raise on a letter it cannot make sense of.
_UNREADABLE = (ValueError, LookupError, TypeError, IndexError, AttributeError, RecursionError,
               email.errors.MessageError)


@dataclass
class ShownLetter:
    """One outbox file as text to show: decoded headers, the plain and HTML text."""

    headers: list[tuple[str, str]]
    plain: str = ""
    html: str = ""

    def header(self, name: str) -> str:
        """The first header called ``name`` (any case), or empty."""
        return next((value for key, value in self.headers if key.lower() == name.lower()), "")


def show_outbox(path: Path) -> ShownLetter:
    """What can be shown of an outbox file, whatever it holds.

    Headers are decoded by RFC 2047's rules and made one line each (no
    control character is left; the pages escape the rest); the first text
    and HTML parts are decoded with their charset, or as UTF-8 with
    replacement characters. Only :class:`NotFound` and :class:`StorageError`
    (the file cannot be read) are raised: broken MIME, 8-bit bytes, a
    missing header or a header with an encoded line break are shown as
    they are.
    """
    path = Path(path)
    try:
        with path.open("rb") as fh:
            data = fh.read(SHOWN_BYTES)
    except FileNotFoundError:
        raise NotFound(f"no letter {path.name} in the outbox") from None
    except OSError as exc:
        raise StorageError(f"cannot read {path.name}: {exc.strerror or exc}") from exc
    try:
        message = email.message_from_bytes(data, policy=email.policy.compat32)
        headers = [(_shown_header(name), _shown_header(value))
                   for name, value in message.raw_items()][:SHOWN_HEADERS]
    except _UNREADABLE:
        return ShownLetter([], plain=_shown_body(data, "utf-8"))
    shown = ShownLetter(headers)
    for part in _parts(message):
        kind = part.get_content_type()
        if kind in ("text/plain", "text/html") and not getattr(shown, kind[5:]):
            try:
                payload = part.get_payload(decode=True)
                charset = part.get_content_charset() or "utf-8"
            except _UNREADABLE:
                continue
            if isinstance(payload, bytes):
                setattr(shown, kind[5:], _shown_body(payload, charset))
    return shown


def _parts(message: email.message.Message) -> list[email.message.Message]:
    try:
        return list(message.walk())
    except _UNREADABLE:
        return [message]


def _shown_header(value: object) -> str:
    from email.header import decode_header, make_header

    text = str(value)[:SHOWN_HEADER]
    try:
        text = str(make_header(decode_header(text)))
    except _UNREADABLE:
        pass  # shown as written
    try:  # 8-bit bytes in a header: shown as UTF-8 where they are
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return clean_header_text(text)


def _shown_body(data: bytes, charset: str) -> str:
    try:
        text = data.decode(charset, "replace")
    except (LookupError, ValueError):  # a charset Python does not know or cannot replace in
        text = data.decode("utf-8", "replace")
    return _CONTROL.sub("\ufffd", text.replace("\r\n", "\n"))
