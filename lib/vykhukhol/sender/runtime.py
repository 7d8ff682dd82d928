"""One run's machinery: its clock, quotas, transport, log and report, and
the sending limits shared across runs.

:mod:`vykhukhol.sender` holds the steps of SPEC 5 and uses what is here:
:class:`Run` (step 7's clock is :meth:`Run.may_send`; every letter goes
through :meth:`Run.deliver`, which journals it before and after and answers
with a :class:`Delivery` — with several SMTP connections the "after" comes
as each connection answers, and :meth:`Run.drain` waits for the last ones
before a journal is folded). The locks at the run's door (steps 6, 7, 8) and
the admin's mode switch are in :mod:`vykhukhol.sender.doors`.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from vykhukhol.addresses import email_key
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, MissingModule, OverBudget, VykhukholError
from vykhukhol.files import kv
from vykhukhol.sender import alerts, journal
from vykhukhol.sender.runlog import RunLog
from vykhukhol.settings import Settings
from vykhukhol.states import Outcome
from vykhukhol.timeutil import after, format_duration, format_time, parse_time, seconds_between

if TYPE_CHECKING:  # the e-mail package is imported only by runs that send
    from vykhukhol import mail
    from vykhukhol.mail.lanes import Lanes
    from vykhukhol.members.suppression import Checker

SEND_SHARE = 0.5       # share of time_limit in which new letters may start
HARD_SHARE = 0.8       # no SMTP command may wait past this share of time_limit
SMTP_TIMEOUT_MAX = 20.0  # seconds one SMTP command may take at most
REWRITE_RATE = 4e6     # bytes a second a parse-and-rewrite manages (measured 3-5 MB/s, tests/bench)
COPY_RATE = 50e6       # bytes a second a rewrite that copies most lines unparsed manages (measured 135)
TEMPFAIL_GIVE_UP = 3 * 86400  # a letter failing temporarily this long becomes failed
# A recipient deferred at RCPT (greylisting, a busy mailbox) waits this long
# before its next try, longer each time (SPEC 5, "Delivery failures").
DEFER_PAUSES = (15 * 60, 3600, 4 * 3600, 16 * 3600)



class RunEnds(Exception):  # noqa: N818 - a signal, not an error
    """The one way a step of SPEC 5 ends the run: raised by the step (after it
    said why — an alert, a log line, :meth:`Run.stop`), caught by
    :func:`vykhukhol.sender.take_steps`, which takes no further step."""


class Delivery(Enum):
    """How :meth:`Run.deliver` ended for one letter (the first four are the
    journal's words for it)."""

    SENT = journal.SENT
    FAILED = journal.FAILED
    TEMPFAIL = journal.TEMPFAIL        # not sent, not counted: a later run retries
    IN_DOUBT = journal.IN_DOUBT        # the server may have it: never sent again
    SKIPPED = journal.SKIPPED          # a suppressed address (SPEC 12): nothing sent, not counted
    BROKEN = "broken"    # the letter cannot be made (a template broken by FTP, or too heavy)
    HANDED = "handed"    # on its way over one of several connections, counted like a sent one

    @property
    def counted(self) -> bool:
        """Whether it counts against the run's quota."""
        return self not in (Delivery.TEMPFAIL, Delivery.BROKEN, Delivery.SKIPPED)


@dataclass
class Report:
    """What a run did; ``text()`` is the cron URL's answer and the CLI's output."""

    lease: str
    started: datetime
    ended: datetime | None = None
    outcome: Outcome = Outcome.DONE
    sent: Counter = field(default_factory=Counter)
    items: defaultdict = field(default_factory=lambda: defaultdict(set))  # target → items sent
    lines: list[str] = field(default_factory=list)

    def text(self) -> str:
        out = [f"run {self.lease}", f"started {format_time(self.started)}"]
        out += self.lines
        for target, count in sorted(self.sent.items()):
            out.append(f"handed over {count} for {target}")  # accepted by the server: SPEC 12
        out.append(f"ended {format_time(self.ended)}: {self.outcome.value}")
        return "\n".join(out) + "\n"


class Run:
    """One run's clock, quotas, transport and log."""

    def __init__(self, data: DataDir, settings: Settings,
                 clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] | None = None) -> None:
        from vykhukhol.timeutil import now as utc_now

        self.data = data
        self.settings = settings
        self.clock = clock
        self.now = now or utc_now
        self.lease = secrets.token_hex(8)
        self.t0 = clock()
        self.started = self.now()
        self.log = RunLog(data, self.lease)
        self.report = Report(self.lease, self.started, lines=self.log.lines)
        self.time_limit = settings["time_limit"]
        self.news_left = settings["news_per_run"]
        self.serial_left = settings["serial_per_run"]
        self.reserve = 0.0          # seconds kept for rewrites still to come
        self.slowest_letter = 0.0   # seconds the slowest letter of this run took
        self.stopped: Outcome | None = None
        self._transport: mail.Transport | None = None
        self._lanes: Lanes | None = None  # several connections, when allowed
        self._prepared = False      # the transport's needs (DKIM signer) checked, see deliver
        self.allowance = Allowance(self)
        self.presses: dict = {}     # compose.Presses: each letter's shared parts, made once
        self._tempfails: dict[str, dict[str, str]] = {}  # target -> its lines in state/tempfail
        self.letters_out = 0        # letters handed over or refused: what refusals are measured against
        self.refusals: list[tuple[str, str]] = []  # (run, reason): refused for the sender's reasons
        self._suppressed: Checker | None = None  # read at the run's first letter

    @property
    def suppressed(self) -> Checker:
        """The suppression list (SPEC 12), read once a run: ``email in run.suppressed``.
        Read after the bounce mailbox, so what it suppressed counts already."""
        if self._suppressed is None:
            from vykhukhol.members import suppression

            self._suppressed = suppression.Checker(
                self.data, suppression.secret_of(self.settings))
        return self._suppressed

    # -- step 7: the clock ------------------------------------------------
    def elapsed(self) -> float:
        return self.clock() - self.t0

    def time_left(self) -> float:
        """Seconds in which a new letter may still start."""
        budget = self.time_limit * SEND_SHARE
        return budget - self.elapsed() - self.reserve - self.slowest_letter

    def may_send(self, quota: str) -> bool:
        """Checked before every letter: time, quota, limits, a stop."""
        if self.stopped:
            return False
        if self.time_left() <= 0:
            self.stop(Outcome.TIME)
        elif getattr(self, quota) <= 0:
            self.stop(Outcome.QUOTA, soft=True)
            return False
        elif not self.allowance.room():
            self.stop(Outcome.LIMIT)
        return not self.stopped

    def stop(self, outcome: Outcome, soft: bool = False) -> None:
        """Stop sending; a quota stop only ends one kind of letters."""
        if self.report.outcome in (Outcome.DONE, Outcome.QUOTA) \
                or outcome in (Outcome.STORAGE, Outcome.SETTINGS):
            self.report.outcome = outcome
        if not soft:
            self.stopped = outcome

    def rewrite_seconds(self, *paths, rate: float = REWRITE_RATE) -> float:
        """How long reading and rewriting these files is expected to take
        (parsing every line; ``rate=COPY_RATE`` when most are copied through)."""
        return sum(p.stat().st_size for p in paths if p.exists()) / rate

    def keep_time_for(self, *paths) -> None:
        """Reserve the time of a fold that copies untouched lines through."""
        self.reserve += self.rewrite_seconds(*paths, rate=COPY_RATE)

    # -- mail -------------------------------------------------------------
    def transport(self) -> mail.Transport:
        from vykhukhol import mail

        lanes = self.lanes()
        if lanes is not None:  # the run's own letters take a lane too: never one connection more
            return _OverLanes(self, lanes)  # type: ignore[return-value]
        if self._transport is None:
            config = mail.config_from_settings(self.settings, self.data.outbox)
            config.timeout = min(SMTP_TIMEOUT_MAX, self.time_limit * HARD_SHARE)
            self._transport = mail.open_transport(config)
        self._transport.set_deadline(self.hard_deadline())
        return self._transport

    def hard_deadline(self) -> float:
        """The clock reading after which no SMTP command may still wait."""
        return self.t0 + self.time_limit * HARD_SHARE - self.reserve

    def close(self) -> None:
        if self._lanes is not None:
            lanes, self._lanes = self._lanes, None
            self._settle(lanes.close())
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    def deliver(self, book: journal.Journal, target: str, email: str, item: str,
                build: Callable[[], object], meanwhile: Callable[[], None] | None = None
                ) -> Delivery:
        """Journal, send, journal. Returns the outcome: sent, failed, tempfail,
        skipped (a suppressed address: nothing sent, not counted), in doubt, or
        BROKEN when the letter itself cannot be made (the caller stops serving
        ``target``: every letter of it would fail the same way).
        ``meanwhile`` (the next letter's :meth:`Copy.make`) runs while the
        server works on this letter.

        With several SMTP connections (``mail.smtp_connections``) the letter
        is handed to a free one once its intent is on disk, and HANDED comes
        back at once: it counts against the quota like a sent letter, and its
        outcome is journalled when it comes (at the latest by :meth:`drain`)."""
        from vykhukhol import mail

        moment = format_time(self.now())
        if email in self.suppressed:  # every letter of a run passes here: the one gate
            self.log.write(f"{target}: {email} is on the suppression list; letter {item} skipped")
            book.note(journal.SKIPPED, moment, target, email, item)
            return Delivery.SKIPPED
        try:
            mail.check_address(email)
        except BadInput as exc:
            self.log.write(f"{target}: {email} is not an address mail can go to: {exc.message}")
            book.note(journal.FAILED, moment, target, email, item)
            return Delivery.FAILED
        try:
            message = build()
        except BadInput as exc:
            self.log.error(f"{target}: letter {item} cannot be made: {exc.message}; "
                           "it is skipped until it is fixed (nobody loses or skips it)")
            if isinstance(exc, OverBudget):  # a template too heavy: the owner must know
                self.alert(alerts.CANNOT_RENDER, detail=f"{target}, {item}: {exc.message}")
            return Delivery.BROKEN
        except ImportError as exc:  # a host that vendored too little (README 14)
            self.log.error(f"{target}: {MissingModule.of(exc).message}; nothing is sent "
                           "until it is fixed")
            self.stop(Outcome.TEMPFAIL)
            return Delivery.TEMPFAIL  # not begun: not counted, nothing in doubt
        if not self._prepared and not self._prepare(target):
            return Delivery.TEMPFAIL  # not begun: not counted, nothing in doubt
        lanes = self.lanes()
        if lanes is not None:
            # A lane frees only once its letter's outcome is journalled: no
            # more than smtp_connections letters are ever in doubt.
            self._settle(lanes.wait_free())
            if not self.stopped and self.time_left() <= 0:
                self.stop(Outcome.TIME)
            if self.stopped:
                return Delivery.TEMPFAIL  # not begun: not counted
        if not self.allowance.take():
            self.stop(Outcome.LIMIT)
            return Delivery.TEMPFAIL
        on_disk = book.intend(moment, target, email, item)
        if lanes is not None:
            on_disk()
            lanes.hand(message, email, self.hard_deadline(), (book, target, email, item, moment))
            return Delivery.HANDED
        began = self.clock()
        try:
            self.transport().send(message, email, ready=on_disk, meanwhile=meanwhile)
        except mail.DeliveryError as exc:
            ended = self._journal_end(book, target, email, item, moment, exc, self.clock() - began)
        else:
            ended = self._journal_end(book, target, email, item, moment, None, self.clock() - began)
        return Delivery(ended)

    def _prepare(self, target: str) -> bool:
        """Before the run's first intent: what every letter needs is at hand
        (the DKIM key and the modules that sign). When it is not, the run
        says so in one line and stops: no letter touched, none in doubt."""
        from vykhukhol.mail.dkim import DkimKeyError

        try:
            lanes = self.lanes()
            if lanes is not None:
                lanes.prepare()
            else:
                self.transport().prepare()
        except (DkimKeyError, MissingModule) as exc:
            self.log.error(f"{target}: {exc.message}; nothing is sent unsigned, "
                           "sending stops until it is fixed")
            self.stop(Outcome.TEMPFAIL)
            return False
        self._prepared = True
        return True

    def _journal_end(self, book: journal.Journal, target: str, email: str, item: str,
                     moment: str, exc: mail.DeliveryError | None, seconds: float) -> str:
        """Note how a letter ended (in doubt: its intent stays alone)."""
        if exc is not None and exc.stage == "data-unanswered":
            # The server may have the letter: leave the intent alone, so it
            # is folded "in doubt" and never sent twice.
            self.log.write(f"{target}: the answer for {email} was lost ({exc.detail}); "
                           "the letter is in doubt and will not be sent again")
            self.stop(Outcome.TEMPFAIL)
            return journal.IN_DOUBT
        cause = ""
        if exc is not None:
            outcome, cause = self._failed(exc, target, email, item)
        else:
            outcome = journal.SENT
            self.forget_tempfail(target, email, item)
            self.report.sent[target] += 1
            self.report.items[target].add(item)  # which letters went out: the archive's question
        if outcome in (journal.SENT, journal.FAILED):
            self.letters_out += 1
        self.slowest_letter = max(self.slowest_letter, seconds)
        book.note(outcome, moment, target, email, item, cause)
        return outcome

    # -- several connections (mail.smtp_connections) ------------------------
    def lanes(self) -> Lanes | None:
        """The run's SMTP lanes, when it may use more than one connection."""
        if self._lanes is None and self.settings["mail.smtp_connections"] > 1 \
                and self.settings["mail.transport"] == "smtp":
            from vykhukhol import mail
            from vykhukhol.mail.lanes import Lanes

            config = mail.config_from_settings(self.settings, self.data.outbox)
            config.timeout = min(SMTP_TIMEOUT_MAX, self.time_limit * HARD_SHARE)
            mail.open_transport(config)  # its settings checked here, in this thread
            self._lanes = Lanes(config, config.smtp_connections, mail.open_transport)
        return self._lanes

    def drain(self) -> None:
        """Wait for the letters still on their way and journal how each ended:
        called before a journal is folded."""
        if self._lanes is not None:
            while self._lanes.in_flight:
                self._settle(self._lanes.finished(block=True))

    def _settle(self, ends: list) -> None:
        from vykhukhol import mail

        for end in ends:
            book, target, email, item, moment = end.tag
            exc = end.error
            if isinstance(exc, VykhukholError):  # a settings error, as in Transport.send
                self.log.error(f"{target}: {email} was not sent: {exc.message}")
                self.stop(Outcome.SETTINGS)
                book.note(journal.TEMPFAIL, moment, target, email, item)
            elif exc is not None and not isinstance(exc, mail.DeliveryError):
                raise exc  # a defect: the letter's intent stays, in doubt
            else:
                self._journal_end(book, target, email, item, moment, exc, end.seconds)

    def _failed(self, exc: mail.DeliveryError, target: str, email: str, item: str
                ) -> tuple[str, str]:
        """The journal's outcome for a refused letter, and for ``failed`` its
        cause (SPEC 5): a permanent refusal is read for its reason; a
        temporary one of the recipient (4xx to RCPT) defers that recipient
        alone, one of the server stops the run's sending."""
        if exc.stage == "dkim":  # our settings, not the letter: no letter leaves unsigned
            self.log.error(f"{target}: {exc.detail}; sending stops until the DKIM key is fixed")
            self.stop(Outcome.TEMPFAIL)
            return journal.TEMPFAIL, ""
        if not exc.temporary:
            from vykhukhol.bounces import reasons

            if exc.code is not None:
                reading = reasons.smtp_reason(exc.code, "", exc.detail)
                # Which command was refused is known here, and it decides what
                # "user unknown" means: to RCPT TO, the address; after DATA, a filter.
                said = _ANSWERED.get(exc.stage)
                if said:
                    reading = reasons.read(reading.status, exc.detail, "failed",
                                           str(exc.code), context=said)
            else:  # sendmail's words: read like a report's diagnostic
                reading = reasons.read(text=exc.detail, action="failed")
            if reading.cause is reasons.Cause.DELAY:  # a 5xx never is: read as soft
                reading = reasons.Reading(reasons.Cause.SOFT, reading.reason, reading.status,
                                          reading.code)
            self.log.write(f"{target}: {email} refused ({exc.code or 'no code'}): {exc.detail} "
                           f"[{reading.cause.value}: {reading.log_text()}]")
            self.forget_tempfail(target, email, item)
            if reading.cause is reasons.Cause.SENDER:
                self.refusals.append((self.lease, reading.reason))
            return journal.FAILED, reading.cause.value
        rcpt = exc.stage == "rcpt" and exc.code != 421  # 421: the server closes, for all
        since, tries = self.note_tempfail(target, email, item, defer=rcpt)
        if seconds_between(self.now(), since) >= TEMPFAIL_GIVE_UP:
            self.log.write(f"{target}: {email} failed temporarily for "
                           f"{format_duration(TEMPFAIL_GIVE_UP)}; marked failed")
            self.forget_tempfail(target, email, item)
            return journal.FAILED, "soft"
        code = f" ({exc.code})" if exc.code else ""
        if rcpt:
            pause = DEFER_PAUSES[min(tries, len(DEFER_PAUSES)) - 1]
            self.log.write(f"{target}: {email} deferred{code}: {exc.detail}; tried again in "
                           f"{format_duration(pause)} at the earliest, the others go on")
            return journal.TEMPFAIL, ""
        self.log.write(f"{target}: temporary failure for {email}{code}: {exc.detail}; "
                       "sending stops, a later run retries")
        self.stop(Outcome.TEMPFAIL)
        return journal.TEMPFAIL, ""

    def note_tempfail(self, target: str, email: str, item: str, defer: bool = False
                      ) -> tuple[datetime, int]:
        """Remember when this letter first failed temporarily, how often, and
        (``defer``: its recipient was refused at RCPT) when it may be tried
        again; returns (the first failure's time, the tries so far)."""
        key = _tempfail_key(target, email, item)
        moment = self.now()

        def change(values: dict[str, str]) -> None:
            first, _, tries = _deferral(values.get(key))
            pause = DEFER_PAUSES[min(tries + 1, len(DEFER_PAUSES)) - 1]
            values[key] = " ".join((format_time(first or moment),
                                    format_time(after(moment, pause)) if defer else "-",
                                    str(tries + 1)))

        values = kv.change_kv(self.data.state / "tempfail", change)
        self._tempfails_of(target)[key] = values[key]
        first, _, tries = _deferral(values[key])
        return first or moment, tries

    def deferred(self, target: str, email: str, item: str) -> bool:
        """Whether this letter's recipient is deferred (4xx to RCPT) and its
        pause has not passed yet: then it waits, and the others go on."""
        value = self._tempfails_of(target).get(_tempfail_key(target, email, item))
        if value is None:
            return False
        _, until, _ = _deferral(value)
        return until is not None and until > self.now()

    def deferred_count(self, target: str) -> int:
        """How many of ``target``'s letters wait out a pause now."""
        moment = self.now()
        return sum(1 for value in self._tempfails_of(target).values()
                   if (until := _deferral(value)[1]) is not None and until > moment)

    def forget_tempfail(self, target: str, email: str, item: str) -> None:
        key = _tempfail_key(target, email, item)
        keys = self._tempfails_of(target)
        if key in keys:
            kv.change_kv(self.data.state / "tempfail", lambda v: v.pop(key, None))
            keys.pop(key, None)

    def _tempfails_of(self, target: str) -> dict[str, str]:
        """The remembered failures of ``target``, read once (on its first letter,
        under its lock: only the run holding that lock changes them)."""
        keys = self._tempfails.get(target)
        if keys is None:
            path = self.data.state / "tempfail"
            keys = {k: v for k, v in kv.read_kv(path).items() if k.startswith(f"{target}|")} \
                if path.exists() else {}
            self._tempfails[target] = keys
        return keys

    def alert(self, subject: str, **details: str) -> None:
        try:
            transport = self.transport()
        except VykhukholError:
            transport = None
        alerts.raise_alert(self.data, self.settings, self.log, subject, self.now(),
                           transport, **details)


class _OverLanes:
    """What :meth:`Run.transport` gives while the run has lanes: the admin's
    letters and alerts wait for a free lane and for their own answer."""

    def __init__(self, run: Run, lanes: Lanes) -> None:
        self.run, self.lanes = run, lanes

    def send(self, msg: object, recipient: str) -> None:
        run, lanes = self.run, self.lanes
        run._settle(lanes.wait_free())
        mine = object()
        lanes.hand(msg, recipient, run.hard_deadline(), mine)
        while True:
            ends = lanes.finished(block=True)
            run._settle([end for end in ends if end.tag is not mine])
            for end in ends:
                if end.tag is mine:
                    if end.error is not None:
                        raise end.error
                    return

    def set_deadline(self, deadline: float | None) -> None:
        return None

    def close(self) -> None:
        return None


class Allowance:
    """The hourly and daily caps (SPEC 5, "Sending limits"), shared across runs.

    A run reserves what it may send in one write of ``data/state/counters``
    and gives back what it did not use; a killed run's reservation counts as
    sent, which errs on the side of sending less.
    """

    def __init__(self, run: Run) -> None:
        self.run = run
        self.granted: int | None = None  # None: not reserved yet
        self.used = 0

    def _limits(self) -> tuple[int, int]:
        return self.run.settings["hourly_limit"], self.run.settings["daily_limit"]

    def _buckets(self) -> tuple[str, str]:
        local = self.run.now().astimezone(ZoneInfo(self.run.settings["timezone"]))
        return f"{local:%Y-%m-%dT%H}", f"{local:%Y-%m-%d}"

    def room(self) -> bool:
        """Whether one more letter fits the caps (reserving on first use)."""
        hourly, daily = self._limits()
        if not hourly and not daily:
            return True
        if self.granted is None:
            self._reserve(hourly, daily)
        return self.used < self.granted

    def take(self) -> bool:
        """Count one letter that is about to leave; False when the caps are reached."""
        if not self.room():
            return False
        self.used += 1
        return True

    def _reserve(self, hourly: int, daily: int) -> None:
        wanted = self.run.news_left + self.run.serial_left
        hour, day = self._buckets()

        def change(values: dict[str, str]) -> None:
            in_hour = int(values.get("hour_count", 0)) if values.get("hour") == hour else 0
            in_day = int(values.get("day_count", 0)) if values.get("day") == day else 0
            room = wanted
            if hourly:
                room = min(room, hourly - in_hour)
            if daily:
                room = min(room, daily - in_day)
            self.granted = max(0, room)
            values.update(hour=hour, hour_count=str(in_hour + self.granted),
                          day=day, day_count=str(in_day + self.granted))
        kv.change_kv(self.run.data.state / "counters", change)

    def settle(self) -> None:
        """Give back the letters reserved but not sent (unless the hour turned)."""
        if not self.granted or self.used >= self.granted:
            return
        unused = self.granted - self.used
        hour, day = self._buckets()

        def change(values: dict[str, str]) -> None:
            if values.get("hour") == hour:
                values["hour_count"] = str(max(0, int(values.get("hour_count", 0)) - unused))
            if values.get("day") == day:
                values["day_count"] = str(max(0, int(values.get("day_count", 0)) - unused))
        kv.change_kv(self.run.data.state / "counters", change)


_ANSWERED = {"rcpt": "in reply to RCPT TO command", "data": "in reply to end of DATA command"}


def _deferral(value: str | None) -> tuple[datetime | None, datetime | None, int]:
    """(first failure, not before, tries) of a ``state/tempfail`` line; a line
    written before deferrals holds the first time alone."""
    parts = (value or "").split()

    def time(i: int) -> datetime | None:
        try:
            return parse_time(parts[i]) if len(parts) > i else None
        except BadInput:
            return None
    try:
        tries = int(parts[2]) if len(parts) > 2 else (1 if parts else 0)
    except ValueError:
        tries = 1
    return time(0), time(1), tries


def _tempfail_key(target: str, email: str, item: str) -> str:
    """A letter's key in ``data/state/tempfail``."""
    return f"{target}|{email_key(email)}|{item}"
