"""The sendmail transport: ``sendmail -i -f ENVELOPE -- RCPT``, the letter on stdin."""

from __future__ import annotations

from collections.abc import Callable
from email.message import EmailMessage

from vykhukhol.mail import sendmail_pipe
from vykhukhol.mail.headers import _LF_POLICY
from vykhukhol.mail.message import Outgoing
from vykhukhol.mail.transport import Transport


class SendmailTransport(Transport):
    """Pipes each letter to ``sendmail -i -f ENVELOPE -- RCPT`` (Unix line ends);
    ENVELOPE is the letter's tagged bounce address (docs/reference/transports.md#transports-envelope).

    The program must be an absolute path to an executable file, and no address
    given to it may read as an option or a file (docs/reference/security.md#security-owner). A program that
    cannot run or such an envelope sender (a hand-edited setting) is a
    temporary failure: nothing is run, and the letter waits until the setting
    is fixed. Such a recipient is a permanent failure of that letter."""

    def _deliver(self, msg: EmailMessage | Outgoing, recipient: str, envelope_from: str,
                 ready: Callable[[], None], meanwhile: Callable[[], object]) -> None:
        path = self.config.sendmail_path
        refused = sendmail_pipe.refusal(path, envelope_from, recipient)
        if refused is not None:
            raise refused
        ready()
        meanwhile()
        # A written letter goes as written (its DKIM signature covers these
        # bytes), only with Unix line ends, as a local sendmail wants them.
        payload = msg.data.replace(b"\r\n", b"\n") if isinstance(msg, Outgoing) \
            else msg.as_bytes(policy=_LF_POLICY)
        sendmail_pipe.pipe(path, self.config.timeout, payload, envelope_from, recipient)
