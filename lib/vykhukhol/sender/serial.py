"""Steps 4 and 5 of docs/design/run.md#run-steps: one DB's series letters and reminders, under the
DB's lock (:func:`hold_db`, whose way out is step 6).

A service's work is found from its next-due summary and its due index
(:mod:`vykhukhol.sender.dueindex`): only the lines the index says are due are read
(:func:`take_lines`). The letters go out through
:func:`~vykhukhol.sender.batch.send_batch`, journalled; the journal is folded
into the files by :mod:`vykhukhol.sender.fold` on the way out.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from enum import Enum
from functools import partial

import vykhukhol.sender.dueindex as dueindex
import vykhukhol.sender.journal as journal
import vykhukhol.sender.rotation as rotation
import vykhukhol.watch.alerts as alerts
import vykhukhol.watch.brakes as brakes
from vykhukhol import files
from vykhukhol import services as svc
from vykhukhol.errors import BadInput
from vykhukhol.mail.message import Outgoing
from vykhukhol.members import held
from vykhukhol.newsletters import clicks
from vykhukhol.sender.batch import Copy, Ended, Letter, send_batch
from vykhukhol.sender.doors import Taken, release, take_lock
from vykhukhol.sender.fold import fold_series, settle_ahead
from vykhukhol.sender.runtime import Run, RunEnds
from vykhukhol.sender.work import (
    DueLetter,
    DueReminder,
    Held,
    Scan,
    Work,
    index_path,
    save_index,
)
from vykhukhol.services import due_summary, schedule, subscriber_line
from vykhukhol.services.rules import EPOCH, Rules, next_action, rules_of
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.timeutil import parse_time

INDEX_SHARE = 0.3  # share of time_limit a run may spend reading lines into a due index


class NoScan(Enum):
    """Why :func:`take_lines` took nothing."""

    UNFINISHED = "unfinished"  # the index is not whole yet: the rest is read by the next runs
    WRONG = "wrong"            # a line is not what the index says: it is built again


@contextmanager
def hold_db(run: Run, first: svc.Service) -> Iterator[Held]:
    """Take the DB's rename lock for steps 4 and 5 (RunEnds: it could not be had),
    fold a killed predecessor's journal first, and on the way out fold this
    run's letters into the files and release the lock (step 6)."""
    lock = svc.db_lock(run.data, first.db)
    taken = take_lock(run, lock, f"DB {first.db}")
    if taken is not Taken.OURS:
        if taken is Taken.REFUSED:
            # It keeps its turn no longer than a served service would, so a DB
            # whose lock cannot be taken never starves the others.
            rotation.mark_served(run.data, [first.name], run.now())
        raise RunEnds
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
            run.sending.drain()
            fold_series(run, held.book, held.worked)
        finally:  # a full disk while folding still frees the lock; the journal waits
            held.book.close()
            release(run, lock, f"DB {first.db}")


def send_series(run: Run, first: svc.Service, held: Held) -> None:
    """Step 4: the service's due letters, then the other enabled services of
    its DB while quota and time remain. Each service worked on counts as served."""
    braked = brakes.Brakes(run)
    others = [s for s in held.services if s.enabled and s.name != first.name
              and not braked.holds(brakes.SERVICE, s.name)]
    for service in [first] + in_window(run, others):
        if service is not first and not run.may_send("serial_left"):
            break
        work = find_work(run, service)
        if work is None:
            continue
        if service is first or not work.idle:
            held.worked.append(work)
        send_letters(run, work, held.book)
    rotation.mark_served(run.data, [w.service.name for w in held.worked], run.now())


def in_window(run: Run, services: list[svc.Service]) -> list[svc.Service]:
    """Services whose send window matches this minute, longest ago served first."""
    zone = run.settings["timezone"]
    moment = run.now()
    ready = {service.name: service for service in services
             if not service.send_window or schedule.matches_expr(service.send_window, moment, zone)}
    return [ready[name] for name in rotation.in_turn(ready, rotation.served_times(run.data))]


def find_work(run: Run, service: svc.Service) -> Work | None:
    """What is due in the service, from its due index, unless the summary says
    nothing is. Only the lines taken are read (None: the index is still being
    built, and the service waits for the next run)."""
    try:
        rules = rules_of(run.settings, service)
    except BadInput as exc:
        run.log.error(f"{exc.message}; the service is passed over until it is fixed")
        return None
    work = Work(service, rules)
    moment = run.now()
    path = service.subscribers_path
    summary = due_summary.read_due(run.data, service.name)
    stamp = due_summary.file_stamp(path)  # before the read: a change meanwhile voids it
    if summary and summary.fingerprint == rules.fingerprint() and summary.stamp == stamp:
        try:
            next_due = parse_time(summary.next)
        except BadInput:
            next_due = EPOCH
        if next_due is None or next_due > moment:
            return work
    for attempt in (1, 2):
        scan = take_lines(run, service, rules, work, fresh=attempt == 2)
        if scan is not NoScan.WRONG:
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
        due_summary.write_due(run.data, service.name, None if earliest is None else
                        datetime.fromtimestamp(earliest, timezone.utc), rules.fingerprint(), stamp)
    else:
        work.scan = scan
        run.keep_time_for(path)
    return work


def due_index(run: Run, service: svc.Service, rules: Rules, fresh: bool
              ) -> tuple[dueindex.Index | None, bool]:
    """The service's due index brought up to the file (None: not yet, the
    rest is read by the next runs), and whether it is saved as it is."""
    path, saved_at = service.subscribers_path, index_path(run.data, service)
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
               ) -> Scan | NoScan:
    """Read the lines the index says are due into ``work``, or say why not."""
    index, saved = due_index(run, service, rules, fresh)
    if index is None:
        return NoScan.UNFINISHED
    # Recipients waiting out a deferral are taken and passed over: as many more
    # are taken, so they never hold back the others (docs/design/run.md#run-failures).
    wanted = max(run.serial_left, 0) + run.deferrals.deferred_count(service.name)
    choice = dueindex.choose(index, run.now().timestamp(), wanted)
    rows: dict[int, tuple[bytes, Subscriber]] = {}
    letters, reminders, tidy = [], [], False
    offsets, dues, kinds = index.offsets, index.dues, index.kinds
    try:
        handle = open(service.subscribers_path, "rb")
    except FileNotFoundError:
        return NoScan.WRONG
    with handle:
        for kind, taken in ((dueindex.SEND, choice.letters), (dueindex.ASK, choice.reminders),
                            (dueindex.TIDY, choice.tidy)):
            for i in taken:
                if offsets[i] in rows:  # one line twice: the index is wrong, never a letter twice
                    return NoScan.WRONG
                text, raw = dueindex.line_at(handle, offsets[i])
                try:
                    sub = subscriber_line.parse_line(text)
                except BadInput:
                    return NoScan.WRONG
                action = next_action(sub, rules)
                if dueindex.of_action(action) != (kind, dues[i]) or kinds[i] != kind:
                    return NoScan.WRONG
                rows[offsets[i]] = (raw, sub)
                due = datetime.fromtimestamp(dues[i], timezone.utc)
                if kind == dueindex.SEND:
                    letters.append(DueLetter(due, sub.email, sub.name, action.number,
                                             offsets[i], sub.fields, sub.language))
                elif kind == dueindex.ASK:
                    reminders.append(DueReminder(due, sub.email, sub.name, sub.fields,
                                                 language=sub.language))
                else:
                    tidy = True
    work.letters, work.reminders, work.tidy = letters, reminders, tidy
    return Scan(index, rows, saved)


def send_letters(run: Run, work: Work, book: journal.Journal) -> None:
    """Step 4 for one service: its due letters, longest waiting first. A letter
    that cannot be made is passed over for the rest of the run."""
    if not work.letters:
        return
    from vykhukhol.mail import compose  # Jinja2 and the e-mail package: only when sending
    service = work.service
    try:
        letters = svc.load_letters(service)
    except BadInput as exc:
        run.log.error(f"service {service.name}: its letters cannot be read: {exc.message}")
        run.alert(alerts.CANNOT_MAKE, detail=f"{service.name}: {exc.message}")
        return
    broken: set[str] = set()  # letters that cannot be made: skipped for the rest of the run
    # letters with "Clicks: yes" by number and language, their links rewritten
    counted: dict[tuple[int, str | None], svc.Letter] = {}
    site_language = run.settings["language"]

    def make(number: int, email: str, name: str, fields: dict[str, str] | None,
             language: str | None) -> Outgoing:
        if str(number) in broken:  # not made again (a heavy template costs its whole budget)
            raise BadInput(f"letter {number} cannot be made")
        # In the reader's language, else the site's (docs/using/services.md#letter-languages).
        letter, written_in = letters[number - 1].for_reader(language or site_language)
        if letter.clicks:
            if (number, written_in) not in counted:
                counted[number, written_in] = clicks.series_copy(
                    run.data, run.settings["site_url"], run.settings.secret, service.name, letter)
            letter = counted[number, written_in]
        return compose.series_letter(service, letter, run.settings, email, name,
                                     run.lease, run.now(), run.presses, fields=fields,
                                     lang=written_in)

    send_batch(run, "serial_left", book, [
        Letter(service.name, due.email, str(due.number),
               Copy(partial(make, due.number, due.email, due.name, due.fields, due.language)),
               partial(settle_ahead, run, work, book, due.offset, str(due.number)))
        for due in work.letters], broken)


def send_reminders(run: Run, worked: list[Work], book: journal.Journal) -> None:
    """Step 5: reminders to the unconfirmed, inside the same quota and time. The
    deletions and ``done`` marks are applied as the journal is folded."""
    if not any(work.reminders for work in worked):
        return
    if held.holding(run.data):  # a wave of sign-ups: every confirmation request waits for the owner
        run.log.write("reminders wait: confirmation requests are held since a wave of sign-ups")
        return
    from vykhukhol.mail import compose  # Jinja2 and the e-mail package: only when sending
    for work in worked:
        service = work.service
        letters = [Letter(service.name, due.email, "reminder", Copy(partial(
            compose.confirmation, service, run.settings, due.email, due.name, run.lease,
            run.now(), run.presses, reminder=True, fields=due.fields, language=due.language)))
            for due in work.reminders]
        if send_batch(run, "serial_left", book, letters) is Ended.STOPPED:
            return  # a reminder that cannot be made passes over the rest of its service only
