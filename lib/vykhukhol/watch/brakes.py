"""The brakes (docs/deliverability/reputation.md#brakes): a newsletter or a service whose letters draw too many
complaints, or hit too many dead addresses, stops itself before the mailbox
providers stop the whole site. The one module that decides; the counts are
:mod:`vykhukhol.bounces.tally`'s (``data/state/brakes``).

What is counted, per target, over the last 30 days:

- letters: those handed over, and those refused at hand-over because the
  address is gone (a letter the server refused was still one sent at it),
  added at each run's end (:func:`count_run`);
- complaints (ARF by mail, a provider's callback) and addresses gone (a
  bounce, or a refusal at hand-over), counted for the target whose tag the
  report carries, however late it comes (the bounce batch, once per batch).

The line (:func:`over_line`): complaints at least ``complaint_brake`` per cent
of the letters and at least :data:`LEAST_COMPLAINTS`; or addresses gone at
least ``bounce_brake`` per cent and at least :data:`LEAST_GONE`; ``0`` turns a
brake off. The sender asks :meth:`Brakes.holds` where it chooses what to send
(sender/news.py, sender/steps.py, sender/serial.py): a target past the line is
latched as braked (the alert "dispatch is braked" then) and skipped like a
disabled one until the admin resumes it (:func:`resume`), which forgets its
complaints and addresses gone so far (its letters stay counted): the reports
that braked it do not brake it again.

It does not stop the confirmation letters a person has just asked for, nor
judge the site as a whole: one bad newsletter must not stop the series.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

import vykhukhol.watch.alerts as alerts
from vykhukhol import services as svc
from vykhukhol.bounces import tally
from vykhukhol.bounces.tally import COMPLAINTS, GONE, NEWSLETTER, SERVICE, target
from vykhukhol.errors import VykhukholError
from vykhukhol.files import events
from vykhukhol.timeutil import format_time, now

if TYPE_CHECKING:
    from collections.abc import Mapping

    from vykhukhol.datadir import DataDir
    from vykhukhol.settings import Settings
    from vykhukhol.watch.watched import Watched

__all__ = ["COMPLAINTS", "GONE", "LEAST_COMPLAINTS", "LEAST_GONE", "NEWSLETTER", "SERVICE",
           "Brake", "Brakes", "count_run", "over_line", "reason", "resume", "said", "status",
           "target"]

LEAST_COMPLAINTS = 3   # complaints below this never brake, whatever the share
LEAST_GONE = 10        # addresses gone below this never brake, whatever the share
SUBJECTS = {SERVICE: alerts.BRAKED, NEWSLETTER: alerts.NEWS_BRAKED}  # the alert of each kind


def _(text: str) -> str:
    """Marks a text for the catalog (tools/i18n.py extract); the caller translates it."""
    return text


# Why, in a few words, for a line that has no room for the alert's sentence
REASONS = {COMPLAINTS: _("complaints: {complaints} of {letters} letters ({complaint_share} %, "
                         "the brake at {complaint_line} %)"),
           GONE: _("addresses gone: {gone} of {letters} letters ({gone_share} %, "
                   "the brake at {bounce_line} %)")}


@dataclass(frozen=True)
class Brake:
    """Why a target is braked: which line it passed, the figures, since when."""

    target: str            # "service NAME" or "newsletter JOB"
    why: str               # COMPLAINTS or GONE: the line it passed
    letters: int           # letters in the window
    complaints: int
    gone: int
    complaint_line: float  # the settings when it braked, per cent
    bounce_line: float
    since: str = "-"       # when the sender latched it (format_time); "-": not yet

    def figures(self) -> dict[str, str]:
        """The values the alert, the pages and the CLI fill their sentence with."""
        def share(count: int) -> str:
            return f"{100.0 * count / self.letters:.2f}" if self.letters else "100"

        return {"name": self.name, "letters": str(self.letters),
                "complaints": str(self.complaints), "gone": str(self.gone),
                "complaint_share": share(self.complaints), "gone_share": share(self.gone),
                "complaint_line": f"{self.complaint_line:g}", "bounce_line": f"{self.bounce_line:g}"}

    @property
    def kind(self) -> str:
        return self.target.partition(" ")[0]

    @property
    def name(self) -> str:
        return self.target.partition(" ")[2]

    def to_json(self) -> dict:
        return {"why": self.why, "letters": self.letters, "complaints": self.complaints,
                "gone": self.gone, "complaint_line": self.complaint_line,
                "bounce_line": self.bounce_line, "since": self.since}


def over_line(settings: Settings, key: str, entry: dict, moment: datetime) -> Brake | None:
    """The brake this target's figures call for now, or None: under both lines."""
    letters, complaints, gone = tally.sums(entry, moment)
    complaint_line, bounce_line = settings["complaint_brake"], settings["bounce_brake"]
    for why, count, least, line in ((COMPLAINTS, complaints, LEAST_COMPLAINTS, complaint_line),
                                    (GONE, gone, LEAST_GONE, bounce_line)):
        # At the line it brakes, below it not: count / letters >= line %, in
        # whole hundredths of a per cent, so 0.1 % of 3000 is exactly 3.
        # No letters counted (sent before this version, or a killed run's): no share, no brake.
        if line and letters and count >= least and count * 10000 >= round(line * 100) * letters:
            return Brake(key, why, letters, complaints, gone, complaint_line, bounce_line)
    return None


def latched(key: str, entry: dict) -> Brake | None:
    """The brake the sender noted on the target's line, if any."""
    held = entry.get("braked")
    if held is None:
        return None
    try:
        return Brake(key, str(held["why"]), int(held["letters"]), int(held["complaints"]),
                     int(held["gone"]), float(held["complaint_line"]),
                     float(held["bounce_line"]), str(held["since"]))
    except (KeyError, TypeError, ValueError):  # spoiled by hand: still braked; a resume frees it
        return Brake(key, COMPLAINTS, 0, 0, 0, 0.0, 0.0)


def status(data: DataDir, settings: Settings, moment: datetime) -> dict[str, Brake]:
    """Every braked target (latched, or past the line and not yet seen by a
    run), for the pages and ``vykhukhol status``."""
    found = {}
    for key, entry in tally.read(data).items():
        brake = latched(key, entry) or over_line(settings, key, entry, moment)
        if brake is not None:
            found[key] = brake
    return found


class Brakes:
    """The sender's question, the file read once: is this target braked?"""

    def __init__(self, run: Watched) -> None:
        self.run = run
        self.entries = tally.read(run.data)

    def holds(self, kind: str, name: str) -> bool:
        key = target(kind, name)
        entry = self.entries.get(key)
        if entry is None:
            return False
        if latched(key, entry) is not None:
            return True
        brake = over_line(self.run.settings, key, entry, self.run.now())
        if brake is None:
            return False
        self._latch(replace(brake, since=format_time(self.run.now())))
        return True

    def _latch(self, brake: Brake) -> None:
        self.entries = tally.latch(self.run.data, brake.target, brake.to_json())
        self.run.log.write(f"{brake.target} is braked ({brake.why} past the line); nothing "
                           "more of it is sent until it is resumed")
        self.run.alert(SUBJECTS[brake.kind], **brake.figures())
        events.emit_quietly(self.run.data.root, "brake.applied",
                            {"kind": brake.kind, "name": brake.name, "why": brake.why,
                             "letters": brake.letters, "complaints": brake.complaints,
                             "gone": brake.gone})


def said(brake: Brake, translate) -> str:
    """The brake in one sentence (the alert's first line) in ``translate``'s language."""
    return translate(alerts.BODIES[SUBJECTS[brake.kind]][0], **brake.figures())


def reason(brake: Brake, translate) -> str:
    """Which line it passed and by how much, in ``translate``'s language."""
    return translate(REASONS.get(brake.why, REASONS[COMPLAINTS]), **brake.figures())


def count_run(run: Watched, sent: Mapping[str, int], gone: Mapping[str, int]) -> None:
    """At a run's end: its letters (``sent``, and ``gone``: hand-over refusals
    of addresses gone) per target, into today's tally."""
    names = set(sent) | set(gone)
    if not names:
        return

    services = {s.name for s in svc.load_services(run.data)}
    letters = {target(SERVICE if name in services else NEWSLETTER, name):
               (sent.get(name, 0) + gone.get(name, 0), gone.get(name, 0))
               for name in names}
    try:
        tally.count_letters(run.data, letters, run.now())
    except VykhukholError as exc:
        run.log.error(f"the brakes' count could not be written: {exc.message}")


def resume(data: DataDir, settings: Settings, kind: str, name: str,
           moment: datetime | None = None) -> bool:
    """The admin's one action: the target goes on; its complaints and
    addresses gone so far are forgotten (its letters stay counted, so what
    comes later is measured against them all). False: it was not braked."""
    key = target(kind, name)
    moment = moment or now()
    return tally.clear(data, key, lambda entry: latched(key, entry) is not None
                       or over_line(settings, key, entry, moment) is not None)
