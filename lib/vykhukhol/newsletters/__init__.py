"""Newsletter jobs ("Письмо всем юзерам"): one letter to every subscriber of
some services, three files per job.

What the package offers, by module:

- :mod:`~vykhukhol.newsletters.jobs`: ``<job>.job``, a job's settings and progress;
- :mod:`~vykhukhol.newsletters.letter`: ``<job>.letter``, the letter it sends
  (and ``<job>.<language>.letter``, the letter in another language);
- :mod:`~vykhukhol.newsletters.recipients`: ``<job>.list``, its ledger, one recipient a row;
- :mod:`~vykhukhol.newsletters.snapshot`: ``<job>.readers``, each recipient's
  language and field values as the job was made;
- :mod:`~vykhukhol.newsletters.lifecycle`: making a job, ending it, cancelling it;
- :mod:`~vykhukhol.newsletters.history`: ``history.txt``, a line for every job, kept after it;
- :mod:`~vykhukhol.newsletters.missed`: ``<job>.missed``, who did not get it and why;
- :mod:`~vykhukhol.newsletters.segments`: the condition of a newsletter to part of its services;
- :mod:`~vykhukhol.newsletters.clicks`: the counted links of a letter;
- :mod:`~vykhukhol.newsletters.feeds`: a job for each new item of a site's feed
  (its settings in :mod:`.feed_settings`, the HTTP read in :mod:`.feed_fetch`).

The names of the first four are offered here as well (``newsletters.create``).
"""

from __future__ import annotations

from vykhukhol.newsletters import history, missed, snapshot
from vykhukhol.newsletters.jobs import (
    LOCK_STEM,
    PAST_GRACE,
    Job,
    change_job,
    check_start,
    list_jobs,
    lock,
    paths,
    read_job,
    reschedule,
    write_job,
)
from vykhukhol.newsletters.letter import (
    HTML_MARK,
    check_letter,
    edit_letter,
    read_letter,
    read_source,
    read_version_sources,
    read_versions,
)
from vykhukhol.newsletters.lifecycle import (
    cancel,
    create,
    delete,
    finished_jobs,
    history_now,
    resend,
    sweep_locks,
)
from vykhukhol.newsletters.recipients import (
    BOUNCED_LEASE,
    LIST_HEADER,
    Row,
    count_chosen,
    counts,
    handed_counts,
    read_rows,
    rewrite_rows,
    skip_address,
)

__all__ = [
    "BOUNCED_LEASE", "HTML_MARK", "LIST_HEADER", "LOCK_STEM", "PAST_GRACE", "Job", "Row",
    "cancel", "change_job", "check_letter", "check_start", "count_chosen", "counts", "create", "delete",
    "edit_letter", "finished_jobs", "handed_counts", "history", "history_now", "list_jobs",
    "lock", "missed", "paths", "read_job", "read_letter", "read_source", "read_version_sources",
    "read_versions", "reschedule", "resend",
    "rewrite_rows", "read_rows",
    "skip_address", "snapshot", "sweep_locks", "write_job",
]
