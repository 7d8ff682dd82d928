"""Step 2 of docs/design/run.md#run-steps: due newsletters, oldest start first, at most
``news_per_run`` letters, under the newsletters' lock; a job whose list is
exhausted is reported to the admin (:mod:`.news_report`) and deleted.

Each recipient must still be a confirmed subscriber of one of the job's
services, and not on the suppression list (:func:`suppression_gate`), else
the row is "skipped". The letters' outcomes are journalled
(``state/news.journal``) and folded into the jobs' ledgers
(:func:`fold_newsletters`) before the lock is given back.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Container
from datetime import datetime
from functools import partial
from itertools import islice

import vykhukhol.sender.journal as journal
import vykhukhol.watch.brakes as brakes
from vykhukhol import files, mail, newsletters
from vykhukhol import services as svc
from vykhukhol.addresses import email_key
from vykhukhol.bounces import counts, removal
from vykhukhol.errors import BadInput, NotFound, VykhukholError
from vykhukhol.files import events
from vykhukhol.members import membership, suppression
from vykhukhol.newsletters import clicks, history, missed
from vykhukhol.sender.batch import NOT_SUBSCRIBED, SUPPRESSED, Copy, Ended, Letter, send_batch
from vykhukhol.sender.doors import Released, Taken, release, take_lock
from vykhukhol.sender.news_report import newsletter_report, report_subject, subject_as_sent
from vykhukhol.sender.runtime import Run, RunEnds
from vykhukhol.services import subscribers as subs
from vykhukhol.states import LedgerState
from vykhukhol.timeutil import format_time


def send_newsletters(run: Run) -> None:
    """Step 2: due newsletters, oldest start first, ``news_per_run`` letters at
    most. The run ends here (RunEnds) when a dead run held the lock or it could
    not be given back; a lock another run holds costs only this step."""
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
        return
    taken = take_lock(run, lock, "the newsletters")
    if taken is Taken.REFUSED:
        return
    if taken is not Taken.OURS:
        raise RunEnds
    touched: set[str] = set()
    held = brakes.Brakes(run)
    try:
        touched |= fold_newsletters(run, book)
        for job in due:
            if not run.may_send("news_left"):
                break
            if held.holds(brakes.NEWSLETTER, job.name):  # braked: skipped, as a paused job
                continue
            serve_job(run, job, book)
            touched.add(job.name)
    finally:
        try:
            run.sending.drain()  # the letters still on their way (several connections) journalled
            touched |= fold_newsletters(run, book)
            for name in sorted(touched):
                finish_if_exhausted(run, name)
        finally:  # a full disk while folding still frees the lock; the journal waits
            book.close()
            released = release(run, lock, "the newsletters")
    if released is not Released.FREE:
        raise RunEnds


def serve_job(run: Run, job: newsletters.Job, book: journal.Journal) -> None:
    """One job's next rows, batch by batch; a job that can no longer be served
    (its letter, list or services gone or broken) is deleted."""
    from vykhukhol import render  # Jinja2: only when sending
    from vykhukhol.mail import compose  # Jinja2 and the e-mail builder: only when sending
    data = run.data
    _, letter_path, list_path = newsletters.paths(data, job.name)
    try:
        subject, text, html = newsletters.read_letter(data, job.name)
        versions = newsletters.read_versions(data, job.name)
        for parts in ((subject, text, html), *versions.values()):
            for source, what in zip(parts, ("subject", "text", "HTML"), strict=True):
                render.check_syntax(source or "", what)  # its cost is met letter by letter
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
    if job.values.get("clicks") == "yes":
        try:  # its links are stored before its first letter is made
            counted = clicks.prepare(data, run.settings["site_url"], run.settings.secret,
                                     job.name, text, html)
        except VykhukholError as exc:
            run.log.error(f"newsletter {job.name} waits: its links cannot be counted: {exc.message}")
            return
        text, html = counted.text, counted.html
        linked = _counted_versions(run, job.name, versions)
        if linked is None:
            return
        versions = linked
    run.keep_time_for(list_path)
    if job.values.get("first_run", "-") == "-":
        newsletters.change_job(data, job.name, lambda j: j.values.update(
            first_run=format_time(run.now())))
        # Its line in the history, which outlives the job's files
        # (docs/using/newsletters.md#newsletter-history).
        history.begin(data, job.name, subject_as_sent(data, job, subject, run.now()),
                      job.services, run.now(), job.values)
    rows = (row for row in newsletters.read_rows(list_path, job.cursor)
            if row.state is LedgerState.PENDING)
    # Each reader's language and values as the job was made, read alongside the rows.
    reader_of = newsletters.snapshot.follow(data, job.name)
    main = (subject, text, html)
    site_language = run.settings["language"]

    def copy(service: svc.Service, row: newsletters.Row) -> Copy:
        reader = reader_of(row.index)
        (its_subject, its_text, its_html), language = newsletters.snapshot.body_for(
            reader, main, versions, site_language)
        return Copy(partial(compose.newsletter, service, its_subject, its_text, its_html,
                            run.settings, row.email, row.name, run.lease, run.now(),
                            run.presses, job=job.name, lang=language, fields=reader.fields))

    while run.may_send("news_left"):
        batch = list(islice(rows, run.news_left))
        if not batch:
            break
        home = suppression_gate(services, batch, run.suppressed, run.now())
        letters = [Letter(job.name, row.email, str(row.index), None
                          if (service := home.get(email_key(row.email))) is None
                          else copy(service, row),
                          skipped=SUPPRESSED if row.email in run.suppressed else NOT_SUBSCRIBED)
                   for row in batch]
        if send_batch(run, "news_left", book, letters) is not Ended.ALL:
            return  # stopped, or the letter cannot be made: the job waits for a fix


def _counted_versions(run: Run, job: str, versions: dict[str, tuple[str, str, str | None]]
                      ) -> dict[str, tuple[str, str, str | None]] | None:
    """The job's letters in other languages with their links counted, each
    as a letter of its own (``<job>.<language>``); None: the job waits."""
    counted = {}
    for language, (subject, text, html) in versions.items():
        try:
            made = clicks.prepare(run.data, run.settings["site_url"], run.settings.secret,
                                  f"{job}.{language}", text, html)
        except VykhukholError as exc:
            run.log.error(f"newsletter {job} waits: the links of its letter in {language} "
                          f"cannot be counted: {exc.message}")
            return None
        counted[language] = (subject, made.text, made.html)
    return counted


def suppression_gate(services: dict[str, svc.Service], batch: list,
                     suppressed: Container[str] = (),
                     moment: datetime | None = None) -> dict[str, svc.Service]:
    """Which of the batch's addresses are still confirmed subscribers, and of
    which service; none on the suppression list, and none paused
    at ``moment`` (their own page): the row is skipped, as a pause asks for
    no letters at all."""
    wanted = {email_key(row.email) for row in batch if row.email not in suppressed}
    home: dict[str, svc.Service] = {}
    for service in services.values():
        for sub in subs.among(service.subscribers_path, wanted):
            until = sub.paused_until
            if moment is not None and until is not None and until > moment:
                continue
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
            job = newsletters.read_job(run.data, name)
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
            why = missed.why_field(missed.Why.NO_ANSWER) \
                if record.outcome == journal.IN_DOUBT else record.why or "-"
            return newsletters.Row(row.index, row.email, row.name, LedgerState(record.outcome),
                                   record.time, record.lease, why)

        newsletters.rewrite_rows(list_path, apply, only=rows.keys())
        count_refusals(run, name, job.services, rows)  # after: a gone row stays "failed"
        pending = [i for i, r in rows.items() if r.outcome == journal.TEMPFAIL]
        cursor = min(pending) if pending else max(rows) + 1

        def advance(j: newsletters.Job, cursor: int = cursor) -> None:
            j.values.update(cursor=str(max(j.cursor, cursor)), last_run=format_time(run.now()),
                            runs=str(int(j.values.get("runs", "0") or 0) + 1))

        newsletters.change_job(run.data, name, advance)
    book.clear()
    return set(by_job)


def count_refusals(run: Run, name: str, services: list[str],
                   rows: dict[int, journal.Record]) -> None:
    """Refusals at hand-over act on the subscribers as bounces do (docs/design/run.md#run-failures): an
    address gone is suppressed and deleted everywhere, a soft failure is
    counted in each of the job's services (once per letter, whatever
    repeats the fold: :mod:`vykhukhol.bounces.removal`); one read as gone
    with doubt counts as soft, and leaves as gone at the second different
    letter refused so (docs/design/bounces.md#bounces-doubt)."""
    failed = [r for r in rows.values() if r.outcome == journal.FAILED
              and r.cause in (journal.GONE, journal.GONE_IN_DOUBT, "soft", "")]
    if not failed:
        return

    moment = run.now()
    soft: dict[str, list[str]] = defaultdict(list)
    doubt: dict[str, list[str]] = defaultdict(list)
    emails: dict[str, str] = {}
    for record in failed:
        if record.cause == journal.GONE_IN_DOUBT:
            doubt[email_key(record.email)].append(f"newsletter:{name}")  # one letter
            emails[email_key(record.email)] = record.email
        if record.cause == journal.GONE:
            for gone in membership.forget_everywhere(run.data, run.settings, record.email,
                                                     suppression.Why.GONE, "smtp", moment):
                run.log.write(f"{gone}: {record.email} deleted: address gone (refused at "
                              f"hand-over of newsletter {name}); suppressed")
        else:
            soft[email_key(record.email)].append(f"{record.lease}:{name}:{record.item}")
    leaving = counts.note_doubt(run.data, run.settings, dict(doubt), moment) if doubt else set()
    for email in removal.gone_in_doubt(run.data, run.settings, [emails[k] for k in leaving],
                                       "smtp", moment, {}):
        run.log.write(f"{email} deleted: {counts.DOUBT_LETTERS} {removal.DOUBT_WHY} (refused at "
                      f"hand-over of newsletter {name}); suppressed")
    for service in services if soft else []:
        for email in removal.soft_in_service(run.data, run.settings, service, dict(soft), "smtp",
                                             moment):
            run.log.write(f"{service}: {email} deleted: soft bounces (newsletter {name}); "
                          "suppressed")


def finish_if_exhausted(run: Run, name: str) -> None:
    """A job whose list is exhausted: report to the admin in ``language``,
    complete its line in the history, delete its files."""
    data = run.data
    try:
        job = newsletters.read_job(data, name)
    except NotFound:
        return
    _, _, list_path = newsletters.paths(data, name)
    if any(row.state is LedgerState.PENDING for row in newsletters.read_rows(list_path, job.cursor)):
        return
    count = newsletters.counts(list_path)
    hand = newsletters.handed_counts(list_path)
    failed = [row.email for row in newsletters.read_rows(list_path) if row.state is LedgerState.FAILED]
    subject, _, _ = newsletters.read_letter(data, name)
    subject = subject_as_sent(data, job, subject, run.now())
    lang = run.settings["language"]
    report = newsletter_report(job, subject, count, hand, failed, run.now(),
                               run.settings["timezone"], lang)
    run.log.write(f"newsletter {name} finished: {hand['handed']} handed over, "
                  f"{hand['failed']} failed, {count['skipped']} skipped, "
                  f"{count['in doubt']} in doubt")
    events.emit_quietly(data.root, "newsletter.finished",
                        {"newsletter": name, "handed_over": hand["handed"], "failed": hand["failed"],
                         "skipped": count["skipped"], "in_doubt": count["in doubt"]})
    admin = run.settings["admin_email"]
    if admin:
        message = mail.build_message(
            from_name="Vykhukhol", from_email=run.settings["mail.from_email"] or admin,
            to_email=admin, subject=report_subject(subject, lang), text=report,
            run_id=run.lease)
        try:
            run.sending.transport().send(message, admin)
        except mail.DeliveryError as exc:
            run.log.error(f"the report of newsletter {name} could not be mailed: {exc.detail}")
    newsletters.delete(data, name, subject)
