"""Sending a batch of letters against a quota: the one loop every kind of
letter goes through (newsletters, series letters, reminders).

Each letter is made while the server takes in the one before it
(:class:`Copy`, :func:`one_ahead`), and over SMTP its MAIL FROM leaves as
soon as that one is answered; before each, the run's clock, quota and
limits are asked (docs/design/run.md#run-time-limit, :meth:`~vykhukhol.sender.runtime.Run.may_send`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from email.message import EmailMessage
from enum import Enum
from typing import NamedTuple, TypeAlias

import vykhukhol.sender.journal as journal
from vykhukhol.mail.message import Outgoing
from vykhukhol.newsletters.missed import Why, why_field
from vykhukhol.sender.runtime import Delivery, Run
from vykhukhol.timeutil import format_time

NOT_SUBSCRIBED = why_field(Why.UNSUBSCRIBED)  # a letter without a copy: see Letter.copy
SUPPRESSED = why_field(Why.SUPPRESSED)
Made: TypeAlias = "EmailMessage | Outgoing"  # a letter, whole or written by a press


class Copy:
    """One recipient's letter, made when first asked for, or earlier by
    :meth:`make` while the SMTP server is busy with the letter before it (so
    the two overlap); a failure to make it waits for the asking."""

    def __init__(self, build: Callable[[], Made]) -> None:
        self._build: Callable[[], Made] | None = build
        self._made: Made | None = None
        self._error: Exception | None = None

    def make(self) -> Made | None:
        """Never raises; returns the letter (None when it cannot be made), so
        that an SMTP transport can send its envelope ahead."""
        if self._build is not None:
            build, self._build = self._build, None
            try:
                self._made = build()
            except Exception as exc:  # noqa: BLE001 - kept for __call__, which raises it
                self._error = exc
        return self._made

    def __call__(self) -> Made:
        """The letter (once: the copy lets go of it, a batch can be long)."""
        self.make()
        if self._error is not None:
            raise self._error
        made, self._made = self._made, None
        assert made is not None, "a copy is asked for once"
        return made


def one_ahead(copies: list[Copy | None]
              ) -> Iterator[tuple[Copy | None, Callable[[], object] | None]]:
    """Each copy with what to do while it is sent: make the one after it
    (and hand it to the transport, which may send its MAIL FROM ahead)."""
    for i, here in enumerate(copies):
        after = copies[i + 1] if i + 1 < len(copies) else None
        yield here, (after.make if after is not None else None)


class Letter(NamedTuple):
    """One letter of a batch, as the journal names it."""

    target: str        # the service or the newsletter job
    email: str
    item: str          # the letter's number, "reminder", or the ledger row
    copy: Copy | None  # None: the recipient is no longer subscribed (journalled as skipped)
    sent: Callable[[], None] | None = None  # once it is sent: the fold's part done ahead
    skipped: str = NOT_SUBSCRIBED  # without a copy: why, as the ledger keeps it


class Ended(Enum):
    """Why :func:`send_batch` returned."""

    ALL = "all"            # every letter of the batch had its turn
    STOPPED = "stopped"    # time, quota, limits or a stop: no more letters of this kind
    BROKEN = "broken"      # a letter cannot be made: the rest of the batch waits


def send_batch(run: Run, quota: str, book: journal.Journal, letters: list[Letter],
               broken: set[str] | None = None) -> Ended:
    """Send the letters in order while ``run.may_send(quota)``; each one that
    counts takes one off the run's ``quota``. A letter that cannot be made
    ends the batch, unless ``broken`` is given: then its item goes there and
    the batch's other letters of that item are passed over."""
    for letter, (copy, meanwhile) in zip(letters, one_ahead([each.copy for each in letters]),
                                         strict=True):
        if not run.may_send(quota):
            return Ended.STOPPED
        if broken is not None and letter.item in broken:
            continue  # its recipients wait, untouched, for a run after the fix
        if copy is not None and run.deferrals.deferred(letter.target, letter.email, letter.item):
            continue  # refused at RCPT a short while ago: it waits its pause, the others go on
        if copy is None:
            book.note(journal.SKIPPED, format_time(run.now()), letter.target, letter.email,
                      letter.item, why=letter.skipped)
            continue
        outcome = run.sending.deliver(book, letter.target, letter.email, letter.item, copy, meanwhile)
        if outcome is Delivery.BROKEN:
            if broken is None:
                return Ended.BROKEN
            broken.add(letter.item)
        elif outcome.counted:
            setattr(run, quota, getattr(run, quota) - 1)
            if outcome is Delivery.SENT and letter.sent is not None:
                letter.sent()  # while the server answers the next letter's MAIL
    return Ended.ALL
