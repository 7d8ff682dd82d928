"""Newsletter jobs ("Письмо всем юзерам"): three files per job.

* ``<job>.job``    — settings and progress (``key = value`` lines);
* ``<job>.letter`` — the letter code: ``Subject:`` header, blank line, text,
  and optionally a line ``=== html ===`` followed by the HTML alternative;
* ``<job>.list``   — the ledger: one recipient a row (email, name, state,
  time, lease id), deduplicated across the job's services at creation.

A job exists once its ``.job`` file does (it is written last and deleted
first). Ledger states only move forward (``pending`` → sent / failed /
skipped / in doubt; sent / in doubt → failed when a bounce comes back).
Counts are always taken from the ledger itself. The job's line in
``history.txt`` (:mod:`vykhukhol.newsletters.history`) outlives its files: what it handed
over, and its services, so a bounce that comes back after its job finished
still finds its recipient (:mod:`vykhukhol.bounces`). A service that follows
its site's feed gets a job for each new item (:mod:`vykhukhol.newsletters.feeds`,
its settings in :mod:`.feed_settings`, the HTTP read in :mod:`.feed_fetch`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from vykhukhol import files
from vykhukhol.addresses import email_key
from vykhukhol.datadir import DataDir, check_name
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.newsletters import history
from vykhukhol.services import find_service, given_html, subscribers
from vykhukhol.states import LedgerState
from vykhukhol.timeutil import format_time, now, parse_time

LOCK_STEM = "news"
PAST_GRACE = 60  # seconds: a start time this far back still means "now" (a form filled slowly)
HTML_MARK = "=== html ==="
LIST_HEADER = "#email\tname\tstate\ttime\tlease"
BOUNCED_LEASE = "bounce"  # the lease field of a row a bounce made failed


@dataclass
class Row:
    index: int  # 0-based position in the ledger
    email: str
    name: str
    state: LedgerState
    time: str = "-"
    lease: str = "-"

    def to_line(self) -> str:
        return "\t".join((self.email, self.name, self.state.value, self.time, self.lease))


@dataclass
class Job:
    name: str
    services: list[str]
    start: datetime
    created: datetime
    values: dict[str, str] = field(default_factory=dict)

    @property
    def cursor(self) -> int:
        return int(self.values.get("cursor", "0") or 0)


def lock(data: DataDir) -> files.RenameLock:
    return files.RenameLock(data.newsletters, LOCK_STEM)


def paths(data: DataDir, job: str) -> tuple[Path, Path, Path]:
    return data.job(job, "job"), data.job(job, "letter"), data.job(job, "list")


def read_job(data: DataDir, name: str) -> Job:
    job_path = data.job(name, "job")
    text = files.read_text(job_path)
    if text is None:
        raise NotFound(f"no newsletter {name!r}")
    values = {}
    for line in text.split("\n"):  # not splitlines(): a value may hold U+2028 and kin
        key, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            values[key.strip()] = value.strip()
    try:
        start = parse_time(values.get("start", "-")) or now()
        created = parse_time(values.get("created", "-")) or start
    except BadInput:
        raise BadInput(f"newsletter {name!r}: its .job file has a bad time") from None
    services = [s for s in values.get("services", "").split(",") if s]
    return Job(name=name, services=services, start=start, created=created, values=values)


def write_job(data: DataDir, job: Job) -> None:
    values = dict(job.values)
    values.update(services=",".join(job.services), start=format_time(job.start),
                  created=format_time(job.created))
    files.atomic_write(data.job(job.name, "job"), [f"{k} = {v}\n" for k, v in values.items()])


def change_job(data: DataDir, name: str, change: Callable[[Job], None]) -> Job:
    if not data.job(name, "job").exists():  # no lock file for a job that is not there
        raise NotFound(f"no newsletter {name!r}")
    with files.record_lock(data.job(name, "job")):
        job = read_job(data, name)
        change(job)
        write_job(data, job)
    return job


def list_jobs(data: DataDir) -> list[Job]:
    """Every job, oldest start time first; a .job that cannot be read is left out."""
    jobs = []
    if data.newsletters.is_dir():
        for path in data.newsletters.glob("*.job"):
            try:
                jobs.append(read_job(data, path.stem))
            except (BadInput, NotFound):
                continue
    return sorted(jobs, key=lambda j: (j.start, j.name))


def read_letter(data: DataDir, name: str) -> tuple[str, str, str | None]:
    """(subject, text, html) of a job; NotFound when the file is missing."""
    text = files.read_text(data.job(name, "letter"))
    if text is None:
        raise NotFound(f"newsletter {name!r} has no letter file")
    head, _, body = text.partition("\n\n")
    subject = ""
    for line in head.split("\n"):  # not splitlines(): a subject may hold U+2028 and kin
        key, _, value = line.partition(":")
        if key.strip().lower() == "subject":
            subject = value.strip()
    html = None
    if f"\n{HTML_MARK}\n" in f"\n{body}":
        body, _, html = f"\n{body}".partition(f"\n{HTML_MARK}\n")
        body = body[1:]
    return subject, body, given_html(html)


def read_rows(path: Path, start: int = 0) -> Iterator[Row]:
    """Ledger rows from index ``start`` on; a malformed row reads as failed."""
    for index, line in _row_lines(path):
        if index >= start:
            yield _parse_row(index, line)


def _row_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(index, line) of each row of a ledger, comments and blank lines left out."""
    index = -1
    for line in files.read_lines(path):
        if not line or line.startswith("#"):
            continue
        index += 1
        yield index, line


def _parse_row(index: int, line: str) -> Row:
    parts = line.split("\t")
    try:
        return Row(index, parts[0], parts[1], LedgerState(parts[2]), parts[3], parts[4])
    except (IndexError, ValueError):
        return Row(index, parts[0] if parts else "", "", LedgerState.FAILED)


def rewrite_rows(path: Path, change: Callable[[Row], Row],
                 only: Collection[int] | None = None, bounced: bool = False) -> None:
    """Stream-rewrite a ledger under its record lock; states never move back
    (``bounced``: the bounce reader's one exception, sent or in doubt → failed).
    With ``only``, the rows of other indexes are copied through unparsed (a
    run that sent 50 letters of a million-row job changes 50 lines)."""
    def lines() -> Iterator[str]:
        yield LIST_HEADER + "\n"
        for index, line in _row_lines(path):
            if only is not None and index not in only:
                yield line + "\n"
                continue
            row = _parse_row(index, line)
            after = change(row)
            if not row.state.may_become(after.state, bounced):
                after = row
            yield after.to_line() + "\n"

    with files.record_lock(path):
        if path.exists():
            files.atomic_write(path, lines())


def counts(path: Path) -> dict[str, int]:
    result = {state.value: 0 for state in LedgerState}
    for row in read_rows(path):
        result[row.state.value] += 1
    result["total"] = sum(result.values())
    return result


def _recipients(data: DataDir, services: list[str]) -> Iterator[tuple[str, str]]:
    """Confirmed subscribers of the services, each address once, in service order."""
    seen: set[str] = set()
    for name in services:
        service = find_service(data, name)
        for email, person in subscribers.confirmed(service.subscribers_path):
            key = email_key(email)
            if key not in seen:
                seen.add(key)
                yield email, person


def check_start(start: datetime, typed: str = "") -> datetime:
    """A start time a person asked for: a time in the past is refused (a typo
    in the year would otherwise send at once); leaving it out means "now".
    The refusal echoes ``typed``, the time as the person wrote it in the
    site's timezone, not its UTC reading, which they would not recognise."""
    if start < now() - timedelta(seconds=PAST_GRACE):
        raise BadInput("the start time {time} is in the past; leave it out to start now",
                       time=typed.strip() or format_time(start))
    return start


def check_letter(subject: str, text: str, html: str | None) -> str:
    """The subject, stripped, of a letter that may be sent; BadInput says why not."""
    from vykhukhol import render

    subject = (subject or "").strip()
    if not subject or any(c in subject for c in "\r\n"):
        raise BadInput("subject: must be one non-empty line")
    budget = render.Budget()  # as when it is sent: the parts share one budget
    render.check_template(subject, "subject", budget=budget)
    render.check_template(text or "", "text", budget=budget)
    if html:
        render.check_template(html, "HTML", html=True, budget=budget)
    if not (text or "").strip():
        raise BadInput("text: must not be empty")
    return subject


def create(data: DataDir, services: list[str], subject: str, text: str,
           html: str | None = None, start: datetime | None = None,
           progress: Callable[[int], None] | None = None, public: bool = False,
           job_name: str | None = None, clicks: bool = False) -> str:
    """Make a job; returns its name. Nothing is left behind when it fails.
    ``job_name``: the job's name chosen by the caller (a feed's item names its
    letter, so making it again after a kill makes the same job).
    ``public``: published in its services' archives once it ends (a copy of
    the letter is kept either way, :func:`vykhukhol.archive.keep_newsletter`).
    ``clicks``: its links are counted (:mod:`vykhukhol.newsletters.clicks`)."""
    from vykhukhol import archive
    html = given_html(html)
    services = [check_name(s.strip(), "service name") for s in services if s.strip()]
    if not services:
        raise BadInput("choose at least one service")
    for name in services:
        find_service(data, name)
    subject = check_letter(subject, text, html)
    moment = now()
    name = check_name(job_name, "job name") if job_name \
        else f"{moment:%Y%m%d-%H%M%S}-{os.urandom(3).hex()}"
    job_path, letter_path, list_path = paths(data, name)
    files.make_folder(data.newsletters)
    total = 0
    # Row(index, email, name, PENDING).to_line() less its first two fields, made
    # once: a Row per recipient would cost a second or two at a million.
    pending = "\t".join((LedgerState.PENDING.value, Row.time, Row.lease))

    def rows() -> Iterator[str]:
        nonlocal total
        yield LIST_HEADER + "\n"
        for email, person in _recipients(data, services):
            total += 1
            if progress and total % 10000 == 0:
                progress(total)
            yield f"{email}\t{person}\t{pending}\n"

    try:
        letter = f"Subject: {subject}\n\n{text}"
        if html:
            letter += f"\n{HTML_MARK}\n{html}"
        files.atomic_write(letter_path, letter)
        archive.keep_newsletter(data, name, services, subject, text or "", html, public)
        files.atomic_write(list_path, rows())
        job = Job(name=name, services=services, start=start or moment, created=moment,
                  values={"cursor": "0", "total": str(total), "runs": "0",
                          **({"clicks": "yes"} if clicks else {})})
        write_job(data, job)
    except BaseException:
        for path in (job_path, letter_path, list_path):
            files.remove(path)
        archive.forget_newsletter(data, name)
        raise
    return name


def handed_counts(path: Path) -> dict[str, int]:
    """What a ledger says of the hand-over, for the history: ``handed`` (the
    server accepted it: sent, or sent and bounced later), ``failed`` (refused
    at hand-over) and ``in_doubt``."""
    result = {"handed": 0, "failed": 0, "in_doubt": 0}
    for row in read_rows(path):
        if row.state is LedgerState.SENT or (row.state is LedgerState.FAILED
                                             and row.lease == BOUNCED_LEASE):
            result["handed"] += 1
        elif row.state is LedgerState.FAILED:
            result["failed"] += 1
        elif row.state is LedgerState.IN_DOUBT:
            result["in_doubt"] += 1
    return result


def delete(data: DataDir, name: str, subject: str | None = None, cancelled: bool = False) -> None:
    """Remove a job's three files, the .job first so no run picks it up meanwhile,
    then its lock files (one held at this moment is left to :func:`sweep_locks`).
    Its line in the history gets its end and counts first (``subject``: as sent,
    when known) and keeps its services for bounces that come back later;
    ``cancelled``: the admin cancelled it, which the line says."""
    try:
        job = read_job(data, name)
        if subject is None and not any(e.job == name for e in history.entries(data)):
            try:
                subject = read_letter(data, name)[0]  # never started: the subject as typed
            except NotFound:
                subject = ""
        history.close(data, name, job.services, handed_counts(data.job(name, "list")), now(),
                      subject, cancelled)
    except (BadInput, NotFound):
        pass
    for path in paths(data, name):
        files.remove(path)
    for path in _locked(data, name):
        files.drop_lock(path)


def _locked(data: DataDir, name: str) -> tuple[Path, Path]:
    """The files of a job that are changed under a record lock (``<file>.lock``)."""
    return data.job(name, "job"), data.job(name, "list")


_LOCK_SUFFIXES = (".job.lock", ".list.lock")


def sweep_locks(data: DataDir) -> int:
    """Delete the lock files nobody holds that guard nothing any more; returns
    how many went. Run by every sender run (README 1: a finished job's files
    are deleted, and README 9).

    * ``<job>.job.lock`` and ``<job>.list.lock`` once ``<job>.job`` is gone (a
      finished or cancelled job whose lock was held when it was deleted, or a
      start of a job that never was): every change under them reads the .job
      or the ledger first and finds nothing to change. Job names are never
      reused, so none can come back.
    * ``news.free.lock`` once news.free or news.busy exists: it only guards
      their creation (:meth:`files.RenameLock.ensure`), and one of the two is
      always there after that.
    """
    try:
        entries = [entry.name for entry in os.scandir(data.newsletters)]
    except OSError:
        return 0
    present = set(entries)
    gone = 0
    for entry in entries:
        suffix = next((s for s in _LOCK_SUFFIXES if entry.endswith(s)), None)
        if suffix is None:
            continue
        job_path = data.newsletters / f"{entry[:-len(suffix)]}.job"  # any name: no check_name
        if job_path.name not in present and not job_path.exists():
            gone += files.drop_lock(data.newsletters / entry[:-len(".lock")])
    rename_lock = lock(data)
    if f"{rename_lock.free.name}.lock" in present and (
            rename_lock.free.exists() or rename_lock.busy.exists()):
        gone += files.drop_lock(rename_lock.free)
    return gone


def finished_jobs(data: DataDir) -> list[tuple[str, list[str]]]:
    """(name, services) of the jobs the history knows (deleted or not), oldest first."""
    return history.finished_jobs(data)


def cancel(data: DataDir, name: str) -> None:
    from vykhukhol import archive

    if not data.job(name, "job").exists():
        raise NotFound(f"no newsletter {name!r}")
    delete(data, name, cancelled=True)
    archive.forget_newsletter(data, name)


def edit_letter(data: DataDir, name: str, subject: str, text: str, html: str | None) -> None:
    """A waiting job's new subject, text and HTML. Changed under the
    newsletters' lock, the one a run holds from before it reads a job's letter
    until it has handed its letters over: so a run sends either the old letter
    or the new one, never half of each, and once a run has begun the job
    (``first_run``, written under that lock before its first letter leaves)
    it is refused. A run holding the lock right now: refused, try again."""
    from vykhukhol import archive
    from vykhukhol.errors import LockBusy, StorageError

    html = given_html(html)
    subject = check_letter(subject, text, html)
    news = lock(data)
    news.ensure()
    try:
        # stamped as a run's, so a killed web process is seen dead (locks._holder_alive)
        news.acquire(f"admin-edit-{os.urandom(4).hex()}\t{os.getpid()}\t{os.uname().nodename}")
    except (LockBusy, StorageError):
        raise BadInput("a run is handing newsletters over right now; "
                       "nothing was changed: save again in a minute") from None
    try:
        job = read_job(data, name)
        if job.values.get("first_run", "-") != "-":
            raise BadInput("its first letter has left: it can no longer be changed")
        letter = f"Subject: {subject}\n\n{text}" + (f"\n{HTML_MARK}\n{html}" if html else "")
        files.atomic_write(data.job(name, "letter"), letter)
        kept = archive.kept_newsletter(data, name)
        archive.keep_newsletter(data, name, job.services, subject, text, html,
                                kept.public if kept else False)
    finally:
        news.release()


def reschedule(data: DataDir, name: str, start: datetime) -> Job:
    def change(job: Job) -> None:
        job.start = start
    return change_job(data, name, change)


def skip_address(data: DataDir, service: str, email: str) -> int:
    """Unsubscribe: pending rows of this address become ``skipped`` in every job
    that includes ``service``. Returns how many rows changed."""
    wanted = email_key(email)
    changed = 0
    for job in list_jobs(data):
        if service not in job.services:
            continue

        def mark(row: Row) -> Row:
            nonlocal changed
            if row.state is LedgerState.PENDING and email_key(row.email) == wanted:
                changed += 1
                return Row(row.index, row.email, row.name, LedgerState.SKIPPED,
                           format_time(now()), "unsubscribed")
            return row

        list_path = data.job(job.name, "list")
        if _mentions(list_path, wanted):
            rewrite_rows(list_path, mark)
    return changed


def _mentions(path: Path, key: str) -> bool:
    return any(email_key(line.split("\t", 1)[0]) == key
               for line in files.read_lines(path) if line.lower().startswith(key.split("@")[0]))


def history_now(data: DataDir) -> list[history.Entry]:
    """The history, newest first, a job still running counted from its ledger
    as it stands (its line has the hand-over counts only once it is finished)."""
    from dataclasses import replace

    result = []
    for entry in history.entries(data):
        if entry.finished == "-" and data.job(entry.job, "job").exists():
            entry = replace(entry, **handed_counts(data.job(entry.job, "list")))
        result.append(entry)
    return result[::-1]
