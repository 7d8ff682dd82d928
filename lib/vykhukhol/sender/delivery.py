"""A run's letters on their way (docs/design/run.md#run-failures): every letter
goes through :meth:`Sending.deliver`, which journals it before and after and
answers with a :class:`Delivery`. With several SMTP connections
(``mail.smtp_connections``) the "after" comes as each connection answers,
and :meth:`Sending.drain` waits for the last ones before a journal is folded.

:class:`Sending` is the part of :class:`~.runtime.Run` that talks to the
mail server; the clock and quotas it asks are the run's own.
"""

from __future__ import annotations

from collections.abc import Callable
from email.message import EmailMessage
from enum import Enum
from typing import TYPE_CHECKING

import vykhukhol.sender.journal as journal
import vykhukhol.watch.alerts as alerts
from vykhukhol import mail
from vykhukhol.errors import BadInput, MissingModule, OverBudget, VykhukholError
from vykhukhol.mail.dkim import DkimKeyError
from vykhukhol.mail.lanes import Finished, Lanes
from vykhukhol.mail.message import Outgoing
from vykhukhol.newsletters import missed
from vykhukhol.sender.replies import read_refusal
from vykhukhol.states import Outcome
from vykhukhol.timeutil import format_time
from vykhukhol.watch.receivers import group_of

if TYPE_CHECKING:  # the e-mail package is imported only by runs that send
    from vykhukhol.sender.runtime import Run

HARD_SHARE = 0.8       # no SMTP command may wait past this share of time_limit
SMTP_TIMEOUT_MAX = 20.0  # seconds one SMTP command may take at most


class Delivery(Enum):
    """How :meth:`Sending.deliver` ended for one letter (the first four are the
    journal's words for it)."""

    SENT = journal.SENT
    FAILED = journal.FAILED
    TEMPFAIL = journal.TEMPFAIL        # not sent, not counted: a later run retries
    IN_DOUBT = journal.IN_DOUBT        # the server may have it: never sent again
    SKIPPED = journal.SKIPPED          # a suppressed address: nothing sent, not counted
    BROKEN = "broken"    # the letter cannot be made (a template broken by FTP, or too heavy)
    HANDED = "handed"    # on its way over one of several connections, counted like a sent one

    @property
    def counted(self) -> bool:
        """Whether it counts against the run's quota."""
        return self not in (Delivery.TEMPFAIL, Delivery.BROKEN, Delivery.SKIPPED)


_BY_WORD = {delivery.value: delivery for delivery in Delivery}


class Sending:
    """The transport, the lanes and :meth:`deliver` of a :class:`~.runtime.Run`."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._transport: mail.Transport | None = None
        self._lanes: Lanes | None = None          # several connections, when allowed
        self._mail_config: mail.MailConfig | None = None
        self._prepared = False  # the transport's needs (DKIM signer) checked, see deliver

    def mail_config(self) -> mail.MailConfig:
        """The transport's settings, made once a run (both one connection and
        the lanes open from it)."""
        if self._mail_config is None:
            self._mail_config = mail.config_from_settings(self.run.settings, self.run.data.outbox)
            self._mail_config.timeout = min(SMTP_TIMEOUT_MAX, self.run.time_limit * HARD_SHARE)
        return self._mail_config

    def transport(self) -> mail.Transport | _OverLanes:
        lanes = self.lanes()
        if lanes is not None:  # the run's own letters take a lane too: never one connection more
            return _OverLanes(self, lanes)
        return self._connection()

    def _connection(self) -> mail.Transport:
        if self._transport is None:
            self._transport = mail.open_transport(self.mail_config())
        self._transport.set_deadline(self.hard_deadline())
        return self._transport

    def hard_deadline(self) -> float:
        """The clock reading after which no SMTP command may still wait."""
        return self.run.t0 + self.run.time_limit * HARD_SHARE - self.run.reserve

    def close(self) -> None:
        if self._lanes is not None:
            lanes, self._lanes = self._lanes, None
            self._settle(lanes.close())
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    def deliver(self, book: journal.Journal, target: str, email: str, item: str,
                build: Callable[[], EmailMessage | Outgoing],
                meanwhile: Callable[[], object] | None = None
                ) -> Delivery:
        """Journal, send, journal. Returns the outcome: sent, failed, tempfail,
        skipped (a suppressed address: nothing sent, not counted), in doubt, or
        BROKEN when the letter itself cannot be made (the caller stops serving
        ``target``: every letter of it would fail the same way).
        ``meanwhile`` (the next letter's :meth:`Copy.make`) runs while the
        server works on this letter; the letter it returns lets an SMTP
        transport send that letter's MAIL FROM ahead.

        With several SMTP connections (``mail.smtp_connections``) the letter
        is handed to a free one once its intent is on disk, and HANDED comes
        back at once: it counts against the quota like a sent letter, and its
        outcome is journalled when it comes (at the latest by :meth:`drain`)."""
        run = self.run
        moment = format_time(run.now())
        if email in run.suppressed:  # every letter of a run passes here: the one gate
            run.log.write(f"{target}: {email} is on the suppression list; letter {item} skipped")
            book.note(journal.SKIPPED, moment, target, email, item,
                      why=missed.why_field(missed.Why.SUPPRESSED))
            return Delivery.SKIPPED
        try:
            mail.check_address(email)
        except BadInput as exc:
            run.log.write(f"{target}: {email} is not an address mail can go to: {exc.message}")
            book.note(journal.FAILED, moment, target, email, item,
                      why=missed.why_field(missed.Why.REFUSED, exc.message))
            return Delivery.FAILED
        try:
            message = build()
        except BadInput as exc:
            run.log.error(f"{target}: letter {item} cannot be made: {exc.message}; "
                           "it is skipped until it is fixed (nobody loses or skips it)")
            run.alert(alerts.CANNOT_RENDER if isinstance(exc, OverBudget) else alerts.CANNOT_MAKE,
                       detail=f"{target}, {item}: {exc.message}")  # the owner must know it
            return Delivery.BROKEN
        except ImportError as exc:  # a host that vendored too little (docs/deploying/apache.md#apache-step-1)
            run.log.error(f"{target}: {MissingModule.of(exc).message}; nothing is sent "
                           "until it is fixed")
            run.stop(Outcome.TEMPFAIL)
            return Delivery.TEMPFAIL  # not begun: not counted, nothing in doubt
        if not self._prepared and not self._prepare(target):
            return Delivery.TEMPFAIL  # not begun: not counted, nothing in doubt
        lanes = self.lanes()
        if lanes is not None:
            # A lane frees only once its letter's outcome is journalled: no
            # more than smtp_connections letters are ever in doubt.
            self._settle(lanes.wait_free())
            if not run.stopped and run.time_left() <= 0:
                run.stop(Outcome.TIME)
            if run.stopped:
                return Delivery.TEMPFAIL  # not begun: not counted
        if not run.allowance.take():
            run.stop(Outcome.LIMIT)
            return Delivery.TEMPFAIL
        on_disk = book.intend(moment, target, email, item)
        if lanes is not None:
            on_disk()
            lanes.hand(message, email, self.hard_deadline(), (book, target, email, item, moment))
            return Delivery.HANDED
        began = run.clock()
        try:
            self._connection().send(message, email, ready=on_disk, meanwhile=meanwhile)
        except mail.DeliveryError as exc:
            ended = self._journal_end(book, target, email, item, moment, exc, run.clock() - began)
        else:
            ended = self._journal_end(book, target, email, item, moment, None, run.clock() - began)
        return _BY_WORD[ended]  # not Delivery(ended): an Enum call, on every letter's path

    def _prepare(self, target: str) -> bool:
        """Before the run's first intent: what every letter needs is at hand
        (the DKIM key and the modules that sign). When it is not, the run
        says so in one line and stops: no letter touched, none in doubt."""
        try:
            lanes = self.lanes()
            if lanes is not None:
                lanes.prepare()
            else:
                self._connection().prepare()
        except (DkimKeyError, MissingModule) as exc:
            self.run.log.error(f"{target}: {exc.message}; nothing is sent unsigned, "
                           "sending stops until it is fixed")
            self.run.stop(Outcome.TEMPFAIL)
            return False
        self._prepared = True
        return True

    def _journal_end(self, book: journal.Journal, target: str, email: str, item: str,
                     moment: str, exc: mail.DeliveryError | None, seconds: float) -> str:
        """Note how a letter ended (in doubt: its intent stays alone)."""
        run = self.run
        if exc is not None and exc.stage == "data-unanswered":
            # The server may have the letter: leave the intent alone, so it
            # is folded "in doubt" and never sent twice.
            run.log.write(f"{target}: the answer for {email} was lost ({exc.detail}); "
                           "the letter is in doubt and will not be sent again")
            run.stop(Outcome.TEMPFAIL)
            return journal.IN_DOUBT
        cause = why = ""
        if exc is not None:
            outcome, cause = read_refusal(run, exc, target, email, item)
            why = missed.refusal(exc.temporary, exc.code, exc.detail)  # what the ledger keeps
            if cause in (journal.GONE, journal.GONE_IN_DOUBT):
                run.report.gone[target] += 1  # for the brakes (watch/brakes.py)
        else:
            outcome = journal.SENT
            run.deferrals.forget(target, email, item)
            run.report.sent[target] += 1
            run.report.receivers[group_of(email)] += 1  # Gmail's bulk line: see .receivers
            run.report.items[target].add(item)  # which letters went out: the archive's question
        if outcome in (journal.SENT, journal.FAILED):
            run.letters_out += 1
        run.slowest_letter = max(run.slowest_letter, seconds)
        book.note(outcome, moment, target, email, item, cause,
                  why if outcome == journal.FAILED else "")
        return outcome

    def lanes(self) -> Lanes | None:
        """The run's SMTP lanes, when it may use more than one connection."""
        if self._lanes is None and self.run.settings["mail.smtp_connections"] > 1 \
                and self.run.settings["mail.transport"] == "smtp":
            config = self.mail_config()
            mail.open_transport(config)  # its settings checked here, in this thread
            self._lanes = Lanes(config, config.smtp_connections, mail.open_transport)
        return self._lanes

    def drain(self) -> None:
        """Wait for the letters still on their way and journal how each ended:
        called before a journal is folded."""
        if self._lanes is not None:
            while self._lanes.in_flight:
                self._settle(self._lanes.finished(block=True))

    def _settle(self, ends: list[Finished]) -> None:
        for end in ends:
            book, target, email, item, moment = end.tag
            exc = end.error
            if isinstance(exc, VykhukholError):  # a settings error, as in Transport.send
                self.run.log.error(f"{target}: {email} was not sent: {exc.message}")
                self.run.stop(Outcome.SETTINGS)
                book.note(journal.TEMPFAIL, moment, target, email, item)
            elif exc is not None and not isinstance(exc, mail.DeliveryError):
                raise exc  # a defect: the letter's intent stays, in doubt
            else:
                self._journal_end(book, target, email, item, moment, exc, end.seconds)



class _OverLanes:
    """What :meth:`Sending.transport` gives while the run has lanes: the admin's
    letters and alerts wait for a free lane and for their own answer."""

    def __init__(self, sending: Sending, lanes: Lanes) -> None:
        self.sending, self.lanes = sending, lanes

    def send(self, msg: EmailMessage | Outgoing, recipient: str) -> None:
        sending, lanes = self.sending, self.lanes
        sending._settle(lanes.wait_free())
        mine = object()
        lanes.hand(msg, recipient, sending.hard_deadline(), mine)
        while True:
            ends = lanes.finished(block=True)
            sending._settle([end for end in ends if end.tag is not mine])
            for end in ends:
                if end.tag is mine:
                    if end.error is not None:
                        raise end.error
                    return

    def set_deadline(self, deadline: float | None) -> None:
        return None

    def close(self) -> None:
        return None
