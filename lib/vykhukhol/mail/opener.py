"""Choosing a transport: :func:`open_transport` checks a :class:`MailConfig`
and makes the transport it names.

It sits above the transports (:mod:`.smtp`, :mod:`.sendmail`, :mod:`.outbox`),
which build on :mod:`.transport`; none of them imports this module. A
transport's module is imported only when it is chosen, so a run that writes
to the outbox never loads smtplib.
"""

from __future__ import annotations

from vykhukhol.errors import BadInput
from vykhukhol.mail.config import SECURITIES, TRANSPORTS, MailConfig
from vykhukhol.mail.headers import check_address
from vykhukhol.mail.outbox import OutboxTransport
from vykhukhol.mail.sendmail import SendmailTransport
from vykhukhol.mail.smtp import SmtpTransport
from vykhukhol.mail.transport import Transport


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
