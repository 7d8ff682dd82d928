"""How a hand-over fails: :class:`TemporaryFailure` (try again later) or
:class:`PermanentFailure` (never), both a :class:`DeliveryError`.

Apart from :mod:`.transport` (which re-exports them) because the
confirmation request a subscribe post pipes to sendmail
(:mod:`.sendmail_pipe`, :mod:`.confirm_letter`) fails the same way without
the e-mail package that the transports' module imports.
"""

from __future__ import annotations


class DeliveryError(Exception):
    """A letter was not accepted.

    ``code`` is the SMTP reply code (or None), ``detail`` the server's or the
    program's words, ``temporary`` whether trying again later may work, and
    ``stage`` where it happened: ``connect`` (connect, TLS, login), ``mail``
    (the envelope sender), ``rcpt``, ``data``, ``send`` (the connection broke
    mid-letter), ``local`` (sendmail, the outbox, an impossible address),
    ``dkim`` (the letter cannot be signed: the key is missing or broken).
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
