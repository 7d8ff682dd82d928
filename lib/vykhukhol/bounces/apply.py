"""Acting on returned messages and providers' reports, once each, whatever
kills the process (docs/design/journal.md#journal-bounces): the two entry points.

:func:`process` takes a batch of raw messages (from a mailbox or the pipe),
classifies each (:mod:`.reading.classify`), finds whom its signed tag means
(:mod:`.finder`) and what that does (:mod:`.decide`); :func:`apply_reports`
takes what a mail provider reported by callback
(:mod:`vykhukhol.bounces.providers`) as :class:`~.reading.classify.Report` objects, keyed by the
provider's event id; a report the provider vouches for that carries no tag of
ours is applied to every service holding its address. Both hold the reader's
journal (:mod:`.ledger`, where the crash-safety protocol is written down) for
the whole batch through :func:`_batch`. The caller deletes or moves the
messages only after :func:`process` returned.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from vykhukhol import files, returntag
from vykhukhol.bounces import record
from vykhukhol.bounces.decide import act, noted
from vykhukhol.bounces.finder import Finder
from vykhukhol.bounces.ledger import Plan, Result, journal_path, message_id, recover, run_plan
from vykhukhol.bounces.reading import classify as kinds
from vykhukhol.bounces.reading import limits, reasons
from vykhukhol.bounces.reading.classify import Report
from vykhukhol.bounces.tries import Tries
from vykhukhol.datadir import DataDir
from vykhukhol.errors import VykhukholError
from vykhukhol.settings import Settings
from vykhukhol.timeutil import format_time, now

__all__ = ["Result", "apply_reports", "message_id", "process", "process_safely"]


class _Batch:
    """What both entry points hold while the journal is theirs: the ids
    processed before, whom tags mean, the plan growing, the repeats to log."""

    def __init__(self, data: DataDir, settings: Settings) -> None:
        self.data, self.settings = data, settings
        self.seen = recover(data, settings)
        self.finder = Finder(data, settings.secret)
        self.plan = Plan(time=format_time(now()))
        self.repeats: list[record.Line] = []

    def flush(self) -> None:
        """The plan so far carried out (a fresh batch of the journal), a new one begun."""
        if self.plan.ids:
            run_plan(self.data, self.settings, secrets.token_hex(6), self.plan, fresh=True)
            self.plan = Plan(time=format_time(now()))


@contextmanager
def _batch(data: DataDir, settings: Settings) -> Iterator[_Batch]:
    """The one setup of :func:`process` and :func:`apply_reports`: the
    journal's record lock, a killed batch finished, and at the end the last
    plan carried out and the repeats logged."""
    path = journal_path(data)
    files.make_folder(path.parent)
    with files.record_lock(path):
        batch = _Batch(data, settings)
        yield batch
        batch.flush()
        if batch.repeats:
            record.write(data, batch.repeats)


def process(data: DataDir, settings: Settings, raws: list[bytes], source: str,
            stop: Callable[[], bool] | None = None) -> list[Result]:
    """Classify and apply a batch; returns one Result per message handled, in
    order: all of them, or those before ``stop()`` said the time is up (it is
    asked before each message; the caller leaves the rest where they are).

    A message begun before and never finished (:class:`~.tries.Tries`) is
    handled in a batch of its own, so a message that stops the reader costs
    no other message anything; begun twice, it is set aside unread.

    Raises :class:`~vykhukhol.errors.StorageError` (or LockBusy) when the
    results cannot be put on disk: then nothing may be removed from the mailbox."""
    results: list[Result] = []
    with _batch(data, settings) as batch:
        tries = Tries(data, batch.seen)
        try:
            for raw in raws:
                if stop is not None and stop():
                    break
                mid = message_id(raw)
                alone = mid not in batch.seen and tries.unfinished(mid)
                if alone:  # what came before it is safe on disk first
                    batch.flush()
                if mid not in batch.seen:
                    tries.begin(mid)
                result = _one(batch, raw, source, tries)
                if result.repeated:  # one line for every result, repeats too
                    batch.repeats.append(record.line(mid, record.REPEATED, "-", "-", source,
                                                     "processed before"))
                results.append(result)
                batch.seen.add(result.id)
                if alone:
                    batch.flush()
        finally:
            tries.close()
    return results


def report_id(source: str, event: str) -> str:
    """A provider event's id in the journal: 16 hex digits, like a message's."""
    return hashlib.sha256(f"hook\0{source}\0{event}".encode()).hexdigest()[:16]


def apply_reports(data: DataDir, settings: Settings, reports: list[Report],
                  source: str) -> list[Result]:
    """Apply what a provider's callback reports, through the same rules and the
    same journal as mail (so exactly once per event id, whatever kills the
    process). The letter is found by the report's tag where it carries one,
    else by its address in every service that holds it. Raises what
    :func:`process` raises when the results cannot be put on disk."""
    results: list[Result] = []
    with _batch(data, settings) as batch:
        plan = batch.plan
        for report in reports:
            rid = report_id(source, report.event)
            if rid in batch.seen:  # the provider retried: said in the log, applied no more
                results.append(Result(rid, "repeated", address=report.address,
                                      reason="processed before", repeated=True))
                batch.repeats.append(record.line(rid, record.REPEATED, "-", report.address,
                                                 source, "processed before"))
                continue
            batch.seen.add(rid)
            plan.ids.append(rid)
            address = report.address.strip().lower()
            parsed = returntag.parse(report.tag) if report.tag else None
            if parsed is None and "@" in report.tag:
                split = returntag.split_address(report.tag, settings["mail.verp_separator"])
                parsed = split[1] if split else None
            verdict = kinds.Verdict(report.kind, report.reason,
                                    tags=[(report.tag, parsed)] if parsed else [],
                                    named={address} if address else set(), sender=address,
                                    letter=f"event:{report.event}"[:200])
            if address and report.kind in (kinds.PERMANENT, kinds.TEMPORARY):
                # The provider's words read like a report's: a failure
                # it gave up on is read for its reason, a temporary one is a delay.
                reading = reasons.read(text=report.reason, recipient=address, action=(
                    "failed" if report.kind == kinds.PERMANENT else "delayed"))
                verdict.readings, verdict.cause = {address: reading}, reading.cause
            result = Result(rid, report.kind, address=address or "-", reason=report.reason)
            raw = json.dumps(report.__dict__, ensure_ascii=False, indent=1).encode()
            results.append(act(data, batch.finder, result, verdict, raw, source, plan, by_address=True))
    return results


def _one(batch: _Batch, raw: bytes, source: str, tries) -> Result:
    """One message's result: set aside, refused unread, or judged."""
    data, plan = batch.data, batch.plan
    mid = message_id(raw)
    if mid in batch.seen:
        return Result(mid, "repeated", reason="processed before", repeated=True)
    refused: str | None
    if tries.given_up(mid):
        refused = "set aside unread: the reader was stopped twice while on it"
    else:
        refused = limits.refusal(raw)
    if refused is not None:
        plan.ids.append(mid)
        record.keep(data, mid, raw)
        return noted(plan, Result(mid, kinds.REFUSED, reason=refused, aside=True), source)
    try:
        return _judge(batch, raw, source)
    except VykhukholError:
        raise  # the disk: nothing of the batch may be removed
    except Exception as exc:  # noqa: BLE001 - one odd message must not block the box
        result = noted(plan, Result(mid, kinds.REFUSED, reason=(
            f"could not be handled ({type(exc).__name__}); nothing was done")), source)
        if mid not in plan.ids:
            plan.ids.append(mid)
        return result


def _judge(batch: _Batch, raw: bytes, source: str) -> Result:
    """One message's verdict, recipient and effects, added to the plan."""
    plan = batch.plan
    mid = message_id(raw)
    if mid in batch.seen:
        return Result(mid, "repeated", reason="processed before", repeated=True)
    verdict = kinds.classify(raw, batch.settings["mail.verp_separator"])
    result = Result(mid, verdict.kind, reason=verdict.reason)
    plan.ids.append(mid)
    if verdict.kind == kinds.REFUSED:
        return noted(plan, result, source)
    return act(batch.data, batch.finder, result, verdict, raw, source, plan)


def process_safely(data: DataDir, settings: Settings, raws: list[bytes], source: str,
                   stop: Callable[[], bool] | None = None) -> list[Result] | None:
    """:func:`process`, with a refusal to write said in bounces.log: None then."""
    try:
        return process(data, settings, raws, source, stop)
    except VykhukholError as exc:
        record.problem(data, source, f"the results could not be written: {exc.message}; "
                       "the messages stay in the mailbox")
        return None
