"""States defined once, each with its label in both languages.

Pages and reports call ``label(lang)``; nobody spells a state by hand.
Ledger states only move forward: ``pending`` to one of the final ones, and
``sent`` or ``in doubt`` to ``failed`` when a bounce comes back.
"""

from __future__ import annotations

from enum import Enum


class _Labelled(str, Enum):
    def label(self, lang: str = "en") -> str:
        return _LABELS[self][0 if lang == "ru" else 1]


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
    ERROR = "storage error"


_LABELS = {
    SubscriberState.NEW: ("не подтверждён", "not confirmed"),
    SubscriberState.ACTIVE: ("подтверждён", "confirmed"),
    SubscriberState.DONE: ("получил всю серию", "received the whole series"),
    LedgerState.PENDING: ("ждёт", "pending"),
    LedgerState.SENT: ("отправлено", "sent"),
    LedgerState.FAILED: ("отказ", "failed"),
    LedgerState.SKIPPED: ("пропущено", "skipped"),
    LedgerState.IN_DOUBT: ("под сомнением", "in doubt"),
    Outcome.DONE: ("всё сделано", "all done"),
    Outcome.QUOTA: ("квота исчерпана", "quota reached"),
    Outcome.TIME: ("время вышло", "time budget reached"),
    Outcome.LIMIT: ("достигнут часовой или суточный лимит", "hourly or daily limit reached"),
    Outcome.TEMPFAIL: ("временная ошибка доставки", "temporary delivery failure"),
    Outcome.OFF: ("скрипт в режиме отладки", "script is in debug mode"),
    Outcome.BLOCKED: ("скрипт заблокирован", "sender is blocked"),
    Outcome.BUSY: ("база занята другим запуском", "another run holds the lock"),
    Outcome.ERROR: ("диск отказал в записи", "the disk refused a write"),
}
