"""The outbox transport (one ``.eml`` file a letter) and reading the outbox back."""

from __future__ import annotations

import email
import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from email.message import EmailMessage
from pathlib import Path

from vykhukhol import files
from vykhukhol.errors import BadInput, NotFound, StorageError
from vykhukhol.mail.headers import POLICY
from vykhukhol.mail.message import Outgoing
from vykhukhol.mail.transport import MailConfig, TemporaryFailure, Transport


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
            text = f"Return-Path: <{envelope_from}>\r\n" + (
                msg.data.decode("ascii", "surrogateescape") if isinstance(msg, Outgoing)
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

