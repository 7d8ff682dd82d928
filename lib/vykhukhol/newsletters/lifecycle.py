"""A newsletter job from its making to its line in the history.

:func:`create` writes its three files, and beside them its letter in other
languages and its readers' snapshot (nothing is left behind when it fails);
:func:`delete` and :func:`cancel` remove them all, the ``.job`` first. The job's
line in ``history.txt`` (:mod:`vykhukhol.newsletters.history`) outlives its
files: what it handed over, and its services, so a bounce that comes back
after its job finished still finds its recipient (:mod:`vykhukhol.bounces`).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Collection, Container, Iterator
from datetime import datetime
from pathlib import Path

import vykhukhol.newsletters.history as history
import vykhukhol.newsletters.missed as missed
import vykhukhol.newsletters.snapshot as snapshot
from vykhukhol import archive, files
from vykhukhol.addresses import email_key
from vykhukhol.datadir import DataDir, check_name
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.newsletters.jobs import Job, lock, paths, read_job, side_paths, write_job
from vykhukhol.newsletters.letter import check_letter, letter_file, read_letter, version_path
from vykhukhol.newsletters.recipients import LIST_HEADER, Row, confirmed_readers, handed_counts
from vykhukhol.newsletters.segments import Condition, must_choose
from vykhukhol.services import check_language, find_service, given_html, sent_parts
from vykhukhol.states import LedgerState
from vykhukhol.timeutil import now


def create(data: DataDir, services: list[str], subject: str, text: str,
           html: str | None = None, start: datetime | None = None,
           progress: Callable[[int], None] | None = None, public: bool = False,
           job_name: str | None = None, clicks: bool = False, markdown: bool = False,
           only: Collection[str] | None = None, resend_of: str = "",
           where: Condition | None = None,
           versions: dict[str, tuple[str, str, str | None]] | None = None) -> str:
    """Make a job; returns its name. Nothing is left behind when it fails.
    ``job_name``: the job's name chosen by the caller (a feed's item names its
    letter, so making it again after a kill makes the same job).
    ``public``: published in its services' archives once it ends (a copy of
    the letter is kept either way, :func:`vykhukhol.archive.keep_newsletter`).
    ``clicks``: its links are counted (:mod:`vykhukhol.newsletters.clicks`).
    ``markdown``: the text is Markdown (docs/using/newsletters.md#newsletter-markdown).
    ``only``: the address keys it goes to (of the services' confirmed
    subscribers); ``resend_of``: the job it sends again (:func:`resend`);
    ``where``: only the confirmed subscribers it chooses (a segment,
    docs/using/newsletters.md#newsletter-segments), refused when it chooses
    nobody; the job and its history keep it and how many it chose.
    ``versions``: the letter in other languages, (subject, text, html) by
    language (docs/using/newsletters.md#newsletter-languages)."""
    html = given_html(html)
    services = [check_name(s.strip(), "service name") for s in services if s.strip()]
    if not services:
        raise BadInput("choose at least one service")
    for name in services:
        find_service(data, name)
    subject = check_letter(subject, text, html, markdown)
    other = {check_language(language): (check_letter(v_subject, v_text, given_html(v_html), markdown),
                                         v_text, given_html(v_html))
             for language, (v_subject, v_text, v_html) in (versions or {}).items()}
    moment = now()
    name = check_name(job_name, "job name") if job_name \
        else f"{moment:%Y%m%d-%H%M%S}-{os.urandom(3).hex()}"
    job_path, letter_path, list_path = paths(data, name)
    files.make_folder(data.newsletters)
    total = 0
    # Row(index, email, name, PENDING).to_line() less its first two fields, made
    # once: a Row per recipient would cost a second or two at a million.
    pending = "\t".join((LedgerState.PENDING.value, Row.time, Row.lease, Row.why))
    # The rows with trailing fields (a language, field values), as two plain
    # arrays: ~90 bytes a row, where a tuple a row cost twice that at a million.
    kept_rows, kept_values = array("q"), []

    def rows() -> Iterator[str]:
        nonlocal total
        yield LIST_HEADER + "\n"
        batch: list[str] = []  # lines written at a time: not a write per row
        for email, person, extra in confirmed_readers(data, services, where):
            if only is not None and email_key(email) not in only:
                continue
            if extra:  # what of it the job keeps: snapshot.write decides, a thousand at once
                kept_rows.append(total)
                kept_values.append(extra)
            total += 1
            if progress and total % 10000 == 0:
                progress(total)
            batch.append(f"{email}\t{person}\t{pending}\n")
            if len(batch) == 1024:
                yield "".join(batch)
                batch.clear()
        yield "".join(batch)

    try:
        files.atomic_write(letter_path, letter_file(subject, text, html, markdown))
        archive.keep_newsletter(data, name, services, subject,
                                *sent_parts(text or "", html, markdown), public)
        for language, (v_subject, v_text, v_html) in other.items():
            files.atomic_write(version_path(data, name, language),
                               letter_file(v_subject, v_text, v_html, markdown))
            archive.keep_version(data, name, language, v_subject,
                                 *sent_parts(v_text or "", v_html, markdown))
        files.atomic_write(list_path, rows())
        if where is not None:
            must_choose(total, where)
        snapshot.write(data, name, zip(kept_rows, kept_values, strict=True))
        job = Job(name=name, services=services, start=start or moment, created=moment,
                  values={"cursor": "0", "total": str(total), "runs": "0",
                          **({"clicks": "yes"} if clicks else {}),
                          **({"resend_of": resend_of} if resend_of else {}),
                          **({"where": where.text, "matched": str(total)} if where else {})})
        write_job(data, job)
    except BaseException:
        for path in (job_path, letter_path, list_path, *side_paths(data, name)):
            files.remove(path)
        archive.forget_newsletter(data, name)
        raise
    return name


def delete(data: DataDir, name: str, subject: str | None = None, cancelled: bool = False) -> None:
    """Remove a job's files, the .job first so no run picks it up meanwhile,
    then its lock files (one held at this moment is left to :func:`sweep_locks`).
    Its line in the history gets its end and counts first (``subject``: as sent,
    when known) and keeps its services for bounces that come back later;
    ``cancelled``: the admin cancelled it, which the line says."""
    try:
        job = read_job(data, name)
        missed.keep(data, name)  # who did not get it outlives the ledger
        if subject is None and not any(e.job == name for e in history.entries(data)):
            try:
                subject = read_letter(data, name)[0]  # never started: the subject as typed
            except NotFound:
                subject = ""
        history.close(data, name, job.services, handed_counts(data.job(name, "list")), now(),
                      subject, cancelled, job.values)
    except (BadInput, NotFound):
        pass
    for path in (*paths(data, name), *side_paths(data, name)):
        files.remove(path)
    for path in _locked(data, name):
        files.drop_lock(path)


def _locked(data: DataDir, name: str) -> tuple[Path, ...]:
    """The files of a job that are changed under a record lock (``<file>.lock``;
    the readers' when an erased address leaves it)."""
    return data.job(name, "job"), data.job(name, "list"), snapshot.path(data, name)


_LOCK_SUFFIXES = (".job.lock", ".list.lock", ".missed.lock", ".readers.lock")


def sweep_locks(data: DataDir) -> int:
    """Delete the lock files nobody holds that guard nothing any more; returns
    how many went. Run by every sender run (a finished job's files are
    deleted: docs/reference/data-files.md#data-files-writes).

    * ``<job>.job.lock``, ``<job>.list.lock``, ``<job>.readers.lock`` and
      ``<job>.missed.lock`` (a resend marks the kept rows under it) once ``<job>.job`` is gone (a
      finished or cancelled job whose lock was held when it was deleted, or a
      start of a job that never was): every change under them reads the .job
      or the ledger first and finds nothing to change. Job names are never
      reused, so none can come back.
    * ``news.free.lock`` once news.free or news.busy exists: it only guards
      their creation (:meth:`files.RenameLock.ensure`), and one of the two is
      always there after that.
    * ``<job>.missed`` past its days (:func:`missed.prune`).
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
    return gone + missed.prune(data)


def finished_jobs(data: DataDir) -> list[tuple[str, list[str]]]:
    """(name, services) of the jobs the history knows (deleted or not), oldest first."""
    return history.finished_jobs(data)


def cancel(data: DataDir, name: str) -> None:
    if not data.job(name, "job").exists():
        raise NotFound(f"no newsletter {name!r}")
    delete(data, name, cancelled=True)
    archive.forget_newsletter(data, name)


def resend(data: DataDir, job: str, suppressed: Container[str]) -> tuple[str, int]:
    """A new job of ``job``'s kept letter to those refused for a while who may
    still have it (:func:`missed.resendable`); returns its name and how many it
    goes to. Refused when there is nobody, or no letter kept."""
    kept = archive.kept_newsletter(data, job)
    if kept is None:
        raise NotFound("the letter of newsletter {job} is no longer kept: it cannot be sent again",
                       job=job)
    chosen = missed.resendable(data, job, suppressed)
    if not chosen:
        raise BadInput("newsletter {job}: nobody to send it again to (nobody refused for a "
                       "while is still subscribed, or it was sent again already)", job=job)
    missed.mark_resent(data, job, chosen)  # first: a failure below loses a resend, never doubles one
    name = create(data, kept.services or missed.services_of(data, job), kept.subject, kept.text,
                  kept.html, only={email_key(m.email) for m in chosen}, resend_of=job,
                  versions=archive.kept_versions(data, job))
    return name, len(chosen)


def history_now(data: DataDir) -> list[history.Entry]:
    """The history, newest first, a job still running counted from its ledger
    as it stands (its line has the hand-over counts only once it is finished)."""
    from dataclasses import replace

    result = []
    for entry in history.entries(data):
        if entry.finished == "-" and data.job(entry.job, "job").exists():
            counts = handed_counts(data.job(entry.job, "list"))
            entry = replace(entry, handed=counts["handed"], failed=counts["failed"],
                            in_doubt=counts["in_doubt"])
        result.append(entry)
    return result[::-1]
