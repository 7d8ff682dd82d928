"""Who did not get a newsletter, and why (docs/using/newsletters.md#newsletter-failed).

A ledger row that did not get the letter (failed at hand-over, skipped, in
doubt) keeps why in its last field, written by the sender's fold: a
:class:`Why` and, for a refusal, the server's reply (``temporary: 451 4.2.1
mailbox busy``, ``refused: 550 5.1.1 no such user``, ``suppressed``).

While the job runs its ledger is read; when it ends (:func:`keep`, called by
:func:`~vykhukhol.newsletters.lifecycle.delete`) those rows alone are kept in
``<job>.missed``, in the ledger's own format, for :data:`KEEP_DAYS` days
(:func:`prune`, on every sender run). A resend
(:func:`~vykhukhol.newsletters.lifecycle.resend`) makes a new job of the kept
letter copy for :func:`resendable`: the rows refused for a temporary reason
whose address is still a confirmed subscriber and not suppressed; those rows
are marked :data:`RESENT_LEASE` first (:func:`mark_resent`), so nobody gets the
letter twice even when the making fails (then nobody gets it again: the safe
direction).

It does not count bounces: a letter that bounced later was handed over, and
the history counts it (:mod:`vykhukhol.newsletters.history`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Container
from enum import Enum
from pathlib import Path
from typing import NamedTuple

import vykhukhol.newsletters.history as history
from vykhukhol import files
from vykhukhol.addresses import email_key
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.files.runlog import one_line
from vykhukhol.i18n import tr
from vykhukhol.newsletters.jobs import read_job
from vykhukhol.newsletters.recipients import (
    BOUNCED_LEASE,
    LIST_HEADER,
    Row,
    confirmed_recipients,
    read_rows,
    rewrite_rows,
)
from vykhukhol.states import LedgerState

KEEP_DAYS = 90  # days a finished job's rows that did not get it are kept
SUFFIX = "missed"
RESENT_LEASE = "resent"  # the lease of a kept row whose letter a resend took over
REPLY_CHARS = 300  # the most of a server's reply a row keeps


def _(text: str) -> str:  # marks a text for the catalog (tools/i18n.py extract)
    return text


class Why(str, Enum):
    """Why a recipient did not get the letter; the value is the ledger's word."""

    REFUSED = "refused"            # a permanent refusal (5xx, an impossible address)
    TEMPORARY = "temporary"        # 4xx or no connection for days: given up
    UNSUBSCRIBED = "unsubscribed"  # no longer a confirmed subscriber (or paused)
    SUPPRESSED = "suppressed"      # on the suppression list
    NO_ANSWER = "no answer"        # in doubt: the run died or the server went silent

    def label(self, lang: str) -> str:
        return tr(lang, _LABELS[self])


_LABELS = {
    Why.REFUSED: _("refused"),
    Why.TEMPORARY: _("refused for a while, given up"),
    Why.UNSUBSCRIBED: _("no longer subscribed"),
    Why.SUPPRESSED: _("on the suppression list"),
    Why.NO_ANSWER: _("in doubt: no answer"),
}


def why_field(why: Why, reply: str = "") -> str:
    """A row's why field: the word, then the server's reply on one line."""
    reply = one_line(reply)[:REPLY_CHARS]  # a stranger's words: no terminal commands
    return f"{why.value}: {reply}" if reply else why.value


def refusal(temporary: bool, code: int | None, detail: str) -> str:
    """The why field of a letter refused at hand-over."""
    return why_field(Why.TEMPORARY if temporary else Why.REFUSED,
                     f"{code} {detail}" if code is not None else detail)


class Missed(NamedTuple):
    """One recipient who did not get the letter."""

    email: str
    name: str
    state: LedgerState
    time: str
    why: Why
    reply: str     # the server's words ("" when there are none)
    resent: bool   # a resend has taken this one over


def read_why(row: Row) -> tuple[Why, str]:
    """A row's reason; a row written before the field says it by its state."""
    word, _sep, reply = row.why.partition(": ")
    try:
        return Why(word), reply
    except ValueError:
        pass
    if row.state is LedgerState.IN_DOUBT:
        return Why.NO_ANSWER, ""
    if row.state is LedgerState.SKIPPED:
        return Why.UNSUBSCRIBED, ""
    return Why.REFUSED, ""


def _not_got(row: Row) -> bool:
    """Whether a row did not get the letter (a bounced one was handed over)."""
    return row.state in (LedgerState.SKIPPED, LedgerState.IN_DOUBT) or (
        row.state is LedgerState.FAILED and row.lease != BOUNCED_LEASE)


def path(data: DataDir, job: str) -> Path:
    return data.job(job, SUFFIX)


def _source(data: DataDir, job: str) -> Path | None:
    """The running job's ledger, else its kept rows; None when the history
    knows the job but nothing was kept (everyone got it); NotFound else."""
    for suffix in ("list", SUFFIX):
        found = data.job(job, suffix)
        if found.is_file():
            return found
    if any(entry.job == job for entry in history.entries(data)):
        return None
    raise NotFound("no newsletter {job} is running, and none ended in the last {days} days",
                   job=job, days=KEEP_DAYS)


def of_job(data: DataDir, job: str) -> list[Missed]:
    """Everyone the job did not get the letter to, in ledger order."""
    source = _source(data, job)
    result = []
    for row in read_rows(source) if source is not None else ():
        if _not_got(row):
            why, reply = read_why(row)
            result.append(Missed(row.email, row.name, row.state, row.time, why, reply,
                                 row.lease == RESENT_LEASE))
    return result


def keep(data: DataDir, job: str) -> None:
    """The job's files are about to go: keep the rows that did not get it
    (nothing is written when everyone did)."""
    rows = [row.to_line() + "\n" for row in read_rows(data.job(job, "list")) if _not_got(row)]
    if rows:
        files.atomic_write(path(data, job), [LIST_HEADER + "\n", *rows])


def prune(data: DataDir, moment: float | None = None) -> int:
    """Delete the kept rows of jobs that ended :data:`KEEP_DAYS` days ago or
    more (a file's time is its job's end: :func:`mark_resent` keeps it); returns how
    many went."""
    limit = (time.time() if moment is None else moment) - KEEP_DAYS * 86400
    gone = 0
    try:
        entries = list(os.scandir(data.newsletters))
    except OSError:
        return 0
    for entry in entries:
        if entry.name.endswith(f".{SUFFIX}") and entry.stat().st_mtime < limit:
            files.remove(Path(entry.path))
            gone += 1
    return gone


def resendable(data: DataDir, job: str, suppressed: Container[str]) -> list[Missed]:
    """Those refused for a temporary reason, not resent yet, still confirmed
    subscribers of one of the job's services and not suppressed."""
    wanted = {email_key(m.email): m for m in of_job(data, job)
              if m.why is Why.TEMPORARY and not m.resent and m.email not in suppressed}
    if not wanted:
        return []
    still = {email_key(email) for email, _name in confirmed_recipients(data, services_of(data, job))
             if email_key(email) in wanted}
    return [m for key, m in wanted.items() if key in still]


def mark_resent(data: DataDir, job: str, chosen: list[Missed]) -> None:
    """The chosen rows are taken over by a resend; a kept file keeps its time
    (its job's end, for :func:`prune`)."""
    keys = {email_key(m.email) for m in chosen}
    source = _source(data, job)
    if source is None:  # nothing kept: nothing chosen
        return
    stamp = source.stat().st_mtime

    def mark(row: Row) -> Row:
        if email_key(row.email) in keys and _not_got(row) and read_why(row)[0] is Why.TEMPORARY:
            return Row(row.index, row.email, row.name, row.state, row.time, RESENT_LEASE, row.why)
        return row

    rewrite_rows(source, mark)
    if source.suffix == f".{SUFFIX}":
        os.utime(source, (stamp, stamp))


def services_of(data: DataDir, job: str) -> list[str]:
    """A job's services: its .job while it runs, its history line after."""
    try:
        return read_job(data, job).services
    except (BadInput, NotFound):
        pass
    for entry in history.entries(data):
        if entry.job == job:
            return list(entry.services)
    return []
