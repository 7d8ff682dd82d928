"""The sender: one run, step by step as the original describes it (SPEC 5).

Hold this module beside seed 000 ("Порядок работы Почтовой Выхухоли"):
``run()`` calls one function per numbered step, in the original's order —

1. :func:`check_mode`       — debug mode or a self-block: nothing is sent;
   :func:`read_bounces`     — the bounce mailbox (SPEC 12), in a slice of the time;
2. :func:`send_newsletters` — "letters to all users", exactly ``news_per_run``;
3. :func:`choose_service`   — the enabled service served longest ago;
4. :func:`send_series`      — its due letters, then same-DB services while
                              quota and time remain;
5. :func:`remind_and_clean` — reminders, deletion of the unconfirmed and of
                              those who finished the series;
6. :func:`hold_db`          — folds the run's letters into the files and
                              renames the DB lock back to free on the way out;
7. the clock, checked before every letter (:meth:`Run.may_send`), and kill
   detection in :func:`~vykhukhol.runtime.take_lock`;
8. a busy lock of a live run: ``take_lock`` refuses and alerts.

Durability comes from :mod:`vykhukhol.journal`: each letter is journalled
before and after it leaves (:meth:`Run.deliver`), and the journal is folded
into the data files at the end of the step that holds the lock (or by the
next run, after a kill). The run's machinery — clock, quotas, limits,
transport, the locks' door — lives in :mod:`vykhukhol.runtime`.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from itertools import islice
from pathlib import Path
from zoneinfo import ZoneInfo

from vykhukhol import alerts, archive, dueindex, files, idle, journal, newsletters, schedule, state
from vykhukhol import services as svc
from vykhukhol import subscribers as subs
from vykhukhol.addresses import email_key
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, NoSecret, NotFound, StorageError, VykhukholError
from vykhukhol.runtime import (  # noqa: F401 - set_mode: the admin's switch, also here
    BROKEN,
    LOST,
    Copy,
    Report,
    Run,
    one_ahead,
    release,
    set_mode,
    take_lock,
)
from vykhukhol.series import EPOCH, Rules, clean_up, next_action
from vykhukhol.settings import Settings
from vykhukhol.states import LedgerState, Outcome, SubscriberState
from vykhukhol.timeutil import format_duration, format_time, parse_time

# --- the run -----------------------------------------------------------------

def run(data: DataDir, settings: Settings, clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] | None = None) -> Report:
    """One run of the sender, step by step (SPEC 5; the numbers are the original's).
    Refuses (:class:`NoSecret`) before it takes anything when links cannot be signed."""
    if settings.secret_problem:
        raise NoSecret(settings.secret_problem)
    current = Run(data, settings, clock, now)
    current.log.write(f"run started (time_limit {format_duration(current.time_limit)}, "
                      f"news_per_run {current.news_left}, serial_per_run {current.serial_left})")
    try:
        if check_mode(current) and read_bounces(current) and resend_confirmations(current) \
                and send_newsletters(current) is not LOST:                  # steps 1, 2
            service = choose_service(current)                               # step 3
            if service is not None:
                with hold_db(current, service) as held:                     # step 6 on exit
                    if held is not None:
                        send_series(current, service, held)                 # step 4
                        remind_and_clean(current, held.worked, held.book)   # step 5
    except StorageError as exc:
        current.log.error(f"run ended early: {exc.message}")
        current.stop(Outcome.ERROR)
    finally:
        try:
            current.allowance.settle()
        except VykhukholError as exc:
            current.log.error(f"the sending counters could not be updated: {exc.message}")
        current.close()
        count_daily(current)
        current.report.ended = current.now()
        current.log.write(f"run ended after {current.elapsed():.1f}s: "
                          f"{current.report.outcome.label('en')}; "
                          f"letters {sum(current.report.sent.values())}")
        archive.after_run(current)  # SPEC 7: what went public in this run is published
        idle.after_run(current)  # nothing due: the proof that lets the next ticks skip all this
    return current.report


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


# --- step 1 ---------------------------------------------------------------------

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


# --- before step 2: what came back (SPEC 12) ----------------------------------------

def read_bounces(run: Run) -> bool:
    """The bounce mailbox, read and applied in the first quarter of time_limit.
    Always True: a mailbox that is down costs a log line, never the sending."""
    if not run.settings["mail.bounce_mailbox"]:
        return True
    from vykhukhol.bounces import sources  # imaplib or poplib, flufl.bounce: only here
    budget = run.time_limit * sources.SHARE - run.elapsed()
    summary = sources.read_mailbox(run.data, run.settings, budget, run.clock)
    if summary.read or summary.repeated or summary.problem:
        (run.log.error if summary.problem else run.log.write)(summary.text())
    return True


def resend_confirmations(run: Run) -> bool:
    """Confirmation letters a subscribe page could not send after its answer
    (state.note_unsent): sent now, inside the sending limits, to addresses
    still unconfirmed. One that fails again temporarily waits for the next run.
    Always True."""
    waiting = state.take_unsent(run.data, run.now())
    if not waiting:
        return True
    from vykhukhol import compose, mail  # the e-mail package: only when there is one

    for index, (name, email) in enumerate(waiting):
        try:
            service = svc.find_service(run.data, name)
        except (NotFound, BadInput):
            continue
        sub = subs.find(service.subscribers_path, email)
        if sub is None or sub.state.confirmed:
            continue  # confirmed by a later letter, or gone
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
    return True


# --- step 2 ---------------------------------------------------------------------

def send_newsletters(run: Run) -> bool | None:
    """Step 2: due newsletters, oldest start first, ``news_per_run`` letters at most."""
    data = run.data
    due = [job for job in newsletters.list_jobs(data) if job.start <= run.now()]
    lock = newsletters.lock(data)
    book = journal.Journal(data.state / "news.journal", run.lease)
    # Swept even when no job is left (a kill during the last one's rewrite): a
    # live rewrite's file is younger than time_limit, so no lock is needed.
    if files.remove_stale_temps(data.newsletters, run.time_limit):
        run.log.write("removed the temporary files a killed rewrite left in newsletters")
    newsletters.sweep_locks(data)  # and the lock files of jobs that are gone
    if not due and lock.holder() is None and not book.path.exists():
        return True
    taken = take_lock(run, lock, "the newsletters")
    if taken is not True:
        return taken
    touched: set[str] = set()
    try:
        touched |= fold_newsletters(run, book)
        for job in due:
            if not run.may_send("news_left"):
                break
            serve_job(run, job, book)
            touched.add(job.name)
    finally:
        try:
            run.drain()  # the letters still on their way (several connections) journalled
            touched |= fold_newsletters(run, book)
            for name in sorted(touched):
                finish_if_exhausted(run, name)
        finally:  # a full disk while folding still frees the lock; the journal waits
            book.close()
            released = release(run, lock, "the newsletters")
    return True if released else LOST


def serve_job(run: Run, job: newsletters.Job, book: journal.Journal) -> None:
    from vykhukhol import compose, render  # Jinja2 and the e-mail builder: only when sending
    data = run.data
    _, letter_path, list_path = newsletters.paths(data, job.name)
    try:
        subject, text, html = newsletters.read_letter(data, job.name)
        for source, what in ((subject, "subject"), (text, "text"), (html or "", "HTML")):
            render.check_syntax(source, what)  # its cost is met letter by letter
        if not list_path.is_file():
            raise NotFound("its recipient list is missing")
        services = {}
        for name in job.services:
            try:
                services[name] = svc.find_service(data, name)
            except NotFound:
                continue
        if not services:
            raise NotFound("none of its services exists any more")
    except VykhukholError as exc:
        run.log.error(f"newsletter {job.name} is inadequate and deleted: {exc.message}")
        newsletters.delete(data, job.name)
        return
    run.keep_time_for(list_path)
    if job.values.get("first_run", "-") == "-":
        newsletters.change_job(data, job.name, lambda j: j.values.update(
            first_run=format_time(run.now())))
    rows = (row for row in newsletters.read_rows(list_path, job.cursor)
            if row.state is LedgerState.PENDING)
    while run.may_send("news_left"):
        batch = list(islice(rows, run.news_left))
        if not batch:
            break
        home = suppression_gate(services, batch)
        copies = [None if (service := home.get(email_key(row.email))) is None else Copy(partial(
            compose.newsletter, service, subject, text, html, run.settings, row.email,
            row.name, run.lease, run.now(), run.presses, job=job.name)) for row in batch]
        for row, (copy, meanwhile) in zip(batch, one_ahead(copies), strict=True):
            if not run.may_send("news_left"):
                break
            if copy is None:
                book.note(journal.SKIPPED, format_time(run.now()), job.name, row.email, str(row.index))
                continue
            outcome = run.deliver(book, job.name, row.email, str(row.index), copy, meanwhile)
            if outcome == BROKEN:
                return
            if outcome != journal.TEMPFAIL:
                run.news_left -= 1


def suppression_gate(services: dict[str, svc.Service], batch: list) -> dict[str, svc.Service]:
    """Which of the batch's addresses are still confirmed subscribers, and of which service."""
    wanted = {email_key(row.email) for row in batch}
    home: dict[str, svc.Service] = {}
    for service in services.values():
        for sub in subs.among(service.subscribers_path, wanted):
            if sub.state.confirmed and sub.key not in home:
                home[sub.key] = service
    return home


def fold_newsletters(run: Run, book: journal.Journal) -> set[str]:
    """Write the journalled outcomes into the ledgers; returns the jobs touched."""
    records = book.records()
    by_job: dict[str, dict[int, journal.Record]] = defaultdict(dict)
    for record in records:
        by_job[record.target][int(record.item)] = record
    for name, rows in by_job.items():
        try:
            newsletters.read_job(run.data, name)
        except (NotFound, BadInput):
            continue  # cancelled meanwhile
        _, _, list_path = newsletters.paths(run.data, name)

        def apply(row: newsletters.Row, rows=rows, name=name) -> newsletters.Row:
            record = rows.get(row.index)
            if record is None or record.outcome == journal.TEMPFAIL:
                return row
            if record.outcome == journal.IN_DOUBT:
                run.log.write(f"newsletter {name}: the letter to {row.email} got no answer "
                              "(a run died, or the server went silent); it is counted in doubt "
                              "and not sent again")
            return newsletters.Row(row.index, row.email, row.name, LedgerState(record.outcome),
                                   record.time, record.lease)

        newsletters.rewrite_rows(list_path, apply, only=rows.keys())
        pending = [i for i, r in rows.items() if r.outcome == journal.TEMPFAIL]
        cursor = min(pending) if pending else max(rows) + 1
        newsletters.change_job(run.data, name, lambda j, cursor=cursor: j.values.update(
            cursor=str(max(j.cursor, cursor)), last_run=format_time(run.now()),
            runs=str(int(j.values.get("runs", "0") or 0) + 1)))
    book.clear()
    return set(by_job)


def finish_if_exhausted(run: Run, name: str) -> None:
    """A job whose list is exhausted: report to the admin in Russian, delete its files."""
    data = run.data
    try:
        job = newsletters.read_job(data, name)
    except NotFound:
        return
    _, _, list_path = newsletters.paths(data, name)
    if any(row.state is LedgerState.PENDING for row in newsletters.read_rows(list_path, job.cursor)):
        return
    count = newsletters.counts(list_path)
    failed = [row.email for row in newsletters.read_rows(list_path) if row.state is LedgerState.FAILED]
    subject, _, _ = newsletters.read_letter(data, name)
    subject = subject_as_sent(data, job, subject, run.now())
    report = newsletter_report(job, subject, count, failed, run.now(), run.settings["timezone"])
    run.log.write(f"newsletter {name} finished: {count['sent']} sent, {count['failed']} failed, "
                  f"{count['skipped']} skipped, {count['in doubt']} in doubt")
    admin = run.settings["admin_email"]
    if admin:
        from vykhukhol import mail

        message = mail.build_message(
            from_name="Vykhukhol", from_email=run.settings["mail.from_email"] or admin,
            to_email=admin, subject=f"Рассылка завершена: {subject}"[:200], text=report,
            run_id=run.lease)
        try:
            run.transport().send(message, admin)
        except mail.DeliveryError as exc:
            run.log.error(f"the report of newsletter {name} could not be mailed: {exc.detail}")
    newsletters.delete(data, name)


def subject_as_sent(data: DataDir, job: newsletters.Job, subject: str, moment: datetime) -> str:
    """The job's subject as its recipients read it, for a recipient without a
    name (the raw template if it cannot be rendered any more)."""
    from vykhukhol import render

    title = ""
    for name in job.services:
        try:
            title = svc.find_service(data, name).title
            break
        except VykhukholError:
            continue
    context = {"name": "", "email": "", "service": title, "unsubscribe_url": "",
               "date": moment.strftime("%Y-%m-%d")}
    try:
        return " ".join(render.render(subject, context, "subject").split()) or subject
    except BadInput:
        return subject


def _local(stamp: str | datetime | None, zone: str) -> str:
    """A time of the job file shown in ``timezone``, as the admin pages show times."""
    try:
        moment = parse_time(stamp) if isinstance(stamp, str) else stamp
        if moment is None:
            return "-"
        return f"{moment.astimezone(ZoneInfo(zone)):%Y-%m-%d %H:%M:%S} ({zone})"
    except (BadInput, OverflowError, ValueError):  # a hand-edited job file: show it as it is
        return str(stamp)


def newsletter_report(job: newsletters.Job, subject: str, count: dict[str, int],
                      failed: list[str], moment: datetime, zone: str = "UTC") -> str:
    subject = " ".join(subject.split())  # one line of the report, whatever the admin typed
    lines = [
        f"Новостная рассылка «{subject}» завершена.",
        "",
        f"Службы: {', '.join(job.services)}",
        f"Получателей в списке: {count['total']}",
        f"Отправлено писем: {count['sent']}",
        f"Отказов доставки: {count['failed']}",
        f"Пропущено (адрес отписался или удалён): {count['skipped']}",
        f"Под сомнением (запуск прервали во время отправки): {count['in doubt']}",
        "",
        f"Начата: {_local(job.values.get('first_run'), zone)}",
        f"Завершена: {_local(moment, zone)}",
        f"Запусков рассыльщика: {int(job.values.get('runs', '0') or 0)}",
    ]
    if failed:
        lines += ["", "Адреса с отказом доставки:"] + [f"  {email}" for email in failed[:1000]]
        if len(failed) > 1000:
            lines.append(f"  … и ещё {len(failed) - 1000}")
    return "\n".join(lines) + "\n"


# --- step 3 ---------------------------------------------------------------------

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


def in_window(run: Run, services: list[svc.Service]) -> list[svc.Service]:
    """Services whose send window matches this minute, longest ago served first."""
    served = state.served_times(run.data)
    zone = run.settings["timezone"]
    moment = run.now()
    ready = []
    for service in services:
        if service.send_window and not schedule.matches_expr(service.send_window, moment, zone):
            continue
        ready.append(service)
    return sorted(ready, key=lambda s: (served.get(s.name) or EPOCH, s.name))


# --- step 4 ---------------------------------------------------------------------

@dataclass
class Scan:
    """What find_work took from the service's due index, so the fold can splice
    the changed lines into the file and move the index along with it."""

    index: dueindex.Index
    rows: dict[int, tuple[bytes, subs.Subscriber]]  # offset → the line's bytes, as parsed
    saved: bool = True  # the index on disk is this one


@dataclass
class Work:
    """What one service has due now."""

    service: svc.Service
    rules: Rules
    letters: list = field(default_factory=list)     # (due, email, name, number)
    reminders: list = field(default_factory=list)   # (due, email, name)
    tidy: bool = False  # clean-up is due even if nothing is sent
    scan: Scan | None = None  # None: a fold of a killed run's journal, which parses all

    @property
    def idle(self) -> bool:
        return not (self.letters or self.reminders or self.tidy)


@dataclass
class Held:
    """A DB whose lock this run holds: its journal, its services as read under
    the lock, and the services worked on."""

    db: str
    book: journal.Journal
    services: list[svc.Service] = field(default_factory=list)
    worked: list[Work] = field(default_factory=list)


@contextmanager
def hold_db(run: Run, first: svc.Service) -> Iterator[Held | None]:
    """Take the DB's rename lock for steps 4 and 5 (None: it could not be had),
    fold a killed predecessor's journal first, and on the way out fold this
    run's letters into the files and release the lock (step 6)."""
    lock = svc.db_lock(run.data, first.db)
    taken = take_lock(run, lock, f"DB {first.db}")
    if taken is not True:
        if taken is False:
            # It keeps its turn no longer than a served service would, so a DB
            # whose lock cannot be taken never starves the others.
            state.mark_served(run.data, [first.name], run.now())
        yield None
        return
    held = Held(first.db, journal.Journal(run.data.state / f"db-{first.db}.journal", run.lease))
    try:
        held.services = svc.load_services(run.data, first.db)
        for folder in [run.data.db(first.db), run.data.state / "index"] + \
                [s.folder for s in held.services]:
            if files.remove_stale_temps(folder, run.time_limit):  # a killed rewrite's leftovers
                run.log.write(f"removed the temporary files a killed rewrite left in {folder.name}")
        fold_series(run, held.book, [])
        yield held
    finally:
        try:
            run.drain()
            fold_series(run, held.book, held.worked)
        finally:  # a full disk while folding still frees the lock; the journal waits
            held.book.close()
            release(run, lock, f"DB {first.db}")


def send_series(run: Run, first: svc.Service, held: Held) -> None:
    """Step 4: the service's due letters, then the other enabled services of
    its DB while quota and time remain. Each service worked on counts as served."""
    others = [s for s in held.services if s.enabled and s.name != first.name]
    for service in [first] + in_window(run, others):
        if service is not first and not run.may_send("serial_left"):
            break
        work = find_work(run, service)
        if work is None:
            continue
        if service is first or not work.idle:
            held.worked.append(work)
        send_letters(run, work, held.book)
    state.mark_served(run.data, [w.service.name for w in held.worked], run.now())


def rules_of(run: Run, service: svc.Service) -> Rules:
    return Rules(tuple(svc.letter_delays(service)), run.settings["reminder_period"],
                 run.settings["reminder_count"], service.delete_finished)


INDEX_SHARE = 0.3  # share of time_limit a run may spend reading lines into a due index


def index_path(run: Run, service: svc.Service) -> Path:
    return run.data.state / "index" / f"{service.name}.due"


def find_work(run: Run, service: svc.Service) -> Work | None:
    """What is due in the service, from its due index, unless the summary says
    nothing is. Only the lines taken are read (None: the index is still being
    built, and the service waits for the next run)."""
    try:
        rules = rules_of(run, service)
    except BadInput as exc:
        run.log.error(f"{exc.message}; the service is passed over until it is fixed")
        return None
    work = Work(service, rules)
    moment = run.now()
    path = service.subscribers_path
    summary = state.read_due(run.data, service.name)
    stamp = state.file_stamp(path)  # before the read: a change meanwhile voids it
    if summary and summary[1] == rules.fingerprint() and summary[2] == stamp:
        try:
            next_due = parse_time(summary[0])
        except BadInput:
            next_due = EPOCH
        if next_due is None or next_due > moment:
            return work
    for attempt in (1, 2):
        scan = take_lines(run, service, rules, work, fresh=attempt == 2)
        if scan is not False:
            break
        # A line did not say what the index said: a wrong index costs a rebuild.
        run.log.write(f"service {service.name}: its due index did not match the file; "
                      "it is built again")
    if not isinstance(scan, Scan):
        return None
    work.tidy = work.tidy or bool(work.letters or work.reminders)
    if work.idle:  # no fold will write the summary: write it now, so idle runs read no file
        if not scan.saved:
            save_index(run, service, scan.index)
        earliest = scan.index.earliest()
        state.write_due(run.data, service.name, None if earliest is None else
                        datetime.fromtimestamp(earliest, timezone.utc), rules.fingerprint(), stamp)
    else:
        work.scan = scan
        run.keep_time_for(path)
    return work


def save_index(run: Run, service: svc.Service, index: dueindex.Index | None) -> None:
    """Write the service's due index (None: delete it). A disk that refuses is
    logged and the run goes on: an index left behind no longer matches the
    file, so the next run reads the file again."""
    try:
        if index is None:
            dueindex.remove(index_path(run, service))
        else:
            dueindex.save(index_path(run, service), index)
    except StorageError as exc:
        run.log.error(f"service {service.name}: its due index could not be written: "
                      f"{exc.message}")


def due_index(run: Run, service: svc.Service, rules: Rules, fresh: bool
              ) -> tuple[dueindex.Index | None, bool]:
    """The service's due index brought up to the file (None: not yet, the
    rest is read by the next runs), and whether it is saved as it is."""
    path, saved_at = service.subscribers_path, index_path(run, service)
    index = None if fresh else dueindex.load(saved_at, rules.fingerprint())
    if index is None:
        index = dueindex.Index(rules.fingerprint())
    else:
        dueindex.trim_to_file(index, path)
    before = (index.covered, index.stamp)
    stop_at = run.time_limit * INDEX_SHARE
    whole = dueindex.extend(index, path, rules, lambda: run.elapsed() > stop_at)
    saved = (index.covered, index.stamp) == before and not fresh
    if not whole or index.covered - before[0] > 1 << 20:  # reading it again would cost
        save_index(run, service, index)
        saved = True
    if not whole:
        size = path.stat().st_size
        run.log.write(f"service {service.name}: reading its subscriber file into a due index, "
                      f"{index.covered / 1e6:.0f} of {size / 1e6:.0f} MB so far; its letters "
                      "wait for the next run")
        return None, saved
    return index, saved


def take_lines(run: Run, service: svc.Service, rules: Rules, work: Work, fresh: bool
               ) -> Scan | None | bool:
    """Read the lines the index says are due into ``work``; False if one of
    them is not what the index says (the index is wrong), None if the index
    is not whole yet."""
    index, saved = due_index(run, service, rules, fresh)
    if index is None:
        return None
    choice = dueindex.choose(index, run.now().timestamp(), max(run.serial_left, 0))
    rows: dict[int, tuple[bytes, subs.Subscriber]] = {}
    letters, reminders, tidy = [], [], False
    offsets, dues, kinds = index.offsets, index.dues, index.kinds
    try:
        handle = open(service.subscribers_path, "rb")
    except FileNotFoundError:
        return False
    with handle:
        for kind, taken in ((dueindex.SEND, choice.letters), (dueindex.ASK, choice.reminders),
                            (dueindex.TIDY, choice.tidy)):
            for i in taken:
                if offsets[i] in rows:  # one line twice: the index is wrong, never a letter twice
                    return False
                text, raw = dueindex.line_at(handle, offsets[i])
                try:
                    sub = subs.parse_line(text)
                except BadInput:
                    return False
                if dueindex.classify(sub, rules) != (kind, dues[i]) or kinds[i] != kind:
                    return False
                rows[offsets[i]] = (raw, sub)
                due = datetime.fromtimestamp(dues[i], timezone.utc)
                if kind == dueindex.SEND:
                    letters.append((due, sub.email, sub.name, next_action(sub, rules).number))
                elif kind == dueindex.ASK:
                    reminders.append((due, sub.email, sub.name))
                else:
                    tidy = True
    work.letters, work.reminders, work.tidy = letters, reminders, tidy
    return Scan(index, rows, saved)


def send_letters(run: Run, work: Work, book: journal.Journal) -> None:
    if not work.letters:
        return
    from vykhukhol import compose  # Jinja2 and the e-mail package: only when sending
    service = work.service
    try:
        letters = svc.load_letters(service)
    except BadInput as exc:
        run.log.error(f"service {service.name}: its letters cannot be read: {exc.message}")
        return
    broken: set[int] = set()  # letters that cannot be made: skipped for the rest of the run

    def make(number: int, email: str, name: str) -> object:
        if number in broken:  # not made again (a heavy template costs its whole budget)
            raise BadInput(f"letter {number} cannot be made")
        return compose.series_letter(service, letters[number - 1], run.settings, email, name,
                                     run.lease, run.now(), run.presses)

    copies: list[Copy | None] = [Copy(partial(make, number, email, name))
                                 for _, email, name, number in work.letters]
    for (_, email, _, number), (copy, meanwhile) in zip(work.letters, one_ahead(copies),
                                                        strict=True):
        if not run.may_send("serial_left"):
            return
        if number in broken:
            continue  # its subscribers wait, untouched, for a run after the fix
        outcome = run.deliver(book, service.name, email, str(number), copy, meanwhile)
        if outcome == BROKEN:
            broken.add(number)
        elif outcome != journal.TEMPFAIL:
            run.serial_left -= 1


# --- step 5 ---------------------------------------------------------------------

def remind_and_clean(run: Run, worked: list[Work], book: journal.Journal) -> None:
    """Step 5: reminders to the unconfirmed, inside the same quota and time. The
    deletions and ``done`` marks are applied as the journal is folded."""
    if not any(work.reminders for work in worked):
        return
    from vykhukhol import compose  # Jinja2 and the e-mail package: only when sending
    for work in worked:
        service = work.service
        copies: list[Copy | None] = [Copy(partial(
            compose.confirmation, service, run.settings, email, name, run.lease, run.now(),
            run.presses)) for _, email, name in work.reminders]
        for (_, email, _), (copy, meanwhile) in zip(work.reminders, one_ahead(copies),
                                                    strict=True):
            if not run.may_send("serial_left"):
                return
            outcome = run.deliver(book, service.name, email, "reminder", copy, meanwhile)
            if outcome == BROKEN:
                break
            if outcome != journal.TEMPFAIL:
                run.serial_left -= 1


def fold_series(run: Run, book: journal.Journal, worked: list[Work]) -> None:
    """Write the journalled letters into the subscriber files and apply the
    clean-up rules, one streamed rewrite per service; refresh each summary."""
    records = book.records()
    by_service: dict[str, dict[tuple[str, str], journal.Record]] = defaultdict(dict)
    for record in records:
        by_service[record.target][(email_key(record.email), record.item)] = record
    targets = {w.service.name: w for w in worked if not w.idle}
    for name in by_service:
        if name not in targets:
            try:
                service = svc.find_service(run.data, name)
                targets[name] = Work(service, rules_of(run, service))
            except (NotFound, BadInput):
                continue  # its journal lines wait until the service is readable again
    for name, work in targets.items():
        fold_service(run, work, by_service.get(name, {}))
    leftover = [r for r in records if r.target not in targets]
    book.clear()
    for record in leftover:  # keep what could not be folded (a broken service) for later
        book.note_record(record)


def fold_service(run: Run, work: Work, records: dict[tuple[str, str], journal.Record]) -> None:
    """One service's journalled letters and clean-up written into its file, and
    its next-due summary. After a scan, the lines the run took are spliced
    into the file (every other byte copied through) and the due index moved
    along; otherwise (a killed run's journal, or a file that changed under
    the taken lines) only the journalled addresses' lines are parsed, the
    rest copied through, and the index is dropped."""
    service, rules, scan = work.service, work.rules, work.scan
    moment = run.now()
    earliest: list[datetime | None] = [None]
    gone: Counter = Counter()
    items_of: dict[str, set[str]] = defaultdict(set)  # address → its journalled items
    for key, item in records:
        items_of[key].add(item)

    def change(sub: subs.Subscriber) -> subs.Subscriber | None:
        after = sub
        for item in items_of.get(sub.key, ()):
            after = apply_record(run, service, after, records[(sub.key, item)])
        kept, why = clean_up(after, rules, moment)
        if kept is None:
            gone[why] += 1
            run.log.write(f"{service.name}: {sub.email} deleted: {why}")
            return None
        return kept

    def track(sub: subs.Subscriber) -> None:
        action = next_action(sub, rules)
        if action.due is not None and (earliest[0] is None or action.due < earliest[0]):
            earliest[0] = action.due

    def touched(index: int, line: str) -> bool:
        """Parse this line? (Its address is journalled.)"""
        return email_key(line.partition("\t")[0]) in items_of

    path = service.subscribers_path
    with files.record_lock(path):
        if scan is not None and splice_taken(run, work, items_of, change):
            return
        # A killed run's journal, or a file changed under the taken lines (a
        # rewrite by another writer): the journalled addresses' lines are parsed,
        # the rest copied; their due times are unknown, so the next run reads them.
        subs.rewrite(path, change, track, parse=touched)
        earliest[0] = moment
        save_index(run, service, None)
        state.write_due(run.data, service.name, earliest[0], rules.fingerprint(),
                        state.file_stamp(path))


def splice_taken(run: Run, work: Work, items_of: dict[str, set[str]],
                 change: Callable[[subs.Subscriber], subs.Subscriber | None]) -> bool:
    """The taken lines, changed, spliced into the file, the index moved along
    and the summary written (under the file's record lock); False if the file
    no longer holds them where they were, or a journalled address is not
    among them."""
    service, scan = work.service, work.scan
    if not set(items_of) <= {sub.key for _, sub in scan.rows.values()}:
        return False
    path = service.subscribers_path
    changes, notes = [], {}
    for offset, (raw, sub) in sorted(scan.rows.items()):
        after = change(sub)
        new = b"" if after is None else (after.to_line() + "\n").encode("utf-8", "surrogateescape")
        if new != raw:
            changes.append((offset, raw, new))
            notes[offset] = (len(new) - len(raw),
                             None if after is None else dueindex.classify(after, work.rules))
    index = scan.index
    if changes:
        spliced = files.splice(path, changes, upto=index.covered,
                               marks=dueindex.shifted_marks(index, notes))
        if spliced is None:
            return False
        if spliced.old_crc == index.crc:
            index = dueindex.moved(index, notes, spliced)
        else:  # another writer changed lines the run did not take: read them again
            index = dueindex.Index(index.fingerprint)
    stamp = dueindex.stamp_of(path)
    index.stamp = stamp if stamp.split(":")[0] == str(index.covered) else "-"
    if changes or not scan.saved:
        save_index(run, service, index)
    soonest = index.earliest()
    earliest = None if soonest is None else datetime.fromtimestamp(soonest, timezone.utc)
    if index.stamp == "-":  # lines the index does not cover yet: the next run reads them
        earliest = run.now()
    state.write_due(run.data, service.name, earliest, work.rules.fingerprint(),
                    state.file_stamp(path))
    return True


def apply_record(run: Run, service: svc.Service, sub: subs.Subscriber,
                 record: journal.Record) -> subs.Subscriber:
    """One journalled letter written into the subscriber's line."""
    if record.outcome == journal.TEMPFAIL or record.outcome == journal.SKIPPED:
        return sub
    if record.outcome == journal.IN_DOUBT:
        run.log.write(f"{service.name}: letter {record.item} to {sub.email} got no answer (a run "
                      "died, or the server went silent); it is counted in doubt and not sent again")
    try:
        moment = parse_time(record.time)
    except BadInput:
        moment = run.now()
    if record.outcome == journal.FAILED:
        return sub.replace(failures=sub.failures + 1)
    if record.item == "reminder":
        if sub.state is not SubscriberState.NEW:
            return sub
        return sub.replace(reminders=sub.reminders + 1, last_reminder=moment)
    number = int(record.item)
    if sub.sent >= number:
        return sub  # folded before (a journal left by a kill after its fold)
    return sub.replace(sent=number, last_sent=moment, failures=0)


