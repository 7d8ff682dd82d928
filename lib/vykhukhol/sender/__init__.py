"""The sender: one run, step by step as SPEC 5 describes it.

Hold this package beside seed 000 ("Порядок работы Почтовой Выхухоли") and
SPEC 5: :func:`run` takes the steps in order, one line each; the numbers are
SPEC 5's.

1. :func:`check_mode`           — debug mode or a self-block: nothing is sent;
   :func:`read_bounces`         — the bounce mailbox (SPEC 12), in a slice of the time;
   :func:`resend_confirmations` — what a subscribe page could not send;
2. :func:`~.newsletter.send_newsletters` — "letters to all users", at most
   ``news_per_run`` (the report of a finished one: :mod:`.news_report`);
3. :func:`choose_service`       — the enabled service served longest ago;
4. :func:`~.serial.send_series` — its due letters, then same-DB services while
   quota and time remain;
5. :func:`~.serial.send_reminders` — reminders to the unconfirmed; the
   deletions of the unconfirmed and of those who finished the series are
   applied by the fold (:mod:`.fold`);
6. :func:`~.serial.hold_db`      — folds the run's letters into the files and
   renames the DB lock back to free on the way out;
7. the clock, checked before every letter (:meth:`Run.may_send`, in
   :func:`~.batch.send_batch`), and kill detection in
   :func:`~vykhukhol.locks.take_lock`;
8. a busy lock of a live run: ``take_lock`` refuses and alerts.

Durability comes from :mod:`vykhukhol.journal`: each letter is journalled
before and after it leaves (:meth:`Run.deliver`), and the journal is folded
into the data files at the end of the step that holds the lock (or by the
next run, after a kill). The run's machinery — clock, quotas, limits,
transport — lives in :mod:`vykhukhol.runtime`, the locks in
:mod:`vykhukhol.locks`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from vykhukhol import alerts, archive, idle, runlog, state
from vykhukhol import services as svc
from vykhukhol import subscribers as subs
from vykhukhol.datadir import DataDir
from vykhukhol.errors import (
    BadInput,
    MissingModule,
    NoSecret,
    NotFound,
    StorageError,
    VykhukholError,
)
from vykhukhol.runtime import Report, Run
from vykhukhol.sender.newsletter import send_newsletters
from vykhukhol.sender.serial import hold_db, in_window, send_reminders, send_series
from vykhukhol.series import EPOCH
from vykhukhol.settings import Settings
from vykhukhol.states import Outcome
from vykhukhol.timeutil import format_duration


def run(data: DataDir, settings: Settings, clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] | None = None) -> Report:
    """One run of the sender. Refuses (:class:`NoSecret`) before it takes
    anything when links cannot be signed."""
    if settings.secret_problem:
        raise NoSecret(settings.secret_problem)
    current = Run(data, settings, clock, now)
    current.log.write(f"run started (time_limit {format_duration(current.time_limit)}, "
                      f"news_per_run {current.news_left}, serial_per_run {current.serial_left})")
    try:
        take_steps(current)
    except StorageError as exc:
        current.log.error(f"run ended early: {exc.message}")
        current.stop(Outcome.STORAGE)
    except ImportError as exc:  # a host that vendored too little (README 14): one line
        current.log.error(f"run ended early: {MissingModule.of(exc).message}")
        current.stop(Outcome.TEMPFAIL)
    finally:
        finish(current)
    return current.report


def take_steps(run: Run) -> None:
    """SPEC 5's steps in order, one line each; a step that ends the run returns."""
    if not check_mode(run):                                 # step 1
        return
    read_bounces(run)                                       # SPEC 12, before step 2
    resend_confirmations(run)                               # what a subscribe page could not send
    if not send_newsletters(run):                           # step 2
        return
    service = choose_service(run)                           # step 3
    if service is None:
        return
    with hold_db(run, service) as held:                     # step 6 on the way out
        if held is not None:
            send_series(run, service, held)                 # step 4
            send_reminders(run, held.worked, held.book)     # step 5


def finish(run: Run) -> None:
    """Whatever happened: unused sending allowance given back, the transport
    closed, the day's count, the run's last log line, the public archive, the
    idle proof."""
    try:
        run.allowance.settle()
    except VykhukholError as exc:
        run.log.error(f"the sending counters could not be updated: {exc.message}")
    tell_refusals(run)
    run.close()
    count_daily(run)
    run.report.ended = run.now()
    run.log.write(runlog.ended_line(run.elapsed(), run.report.outcome.label("en"),
                                    sum(run.report.sent.values())))
    archive.after_run(run)  # SPEC 7: what went public in this run is published
    idle.after_run(run)  # nothing due: the proof that lets the next ticks skip all this


def tell_refusals(run: Run) -> None:
    """Refusals for the sender's reasons (SPEC 5): this run's letters and
    refusals at hand-over counted, and one alert for each run whose letters
    came back so past the line (more than 5 %, at least 5; late bounces are
    counted for the run that sent the letter)."""
    # counts.refused_path, without importing the bounces package on an idle tick
    if not (run.letters_out or run.refusals or (run.data.state / "refused").exists()):
        return
    from vykhukhol.bounces import counts

    try:
        if run.letters_out or run.refusals:
            counts.note_refused(run.data, run.refusals, run.now(), {run.lease: run.letters_out})
        due = counts.refusal_alerts(run.data)
    except VykhukholError as exc:
        run.log.error(f"the refusals could not be counted: {exc.message}")
        return
    from vykhukhol.i18n import tr

    lang = run.settings["language"]
    for lease, letters, refused, why in due:
        advice = dict.fromkeys(tr(lang, alerts.ADVICE.get(name, alerts.DEFAULT_ADVICE))
                               for name in sorted(why, key=lambda n: -why[n]))
        run.alert(alerts.SENDER_REFUSED, refused=str(refused), letters=str(letters),
                  detail=f"run {lease}", advice=" ".join(advice),
                  reasons=", ".join(f"{name} ×{n}" for name, n in
                                    sorted(why.items(), key=lambda x: -x[1])))


def count_daily(run: Run) -> None:
    """Letters sent per day, for the admin's chart (60 days kept)."""
    total = sum(run.report.sent.values())
    if not total:
        return
    day = run.now().astimezone(ZoneInfo(run.settings["timezone"])).date().isoformat()

    def change(values: dict[str, str]) -> None:
        values[day] = str(int(values.get(day, "0") or 0) + total)
        for old in sorted(values)[:-60]:
            del values[old]
    try:
        state.change_kv(run.data.state / "daily", change)
    except VykhukholError as exc:
        run.log.error(f"the daily count could not be written: {exc.message}")


def check_mode(run: Run) -> bool:
    """Step 1: in debug mode, or while blocked, nothing is sent."""
    if run.settings["mode"] != "working":
        run.alert(alerts.SCRIPT_OFF)
        run.stop(Outcome.OFF)
        return False
    reason = state.block_reason(run.data)
    if reason is not None:
        run.log.write(f"blocked since a run died: {reason}")
        run.alert(alerts.DOWN_BY_HOSTER, time_limit=format_duration(run.time_limit),
                  age=state.block_age(run.data))
        run.stop(Outcome.BLOCKED)
        return False
    return True


def read_bounces(run: Run) -> None:
    """The bounce mailbox, read and applied in the first quarter of time_limit.
    A mailbox that is down costs a log line, never the sending."""
    if not run.settings["mail.bounce_mailbox"]:
        return
    from vykhukhol.bounces import sources  # imaplib or poplib, flufl.bounce: only here
    budget = run.time_limit * sources.SHARE - run.elapsed()
    summary = sources.read_mailbox(run.data, run.settings, budget, run.clock)
    if summary.read or summary.repeated or summary.problem:
        (run.log.error if summary.problem else run.log.write)(summary.text())


def resend_confirmations(run: Run) -> None:
    """Confirmation letters a subscribe page could not send after its answer
    (state.note_unsent): sent now, inside the sending limits, to addresses
    still unconfirmed. One that fails again temporarily waits for the next run."""
    waiting = state.take_unsent(run.data, run.now())
    if not waiting:
        return
    from vykhukhol import compose, mail  # the e-mail package: only when there is one

    for index, (name, email) in enumerate(waiting):
        try:
            service = svc.find_service(run.data, name)
        except (NotFound, BadInput):
            continue
        sub = subs.find(service.subscribers_path, email)
        if sub is None or sub.state.confirmed or sub.email in run.suppressed:
            continue  # confirmed by a later letter, gone, or suppressed (SPEC 12)
        if run.stopped or run.time_left() <= 0 or not run.allowance.take():
            for later in waiting[index:]:
                state.note_unsent(run.data, *later, EPOCH)
            break
        try:
            message = compose.confirmation(service, run.settings, sub.email, sub.name,
                                           run.lease, run.now(), run.presses)
            run.transport().send(message, sub.email)
        except BadInput as exc:
            run.log.error(f"{name}: the confirmation for {sub.email} cannot be made: {exc.message}")
            continue
        except mail.DeliveryError as exc:
            run.log.write(f"{name}: the confirmation for {sub.email} failed again: {exc.detail}")
            if exc.temporary:  # the server is still down: all of them wait for the next run
                for later in waiting[index:]:
                    state.note_unsent(run.data, *later, EPOCH)
                break
            continue
        run.report.sent[name] += 1
        run.log.write(f"{name}: sent the confirmation the subscribe page could not send to {sub.email}")


def choose_service(run: Run) -> svc.Service | None:
    """Step 3: the enabled service served longest ago (never served: first)."""
    enabled = [s for s in svc.load_services(run.data) if s.enabled]
    if not enabled:
        run.alert(alerts.ALL_OFF)
        return None
    queue = in_window(run, enabled)
    if not queue:
        run.log.write("no enabled service is inside its send window now")
        return None
    return queue[0]
