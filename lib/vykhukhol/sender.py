"""The sender: one run, step by step as the original describes it (SPEC 5).

Hold this module beside seed 000 ("Порядок работы Почтовой Выхухоли"):
``run()`` calls one function per numbered step, in the original's order —

1. :func:`check_mode`       — debug mode or a self-block: nothing is sent;
2. :func:`send_newsletters` — "letters to all users", exactly ``news_per_run``;
3. :func:`choose_service`   — the enabled service served longest ago;
4. :func:`send_series`      — its due letters, then same-DB services while
                              quota and time remain;
5. :func:`remind_and_clean` — reminders, deletion of the unconfirmed and of
                              those who finished the series;
6. :func:`release`          — the DB lock back to free;
7. the clock, checked before every letter (:meth:`Run.may_send`), and kill
   detection in :func:`take_lock`;
8. a busy lock of a live run: :func:`take_lock` refuses and alerts.

Durability comes from :mod:`vykhukhol.journal`: each letter is journalled
before and after it leaves, and the journal is folded into the data files at
the end of the step that holds the lock (or by the next run, after a kill).
"""

from __future__ import annotations

import heapq
import os
import secrets
import socket
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from itertools import islice
from zoneinfo import ZoneInfo

from vykhukhol import alerts, compose, files, journal, mail, newsletters, render, schedule, state
from vykhukhol import services as svc
from vykhukhol import subscribers as subs
from vykhukhol.addresses import email_key
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, LockBusy, NotFound, StorageError, VykhukholError
from vykhukhol.runlog import RunLog
from vykhukhol.series import EPOCH, LETTER, NOTHING, REMIND, Rules, clean_up, next_action
from vykhukhol.settings import Settings
from vykhukhol.states import LedgerState, Outcome, SubscriberState
from vykhukhol.timeutil import format_duration, format_time, parse_time, seconds_between

SEND_SHARE = 0.5       # share of time_limit in which new letters may start
HARD_SHARE = 0.8       # no SMTP command may wait past this share of time_limit
SMTP_TIMEOUT_MAX = 20.0  # seconds one SMTP command may take at most
REWRITE_RATE = 20e6    # bytes a second a streamed rewrite is assumed to manage
TEMPFAIL_GIVE_UP = 3 * 86400  # a letter failing temporarily this long becomes failed
LOST = None            # marker: a lock step failed in a way that ends the run
BROKEN = "broken"      # marker: a letter that cannot be made (a template broken by FTP)


@dataclass
class Report:
    """What a run did; ``text()`` is the cron URL's answer and the CLI's output."""

    lease: str
    started: datetime
    ended: datetime | None = None
    outcome: Outcome = Outcome.DONE
    sent: Counter = field(default_factory=Counter)
    lines: list[str] = field(default_factory=list)

    def text(self) -> str:
        out = [f"run {self.lease}", f"started {format_time(self.started)}"]
        out += self.lines
        for target, count in sorted(self.sent.items()):
            out.append(f"sent {count} for {target}")
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
        self.allowance = Allowance(self)

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
        if self.report.outcome in (Outcome.DONE, Outcome.QUOTA):
            self.report.outcome = outcome
        if not soft:
            self.stopped = outcome

    def keep_time_for(self, *paths) -> None:
        size = sum(p.stat().st_size for p in paths if p.exists())
        self.reserve += size / REWRITE_RATE

    # -- mail -------------------------------------------------------------
    def transport(self) -> mail.Transport:
        if self._transport is None:
            config = self.settings.mail_config(self.data.outbox)
            config.timeout = min(SMTP_TIMEOUT_MAX, self.time_limit * HARD_SHARE)
            self._transport = mail.open_transport(config)
        self._transport.set_deadline(self.hard_deadline())
        return self._transport

    def hard_deadline(self) -> float:
        """The clock reading after which no SMTP command may still wait."""
        return self.t0 + self.time_limit * HARD_SHARE - self.reserve

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    def deliver(self, book: journal.Journal, target: str, email: str, item: str,
                build: Callable[[], object]) -> str:
        """Journal, send, journal. Returns the outcome: sent, failed, tempfail,
        in doubt, or BROKEN when the letter itself cannot be made (the caller
        stops serving ``target``: every letter of it would fail the same way)."""
        moment = format_time(self.now())
        try:
            mail.check_address(email)
        except BadInput as exc:
            self.log.write(f"{target}: {email} is not an address mail can go to: {exc.message}")
            book.note(journal.FAILED, moment, target, email, item)
            return journal.FAILED
        try:
            message = build()
        except BadInput as exc:
            self.log.error(f"{target}: letter {item} cannot be made: {exc.message}; "
                           f"{target} is passed over until it is fixed")
            return BROKEN
        if not self.allowance.take():
            self.stop(Outcome.LIMIT)
            return journal.TEMPFAIL
        book.note(journal.INTENT, moment, target, email, item)
        began = self.clock()
        try:
            self.transport().send(message, email)
        except mail.DeliveryError as exc:
            if exc.stage == "data-unanswered":
                # The server may have the letter: leave the intent alone, so it
                # is folded "in doubt" and never sent twice.
                self.log.write(f"{target}: the answer for {email} was lost ({exc.detail}); "
                               "the letter is in doubt and will not be sent again")
                self.stop(Outcome.TEMPFAIL)
                return journal.IN_DOUBT
            outcome = self._failed(exc, target, email, item)
        else:
            outcome = journal.SENT
            forget_tempfail(self.data, target, email, item)
            self.report.sent[target] += 1
        self.slowest_letter = max(self.slowest_letter, self.clock() - began)
        book.note(outcome, moment, target, email, item)
        return outcome

    def _failed(self, exc: mail.DeliveryError, target: str, email: str, item: str) -> str:
        if not exc.temporary:
            self.log.write(f"{target}: {email} refused ({exc.code or 'no code'}): {exc.detail}")
            forget_tempfail(self.data, target, email, item)
            return journal.FAILED
        since = note_tempfail(self.data, target, email, item, self.now())
        if seconds_between(self.now(), since) >= TEMPFAIL_GIVE_UP:
            self.log.write(f"{target}: {email} failed temporarily for "
                           f"{format_duration(TEMPFAIL_GIVE_UP)}; marked failed")
            forget_tempfail(self.data, target, email, item)
            return journal.FAILED
        code = f" ({exc.code})" if exc.code else ""
        self.log.write(f"{target}: temporary failure for {email}{code}: {exc.detail}; "
                       "sending stops, a later run retries")
        self.stop(Outcome.TEMPFAIL)
        return journal.TEMPFAIL

    def alert(self, subject: str, **details: str) -> None:
        try:
            transport = self.transport()
        except VykhukholError:
            transport = None
        alerts.raise_alert(self.data, self.settings, self.log, subject, self.now(),
                           transport, **details)


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
        state.change_kv(self.run.data.state / "counters", change)

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
        state.change_kv(self.run.data.state / "counters", change)


# --- temporary failures that last -------------------------------------------

def _tempfail_key(target: str, email: str, item: str) -> str:
    return f"{target}|{email_key(email)}|{item}"


def note_tempfail(data: DataDir, target: str, email: str, item: str, moment: datetime) -> datetime:
    """Remember when this letter first failed temporarily; returns that time."""
    key = _tempfail_key(target, email, item)
    values = state.change_kv(data.state / "tempfail",
                             lambda v: v.setdefault(key, format_time(moment)))
    return state.time_of(values, key) or moment


def forget_tempfail(data: DataDir, target: str, email: str, item: str) -> None:
    path = data.state / "tempfail"
    if path.exists() and _tempfail_key(target, email, item) in state.read_kv(path):
        state.change_kv(path, lambda v: v.pop(_tempfail_key(target, email, item), None))


# --- locks: steps 6, 7 and 8 -------------------------------------------------

def _lock_is_dead(lock: files.RenameLock, time_limit: int) -> tuple[bool, float]:
    """(did the holder die?, its age in seconds)."""
    holder = lock.holder()
    if holder is None:
        return False, 0.0
    age = time.time() - holder.since
    return age > time_limit or not _holder_alive(lock), age


def _holder_alive(lock: files.RenameLock) -> bool:
    """False only when the lock names a process of this host that is gone."""
    parts = (files.read_text(lock.busy, "") or "").strip().split("\t")
    if len(parts) < 3 or parts[2] != socket.gethostname():
        return True
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


def take_lock(run: Run, lock: files.RenameLock, what: str) -> bool | None:
    """Steps 7 and 8 at the door: True when the lock is ours; False when another
    live run holds it or the rename failed (alerted); LOST when the holder died
    (the sender blocks itself)."""
    lock.ensure()
    dead, age = _lock_is_dead(lock, run.time_limit)
    if dead:
        reason = (f"a run holding {what} died {format_duration(int(age))} after it started "
                  f"(time_limit is {format_duration(run.time_limit)})")
        state.set_block(run.data, reason, format_duration(int(age)))
        run.log.error(f"blocked: {reason}")
        run.alert(alerts.DOWN_BY_HOSTER, time_limit=format_duration(run.time_limit),
                  age=format_duration(int(age)))
        run.stop(Outcome.BLOCKED)
        return LOST
    try:
        lock.acquire(f"{run.lease}\t{os.getpid()}\t{socket.gethostname()}")
    except LockBusy:
        run.alert(alerts.CANNOT_LAUNCH, detail=f"{what} is held by another run")
        run.stop(Outcome.BUSY, soft=True)
        return False
    except StorageError as exc:
        run.alert(alerts.CANNOT_LAUNCH, detail=exc.message)
        run.stop(Outcome.BUSY, soft=True)
        return False
    return True


def release(run: Run, lock: files.RenameLock, what: str) -> bool:
    """Step 6: rename the lock back to free; if that fails, alert and stop."""
    try:
        lock.release()
    except StorageError as exc:
        run.alert(alerts.CANNOT_TERMINATE, detail=exc.message)
        run.stop(Outcome.BUSY)
        return False
    return True


# --- the run -----------------------------------------------------------------

def run(data: DataDir, settings: Settings, clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] | None = None) -> Report:
    """One run of the sender, from mode check to release."""
    current = Run(data, settings, clock, now)
    current.log.write(f"run started (time_limit {format_duration(current.time_limit)}, "
                      f"news_per_run {current.news_left}, serial_per_run {current.serial_left})")
    try:
        if check_mode(current) and send_newsletters(current) is not LOST:
            service = choose_service(current)
            if service is not None:
                send_series(current, service)
    except StorageError as exc:
        current.log.error(f"run ended early: {exc.message}")
        current.stop(Outcome.DONE)
    finally:
        current.allowance.settle()
        current.close()
        count_daily(current)
        current.report.ended = current.now()
        current.log.write(f"run ended after {current.elapsed():.1f}s: "
                          f"{current.report.outcome.label('en')}; "
                          f"letters {sum(current.report.sent.values())}")
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


# --- step 2 ---------------------------------------------------------------------

def send_newsletters(run: Run) -> bool | None:
    """Step 2: due newsletters, oldest start first, ``news_per_run`` letters at most."""
    data = run.data
    due = [job for job in newsletters.list_jobs(data) if job.start <= run.now()]
    lock = newsletters.lock(data)
    book = journal.Journal(data.state / "news.journal", run.lease)
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
        touched |= fold_newsletters(run, book)
        for name in sorted(touched):
            finish_if_exhausted(run, name)
        released = release(run, lock, "the newsletters")
    return True if released else LOST


def serve_job(run: Run, job: newsletters.Job, book: journal.Journal) -> None:
    data = run.data
    _, letter_path, list_path = newsletters.paths(data, job.name)
    try:
        subject, text, html = newsletters.read_letter(data, job.name)
        for source, what in ((subject, "subject"), (text, "text"), (html or "", "HTML")):
            render.check_template(source, what)
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
        for row in batch:
            if not run.may_send("news_left"):
                break
            service = home.get(email_key(row.email))
            if service is None:
                book.note(journal.SKIPPED, format_time(run.now()), job.name, row.email, str(row.index))
                continue
            outcome = run.deliver(book, job.name, row.email, str(row.index), partial(
                compose.newsletter, service, subject, text, html, run.settings, row.email,
                row.name, run.lease, run.now()))
            if outcome == BROKEN:
                return
            if outcome != journal.TEMPFAIL:
                run.news_left -= 1


def suppression_gate(services: dict[str, svc.Service], batch: list) -> dict[str, svc.Service]:
    """Which of the batch's addresses are still confirmed subscribers, and of which service."""
    wanted = {email_key(row.email) for row in batch}
    home: dict[str, svc.Service] = {}
    for service in services.values():
        for sub in subs.subscribers(service.subscribers_path):
            if sub.state.confirmed and sub.key in wanted and sub.key not in home:
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

        newsletters.rewrite_rows(list_path, apply)
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
    report = newsletter_report(job, subject, count, failed, run.now())
    run.log.write(f"newsletter {name} finished: {count['sent']} sent, {count['failed']} failed, "
                  f"{count['skipped']} skipped, {count['in doubt']} in doubt")
    admin = run.settings["admin_email"]
    if admin:
        message = mail.build_message(
            from_name="Vykhukhol", from_email=run.settings["mail.from_email"] or admin,
            to_email=admin, subject=f"Рассылка завершена: {subject}"[:200], text=report,
            run_id=run.lease)
        try:
            run.transport().send(message, admin)
        except mail.DeliveryError as exc:
            run.log.error(f"the report of newsletter {name} could not be mailed: {exc.detail}")
    newsletters.delete(data, name)


def newsletter_report(job: newsletters.Job, subject: str, count: dict[str, int],
                      failed: list[str], moment: datetime) -> str:
    lines = [
        f"Новостийная рассылка «{subject}» завершена.",
        "",
        f"Службы: {', '.join(job.services)}",
        f"Получателей в списке: {count['total']}",
        f"Отправлено писем: {count['sent']}",
        f"Отказов доставки: {count['failed']}",
        f"Пропущено (адрес отписался или удалён): {count['skipped']}",
        f"Под сомнением (запуск прервали во время отправки): {count['in doubt']}",
        "",
        f"Начата: {job.values.get('first_run', '-')}",
        f"Завершена: {format_time(moment)}",
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
class Work:
    """What one service has due now."""

    service: svc.Service
    rules: Rules
    letters: list = field(default_factory=list)     # (due, email, name, number)
    reminders: list = field(default_factory=list)   # (due, email, name)
    tidy: bool = False  # clean-up is due even if nothing is sent

    @property
    def idle(self) -> bool:
        return not (self.letters or self.reminders or self.tidy)


def send_series(run: Run, first: svc.Service) -> None:
    """Step 4 (with 5 and 6 inside the lock): the service's due letters, then
    the other enabled services of its DB while quota and time remain."""
    data = run.data
    lock = svc.db_lock(data, first.db)
    taken = take_lock(run, lock, f"DB {first.db}")
    if taken is False:
        # It keeps its turn no longer than a served service would, so a DB
        # whose lock cannot be taken never starves the others.
        state.mark_served(data, [first.name], run.now())
    if taken is not True:
        return
    book = journal.Journal(data.state / f"db-{first.db}.journal", run.lease)
    worked: list[Work] = []
    try:
        fold_series(run, book, [])  # a killed predecessor's letters first
        queue = [first] + [s for s in in_window(run, [x for x in svc.load_services(data, first.db)
                                                      if x.enabled]) if s.name != first.name]
        for service in queue:
            if service is not first and not run.may_send("serial_left"):
                break
            work = find_work(run, service)
            if work is None:
                continue
            if service is first or not work.idle:
                worked.append(work)
            send_letters(run, work, book)
        state.mark_served(data, [w.service.name for w in worked], run.now())
        remind_and_clean(run, worked, book)
    finally:
        fold_series(run, book, worked)
        release(run, lock, f"DB {first.db}")


def rules_of(run: Run, service: svc.Service) -> Rules:
    return Rules(tuple(svc.letter_delays(service)), run.settings["reminder_period"],
                 run.settings["reminder_count"], service.delete_finished)


def find_work(run: Run, service: svc.Service) -> Work | None:
    """Stream the subscriber file for what is due, unless the summary says nothing is."""
    try:
        rules = rules_of(run, service)
    except BadInput as exc:
        run.log.error(f"{exc.message}; the service is passed over until it is fixed")
        return None
    work = Work(service, rules)
    moment = run.now()
    summary = state.read_due(run.data, service.name)
    if summary and summary[1] == rules.fingerprint() \
            and summary[2] == state.file_stamp(service.subscribers_path):
        try:
            next_due = parse_time(summary[0])
        except BadInput:
            next_due = EPOCH
        if next_due is None or next_due > moment:
            return work
    limit = max(run.serial_left, 0)
    letters, reminders = [], []
    for sub in subs.subscribers(service.subscribers_path):
        action = next_action(sub, rules)
        if action.kind == NOTHING or action.due > moment:
            continue
        if action.kind == LETTER:
            letters.append((action.due, sub.email, sub.name, action.number))
        elif action.kind == REMIND:
            reminders.append((action.due, sub.email, sub.name))
        else:
            work.tidy = True
        if len(letters) > 4 * limit + 64:  # keep memory bounded on huge files
            letters = heapq.nsmallest(limit, letters)
        if len(reminders) > 4 * limit + 64:
            reminders = heapq.nsmallest(limit, reminders)
    work.letters = heapq.nsmallest(limit, letters)
    work.reminders = heapq.nsmallest(limit, reminders)
    work.tidy = work.tidy or bool(work.letters or work.reminders)
    run.keep_time_for(service.subscribers_path)
    return work


def send_letters(run: Run, work: Work, book: journal.Journal) -> None:
    if not work.letters:
        return
    service = work.service
    try:
        letters = svc.load_letters(service)
    except BadInput as exc:
        run.log.error(f"service {service.name}: its letters cannot be read: {exc.message}")
        return
    for _, email, name, number in work.letters:
        if not run.may_send("serial_left"):
            return
        letter = letters[number - 1]
        outcome = run.deliver(book, service.name, email, str(number), partial(
            compose.series_letter, service, letter, run.settings, email, name, run.lease, run.now()))
        if outcome == BROKEN:
            return
        if outcome != journal.TEMPFAIL:
            run.serial_left -= 1


# --- step 5 ---------------------------------------------------------------------

def remind_and_clean(run: Run, worked: list[Work], book: journal.Journal) -> None:
    """Step 5: reminders to the unconfirmed, inside the same quota and time. The
    deletions and ``done`` marks are applied as the journal is folded."""
    for work in worked:
        service = work.service
        for _, email, name in work.reminders:
            if not run.may_send("serial_left"):
                return
            outcome = run.deliver(book, service.name, email, "reminder", partial(
                compose.confirmation, service, run.settings, email, name, run.lease, run.now()))
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
    service, rules = work.service, work.rules
    moment = run.now()
    earliest: list[datetime | None] = [None]
    gone: Counter = Counter()

    def change(sub: subs.Subscriber) -> subs.Subscriber | None:
        after = sub
        for item in {r[1] for r in records if r[0] == sub.key}:
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

    with files.record_lock(service.subscribers_path):
        subs.rewrite(service.subscribers_path, change, track)
        state.write_due(run.data, service.name, earliest[0], rules.fingerprint(),
                        state.file_stamp(service.subscribers_path))


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


# --- the admin's switch -----------------------------------------------------------

def set_mode(data: DataDir, settings_path, mode: str) -> list[str]:
    """Switch the mode; switching to working clears a self-block and the stale
    locks (SPEC 5 step 7). Returns what was cleared, for the user to read."""
    from vykhukhol import settings as settings_mod

    current = settings_mod.load(settings_path)
    cleared = []
    if mode == "working":
        if state.clear_block(data):
            cleared.append("the self-block")
        limit = current["time_limit"]
        locks = [newsletters.lock(data)] + [svc.db_lock(data, db) for db in svc.list_dbs(data)]
        for lock in locks:
            if _lock_is_dead(lock, limit)[0] and lock.force_free():
                cleared.append(f"the stale lock {lock.busy.relative_to(data.root)}")
    settings_mod.update(settings_path, {"mode": mode})
    return cleared
