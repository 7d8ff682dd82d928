"""The one exception hierarchy of Vykhukhol.

Every error a user can cause or meet carries the sentence they should read and
an HTTP-like status; the CLI prints ``message`` on one line, the web apps turn
``status`` into a page. Nothing else decides how an error looks.

The sentence is an English template and its values, composed once here:
``BadInput("must be from {low} to {high}", low=1, high=65535)``. ``message``
is the English (the CLI's), ``text(lang)`` the same sentence through the
translation catalog (the pages'). A value that is itself an error (the reason
of a wrapped one) or a :class:`Term` (a word such as a field's name) is
translated too; any other value is shown as it is.
"""

from __future__ import annotations


class Term(str):
    """A word inside an error's sentence that is translated with it ("minute")."""


class VykhukholError(Exception):
    """Base class: ``message`` is for the user, ``status`` for the web."""

    status = 500

    def __init__(self, message: str, **values: object) -> None:
        self.template, self.values = message, values
        self.message = message.format(**values) if values else message
        super().__init__(self.message)

    def text(self, lang: str) -> str:
        """The sentence for a reader of ``lang`` (the catalog's translation of
        the template, the values filled in, translated where they can be)."""
        if lang == "en":
            return self.message
        from vykhukhol.i18n import tr

        return tr(lang, self.template, **{name: shown(value, lang) for name, value in self.values.items()})


def shown(value: object, lang: str) -> object:
    """A value of an error's sentence as a reader of ``lang`` sees it."""
    if isinstance(value, VykhukholError):
        return value.text(lang)
    if isinstance(value, Term) and lang != "en":
        from vykhukhol.i18n import tr

        return tr(lang, value)
    return value


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
    """security.secret is missing or too short: nothing may be signed (docs/reference/security.md#security-secrets)."""

    status = 503


class MissingModule(VykhukholError):
    """This Python cannot import a package Vykhukhol needs for what it is
    asked to do: the host's lib/ lacks a dependency (docs/deploying/apache.md#apache-step-1)."""

    @classmethod
    def of(cls, exc: ImportError) -> MissingModule:
        return MissingModule("this Python cannot import the module {module} ({reason}); install the "
                   "dependencies setup.cfg declares (on a host: vendor them into lib/, "
                   "the manual, docs/deploying/apache.md, step 1)", module=exc.name or "?", reason=str(exc))


class OverBudget(BadInput):
    """A letter template went over the bounds of one render
    (docs/using/services.md#template-bounds): too slow, or too much text. ``reason`` is an English sentence
    with ``{placeholders}`` and a Russian translation in :mod:`vykhukhol.i18n`."""

    def __init__(self, what: str, line: int | None, reason: str, **values: object) -> None:
        self.what, self.line, self.reason, self.reason_values = what, line, reason, values
        super().__init__(self.text("en"))

    def text(self, lang: str) -> str:
        from vykhukhol.i18n import tr

        where = "" if self.line is None else tr(lang, "line {line}: ", line=self.line)
        return tr(lang, "{what}: {where}{reason} (letter templates are bounded: the manual, docs/using/services.md, Template bounds)",
                  what=tr(lang, self.what), where=where,
                  reason=tr(lang, self.reason, **self.reason_values))
