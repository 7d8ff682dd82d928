"""The sender: one run, step by step as docs/design/run.md#run-steps describes it.

Hold this package beside the original's "Порядок работы Почтовой Выхухоли" and
that page: :func:`run` takes the steps in order, one line each; the numbers are
the page's.

1. :func:`~.steps.check_mode`   — debug mode or a self-block: nothing is sent;
   :func:`~.steps.read_bounces` — the bounce mailbox, in a slice of the time;
   :func:`~.confirmations.resend_confirmations` — what a page could not send or debug mode held;
2. :func:`~.news.send_newsletters` — "letters to all users", at most
   ``news_per_run`` (the report of a finished one: :mod:`.news_report`);
3. :func:`~.steps.choose_service` — the enabled service served longest ago;
4. :func:`~.serial.send_series` — its due letters, then same-DB services while
   quota and time remain;
5. :func:`~.serial.send_reminders` — reminders to the unconfirmed; the
   deletions of the unconfirmed and of those who finished the series are
   applied by the fold (:mod:`.fold`);
6. :func:`~.serial.hold_db`      — folds the run's letters into the files and
   renames the DB lock back to free on the way out;
7. the clock, checked before every letter (:meth:`Run.may_send`, in
   :func:`~.batch.send_batch`), and kill detection in
   :func:`~vykhukhol.sender.doors.take_lock`;
8. a busy lock of a live run: ``take_lock`` refuses and alerts.

A step that ends the run raises :class:`~.runtime.RunEnds` (having said why);
:func:`take_steps` takes no step after it.

Durability comes from :mod:`vykhukhol.sender.journal`: each letter is journalled
before and after it leaves (:meth:`Sending.deliver`), and the journal is folded
into the data files at the end of the step that holds the lock (or by the
next run, after a kill). The run's machinery — clock, quotas, limits,
transport — lives in :mod:`vykhukhol.sender.runtime`, the locks in
:mod:`vykhukhol.sender.doors`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself is not imported: the idle tick pays for every import
if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from vykhukhol.datadir import DataDir
    from vykhukhol.sender.runtime import Report, Run
    from vykhukhol.settings import Settings


def run(data: DataDir, settings: Settings, clock: Callable[[], float] | None = None,
        now: Callable[[], datetime] | None = None) -> Report:
    """One run of the sender. Refuses (:class:`NoSecret`) before it takes
    anything when links cannot be signed."""
    import time

    from vykhukhol.errors import MissingModule, NoSecret, StorageError
    from vykhukhol.sender.runtime import Run
    from vykhukhol.states import Outcome
    from vykhukhol.timeutil import format_duration

    if settings.secret_problem:
        raise NoSecret(settings.secret_problem)
    current = Run(data, settings, clock or time.monotonic, now)
    current.log.write(f"run started (time_limit {format_duration(current.time_limit)}, "
                      f"news_per_run {current.news_left}, serial_per_run {current.serial_left})")
    try:
        take_steps(current)
    except StorageError as exc:
        current.log.error(f"run ended early: {exc.message}")
        current.stop(Outcome.STORAGE)
    except ImportError as exc:  # a host that vendored too little (docs/deploying/apache.md#apache-step-1): one line
        current.log.error(f"run ended early: {MissingModule.of(exc).message}")
        current.stop(Outcome.TEMPFAIL)
    finally:
        finish(current)
    return current.report


def take_steps(run: Run) -> None:
    """The steps of docs/design/run.md#run-steps in order, one line each; a step that ends the run raises
    RunEnds, and no step after it is taken."""
    from vykhukhol.newsletters.feeds import follow_feeds
    from vykhukhol.sender.confirmations import resend_confirmations
    from vykhukhol.sender.news import send_newsletters
    from vykhukhol.sender.runtime import RunEnds
    from vykhukhol.sender.serial import hold_db, send_reminders, send_series
    from vykhukhol.sender.steps import check_mode, choose_service, read_bounces

    try:
        check_mode(run)                                     # step 1
        read_bounces(run)                                   # step 1 too: the bounce mailbox
        resend_confirmations(run)                           # what a page could not send or debug held
        send_newsletters(run)                               # step 2
        follow_feeds(run)                                   # the end of step 2: the feeds' new items
        service = choose_service(run)                       # step 3
        with hold_db(run, service) as held:                 # step 6 on the way out
            send_series(run, service, held)                 # step 4
            send_reminders(run, held.worked, held.book)     # step 5
    except RunEnds:
        return


def finish(run: Run) -> None:
    """Whatever happened: unused sending allowance given back, the refusals
    told, the webhooks' events delivered, the transport closed, the day's count, the letters each target sent
    (for its brakes), the run's last log line, the public archive, the idle
    proof and the cron's pace (for the pages that watch it)."""
    from vykhukhol.archive import publish
    from vykhukhol.errors import VykhukholError
    from vykhukhol.files import runlog
    from vykhukhol.sender import idle
    from vykhukhol.sender.daily import count_daily
    from vykhukhol.watch import cronwatch
    from vykhukhol.watch.brakes import count_run as count_brakes
    from vykhukhol.watch.refusal_alerts import tell_refusals
    from vykhukhol.webhooks import deliver_in_run as deliver_webhooks

    try:
        run.allowance.settle()
    except VykhukholError as exc:
        run.log.error(f"the sending counters could not be updated: {exc.message}")
    tell_refusals(run, run.lease, run.letters_out, run.refusals)
    deliver_webhooks(run, run.time_limit, run.elapsed())  # the events, in a small share of the time
    run.close()
    count_daily(run)
    count_brakes(run, run.report.sent, run.report.gone)  # the letters each target sent, for its brakes
    run.report.ended = run.now()
    run.log.write(runlog.ended_line(run.elapsed(), run.report.outcome.label("en"),
                                    sum(run.report.sent.values())))
    # what went public in this run is published in the archives
    publish.after_run(run.data, run.settings, run.report.items, run.report.sent, run.now, run.log)
    idle.after_run(run)  # nothing due: the proof that lets the next ticks skip all this
    cronwatch.note_gaps(run.data)  # the cron's pace, for the pages that watch it
