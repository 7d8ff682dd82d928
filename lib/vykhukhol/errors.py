"""The one exception hierarchy of Vykhukhol.

Every error a user can cause or meet carries the sentence they should read and
an HTTP-like status; the CLI prints ``message`` on one line, the web apps turn
``status`` into a page. Nothing else decides how an error looks.
"""

from __future__ import annotations


class VykhukholError(Exception):
    """Base class: ``message`` is for the user, ``status`` for the web."""

    status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def text(self, lang: str) -> str:
        """``message`` for a reader of ``lang`` (most errors have only English)."""
        return self.message


class BadInput(VykhukholError):
    """A value given by the user (form, CLI, settings, file line) is not valid."""

    status = 400


class Forbidden(VykhukholError):
    status = 403


class NotFound(VykhukholError):
    """A named thing (service, DB, job, letter, subscriber) does not exist."""

    status = 404


class Conflict(VykhukholError):
    """The thing exists already, or the request clashes with the current state."""

    status = 409


class LockBusy(VykhukholError):
    """A rename lock is held by another run."""

    status = 503


class StorageError(VykhukholError):
    """The disk refused a write (full, permission denied); the old file is intact."""

    status = 500


class NoSecret(VykhukholError):
    """security.secret is missing or too short: nothing may be signed (SPEC 13)."""

    status = 503


class OverBudget(BadInput):
    """A letter template went over the bounds of one render (SPEC 13, README
    section 4): too slow, or too much text. ``reason`` is an English sentence
    with ``{placeholders}`` and a Russian translation in :mod:`vykhukhol.i18n`."""

    def __init__(self, what: str, line: int | None, reason: str, **values: object) -> None:
        self.what, self.line, self.reason, self.values = what, line, reason, values
        super().__init__(self.text("en"))

    def text(self, lang: str) -> str:
        from vykhukhol.i18n import tr

        where = "" if self.line is None else tr(lang, "line {line}: ", line=self.line)
        return tr(lang, "{what}: {where}{reason} (letter templates are bounded: README, section 4)",
                  what=tr(lang, self.what), where=where,
                  reason=tr(lang, self.reason, **self.values))
