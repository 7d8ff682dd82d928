"""One run: its clock and quotas (the clock of docs/design/run.md#run-time-limit is
:meth:`Run.may_send`),
its log and report, and the parts it holds.

:mod:`vykhukhol.sender` holds the steps of docs/design/run.md#run-steps and uses what is here. The
run's other parts live beside it, one idea a module: its letters on their way
(:mod:`.delivery`: :meth:`Sending.deliver`, the transport and the lanes), what a
refusal at hand-over means (:mod:`.replies`), the letters that fail
temporarily (:mod:`.tempfail`), the hourly and daily caps (:mod:`.allowance`).
The locks at the run's door (steps 6, 7, 8) and the admin's mode switch are
in :mod:`.doors`.
"""

from __future__ import annotations

import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import vykhukhol.watch.alerts as alerts
from vykhukhol.datadir import DataDir
from vykhukhol.errors import VykhukholError
from vykhukhol.files.runlog import RunLog
from vykhukhol.members import suppression
from vykhukhol.sender.allowance import Allowance
from vykhukhol.sender.delivery import HARD_SHARE, SMTP_TIMEOUT_MAX, Delivery, Sending
from vykhukhol.sender.tempfail import Deferrals
from vykhukhol.settings import Settings
from vykhukhol.states import Outcome
from vykhukhol.timeutil import format_time
from vykhukhol.timeutil import now as utc_now

if TYPE_CHECKING:
    from vykhukhol.members.suppression import Checker

__all__ = ["COPY_RATE", "HARD_SHARE", "REWRITE_RATE", "SEND_SHARE", "SMTP_TIMEOUT_MAX",
           "Delivery", "Report", "Run", "RunEnds"]

SEND_SHARE = 0.5       # share of time_limit in which new letters may start
REWRITE_RATE = 4e6     # bytes a second a parse-and-rewrite manages (measured 3-5 MB/s, tests/bench)
COPY_RATE = 50e6       # bytes a second a rewrite that copies most lines unparsed manages (measured 135)


class RunEnds(Exception):  # noqa: N818 - a signal, not an error
    """The one way a step ends the run: raised by the step (after it
    said why — an alert, a log line, :meth:`Run.stop`), caught by
    :func:`vykhukhol.sender.take_steps`, which takes no further step."""


@dataclass
class Report:
    """What a run did; ``text()`` is the cron URL's answer and the CLI's output."""

    lease: str
    started: datetime
    ended: datetime | None = None
    outcome: Outcome = Outcome.DONE
    sent: Counter = field(default_factory=Counter)
    receivers: Counter = field(default_factory=Counter)  # big provider → letters (.receivers)
    items: defaultdict = field(default_factory=lambda: defaultdict(set))  # target → items sent
    gone: Counter = field(default_factory=Counter)  # target → refused at hand-over: address gone
    lines: list[str] = field(default_factory=list)

    def text(self) -> str:
        out = [f"run {self.lease}", f"started {format_time(self.started)}"]
        out += self.lines
        for target, count in sorted(self.sent.items()):
            out.append(f"handed over {count} for {target}")  # accepted by the server, not known delivered
        out.append(f"ended {format_time(self.ended)}: {self.outcome.value}")
        return "\n".join(out) + "\n"


class Run:
    """One run's clock, quotas, log and report; its letters leave through
    :class:`~.delivery.Sending`."""

    def __init__(self, data: DataDir, settings: Settings,
                 clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] | None = None) -> None:
        self.data = data
        self.settings = settings
        self.clock = clock
        self.now = now or utc_now
        self.lease = os.urandom(8).hex()  # secrets.token_hex, without importing random
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
        self.allowance = Allowance(data, settings, self.now,
                                   wanted=lambda: self.news_left + self.serial_left)
        self.deferrals = Deferrals(data, self.now)  # letters failing temporarily
        self.presses: dict = {}     # compose.Presses: each letter's shared parts, made once
        self.letters_out = 0        # letters handed over or refused: what refusals are measured against
        self.refusals: list[tuple[str, str]] = []  # (run, reason): refused for the sender's reasons
        self._suppressed: Checker | None = None  # read at the run's first letter
        self.sending = Sending(self)  # the transport, the lanes and deliver

    @property
    def suppressed(self) -> Checker:
        """The suppression list (docs/deliverability/suppression.md#suppression-list), read once a run: ``email in run.suppressed``.
        Read after the bounce mailbox, so what it suppressed counts already."""
        if self._suppressed is None:
            self._suppressed = suppression.Checker(
                self.data, suppression.secret_of(self.settings))
        return self._suppressed

    # -- the clock (docs/design/run.md#run-time-limit) -------------------
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
















    def alert(self, subject: str, **details: str) -> None:
        try:
            transport = self.sending.transport()
        except VykhukholError:
            transport = None
        alerts.raise_alert(self.data, self.settings, self.log, subject, self.now(),
                           transport, **details)

    def close(self) -> None:
        self.sending.close()










