"""A newsletter job's ``<job>.job`` file: its settings and progress.

``key = value`` lines: its services, start and creation times, its cursor and
counts. A job exists once its ``.job`` file does (it is written last and
deleted first). All of a job's files stand under the newsletters' rename lock
(``news.free``), held by a run from before it reads a job until it has handed
its letters over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from vykhukhol import files
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.i18n import LANGUAGES
from vykhukhol.timeutil import format_time, now, parse_time

LOCK_STEM = "news"
PAST_GRACE = 60  # seconds: a start time this far back still means "now" (a form filled slowly)


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


def side_paths(data: DataDir, job: str) -> list[Path]:
    """The job's files beside its three, each there or not: its letter in
    other languages and its readers (docs/using/newsletters.md#newsletter-languages)."""
    return [*(data.job(job, f"{language}.letter") for language in LANGUAGES),
            data.job(job, "readers")]


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


def check_start(start: datetime, typed: str = "") -> datetime:
    """A start time a person asked for: a time in the past is refused (a typo
    in the year would otherwise send at once); leaving it out means "now".
    The refusal echoes ``typed``, the time as the person wrote it in the
    site's timezone, not its UTC reading, which they would not recognise."""
    if start < now() - timedelta(seconds=PAST_GRACE):
        raise BadInput("the start time {time} is in the past; leave it out to start now",
                       time=typed.strip() or format_time(start))
    return start


def reschedule(data: DataDir, name: str, start: datetime) -> Job:
    def change(job: Job) -> None:
        job.start = start
    return change_job(data, name, change)
