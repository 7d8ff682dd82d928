"""States defined once, each with its label in both languages (the English
here, its Russian in the translation catalog).

Pages and reports call ``label(lang)``; nobody spells a state by hand.
Ledger states only move forward: ``pending`` to one of the final ones, and
``sent`` or ``in doubt`` to ``failed`` when a bounce comes back.
"""

from __future__ import annotations

from enum import Enum


class _Labelled(str, Enum):
    def label(self, lang: str = "en") -> str:
        if lang == "en":
            return _LABELS[self]
        from vykhukhol.i18n import ptr

        return ptr(lang, CONTEXT, _LABELS[self])


class SubscriberState(_Labelled):
    NEW = "new"
    ACTIVE = "active"
    DONE = "done"

    @property
    def confirmed(self) -> bool:
        return self is not SubscriberState.NEW


class LedgerState(_Labelled):
    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed"
    SKIPPED = "skipped"
    IN_DOUBT = "in doubt"

    @property
    def final(self) -> bool:
        return self is not LedgerState.PENDING

    def may_become(self, other: LedgerState, bounced: bool = False) -> bool:
        """Forward only: pending to any state; and, for a bounce read later
        (surer news than the server's acceptance), sent or in doubt to failed."""
        return self is other or self is LedgerState.PENDING or (
            bounced and other is LedgerState.FAILED
            and self in (LedgerState.SENT, LedgerState.IN_DOUBT))


class Outcome(_Labelled):
    """Why a run stopped."""

    DONE = "done"
    QUOTA = "quota"
    TIME = "time"
    LIMIT = "limit"
    TEMPFAIL = "temporary failure"
    OFF = "off"
    BLOCKED = "blocked"
    BUSY = "busy"
    STORAGE = "storage error"     # the disk refused a write
    SETTINGS = "settings error"   # a setting keeps letters from leaving (a transport that cannot start)


# Each label's English; the Russian is in the catalog (i18n) under the context
# "state" (a state's "confirmed" is «подтверждён», a column's «подтверждены»).
CONTEXT = "state"
_LABELS: dict[Enum, str] = {
    SubscriberState.NEW: "not confirmed",
    SubscriberState.ACTIVE: "confirmed",
    SubscriberState.DONE: "received the whole series",
    LedgerState.PENDING: "pending",
    LedgerState.SENT: "handed over",  # to the mail server: not "delivered"
    LedgerState.FAILED: "failed",
    LedgerState.SKIPPED: "skipped",
    LedgerState.IN_DOUBT: "in doubt",
    Outcome.DONE: "all done",
    Outcome.QUOTA: "quota reached",
    Outcome.TIME: "time budget reached",
    Outcome.LIMIT: "hourly or daily limit reached",
    Outcome.TEMPFAIL: "temporary delivery failure",
    Outcome.OFF: "script is in debug mode",
    Outcome.BLOCKED: "sender is blocked",
    Outcome.BUSY: "another run holds the lock",
    Outcome.STORAGE: "the disk refused a write",
    Outcome.SETTINGS: "a setting keeps letters from leaving",
}
