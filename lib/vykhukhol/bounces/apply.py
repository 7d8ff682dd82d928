"""Acting on returned messages, once each, whatever kills the process (SPEC 12).

:func:`process` takes a batch of raw messages (from a mailbox or the pipe),
classifies each (:mod:`.classify`), finds whom its signed tag means
(:class:`Finder`), and applies the result:

- a failure, by its reason (SPEC 5, "What a failure count means";
  :func:`cause_of`, the rules in :mod:`.counts`): *address gone* —
  suppressed and deleted from every service at once; *soft* — counted once
  per different letter (the returned Message-ID, else the run, else one a
  day) in the service (a newsletter's: each of its services), deleted and
  suppressed at ``bounce_limit``; *sender refused* — nothing on the
  subscriber, counted for the run that sent the letter (the sender alerts
  past 5 %); *delay* — noted. A newsletter's ledger row becomes ``failed``
  for any refusal;
- complaint, or ``unsubscribe`` by mail: unsubscribed at once from the
  service (a newsletter's: from each of the job's services);
- a delay notice, auto-reply: noted in bounces.log only;
- anything else to a tagged address: kept for the admin, never acted on.

:func:`apply_reports` takes what a mail provider reported by callback
(:mod:`vykhukhol.bounces.providers`) as :class:`Report` objects and applies each through
the same decision (:func:`_act`) and the same journal, keyed by the
provider's event id; a report the provider vouches for that carries no tag
of ours is applied to every service holding its address.

Exactly once. ``data/bounces/processed.txt`` is the reader's journal, under
its record lock for the whole batch:

1. ``batch`` line (fsynced) — the batch's message ids, what it will do and
   its log lines, *before* any file changes;
2. the unsubscribes, the addresses gone (suppressed, then deleted
   everywhere) and ledger rows (doing them twice changes nothing);
3. per service, a ``before`` line (fsynced, under the subscriber file's
   record lock) with each address's ``failures`` as read, then the soft
   file (:mod:`.counts`: the letters counted), then the rewrite;
4. the bounces.log lines, then a ``done`` line.

A message whose id is in a batch line is never counted again; a batch with
no ``done`` line (a kill) is finished by the next reader: step 2 again, and
for step 3 an address whose ``failures`` still reads as its ``before`` value
gets its count (a letter the soft file knows already counts nothing more:
the count recorded there is taken), one that reads otherwise already had it. The caller deletes
or moves the messages only after :func:`process` returned.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from vykhukhol import files, newsletters
from vykhukhol import services as svc
from vykhukhol.addresses import email_key
from vykhukhol.bounces import classify as kinds
from vykhukhol.bounces import counts, reasons, record
from vykhukhol.bounces import tag as tags
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, NotFound, VykhukholError
from vykhukhol.members import suppression
from vykhukhol.newsletters import history
from vykhukhol.settings import Settings
from vykhukhol.states import LedgerState
from vykhukhol.timeutil import format_time, now, parse_time

KEEP_DAYS = 30          # processed message ids remembered (a message left in a mailbox that long counts again)
PRUNE_BYTES = 2_000_000  # processed.txt is pruned past this size
BATCH, BEFORE, DONE = "batch", "before", "done"


@dataclass
class Result:
    """One message's outcome, for the caller (which may now remove it)."""

    id: str
    kind: str
    target: str = "-"
    address: str = "-"
    reason: str = ""
    repeated: bool = False  # processed before (a kill after its result was on disk)
    aside: bool = False     # refused unread (too big, a bomb, or it stopped the reader twice)


@dataclass
class Plan:
    ids: list[str] = field(default_factory=list)
    soft: list[tuple[str, str, str]] = field(default_factory=list)  # (service, email, letter)
    gone: list[str] = field(default_factory=list)                   # emails gone (or complained)
    ledger: list[tuple[str, str]] = field(default_factory=list)    # (job, email)
    unsub: list[tuple[str, str]] = field(default_factory=list)      # (service, email)
    log: list[str] = field(default_factory=list)                   # bounces.log lines
    time: str = ""
    refused: list[tuple[str, str]] = field(default_factory=list)   # (run, reason): sender refused
    history: list[tuple[str, str]] = field(default_factory=list)   # (job, history.LATE field)
    bounced: int = 0                                               # for the status chart

    def to_json(self) -> str:
        return json.dumps({"ids": self.ids, "soft": self.soft, "gone": self.gone,
                           "ledger": self.ledger, "unsub": self.unsub, "log": self.log,
                           "time": self.time, "refused": self.refused,
                           "history": self.history, "bounced": self.bounced},
                          ensure_ascii=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Plan:
        raw = json.loads(text)
        # A batch journalled before the reasons (a "fail" list: one count each)
        # is finished as soft failures, each message its own letter.
        old = [(service, email, f"batch:{i}") for i, (service, email)
               in enumerate(raw.get("fail", []))]
        return cls(list(raw["ids"]), [tuple(x) for x in raw.get("soft", [])] + old,
                   list(raw.get("gone", [])), [tuple(x) for x in raw["ledger"]],
                   [tuple(x) for x in raw["unsub"]], list(raw["log"]), raw.get("time", ""),
                   [tuple(x) for x in raw.get("refused", [])],
                   [tuple(x) for x in raw.get("history", [])], int(raw.get("bounced", 0)))


def message_id(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:16]


def journal_path(data: DataDir) -> Path:
    return data.root / "bounces" / "processed.txt"


# --- whom a tag means ----------------------------------------------------------

class Finder:
    """Recovers (service or job, address) from a tag. Each candidate's address
    list is read once per batch: a service's subscriber file, a live job's
    ledger, or a finished job's services' files."""

    def __init__(self, data: DataDir, secret: bytes) -> None:
        self.data = data
        self.secret = secret
        self.services = {s.name: s for s in svc.load_services(data)}
        self.jobs = {job.name: job.services for job in newsletters.list_jobs(data)}
        self.finished = {name: services for name, services in newsletters.finished_jobs(data)
                         if name not in self.jobs}
        self._tables: dict[tuple[str, str], dict[bytes, str]] = {}
        self._holders: dict[str, list[str]] | None = None

    def job_services(self, job: str) -> list[str]:
        return [s for s in self.jobs.get(job) or self.finished.get(job) or [] if s in self.services]

    def who(self, tag: tags.Tag, hints: Iterable[str]) -> tuple[str, str] | None:
        """(service or job name, address) the tag was made for, or None (forged,
        or for somebody no longer on any list)."""
        if tag.kind == tags.SERVICE:
            names = tag.names(sorted(self.services))
        else:
            names = tag.names(sorted(self.jobs) + sorted(self.finished))
        hints = [h for h in hints if h]
        for name in names:  # the address a report names: no file to read
            for hint in hints:
                if tag.is_for(self.secret, name, hint):
                    return name, hint
        for name in names:
            address = self._table(tag.kind, name).get(tag.mac)
            if address is not None and tag.is_for(self.secret, name, address):
                return name, address
        return None

    def holding(self, address: str) -> list[str]:
        """The services whose subscriber file holds ``address``, by name (for a
        provider's report that carries no tag of ours)."""
        key = email_key(address)
        if self._holders is None:
            self._holders = defaultdict(list)
            for name in sorted(self.services):
                for found in self._addresses(tags.SERVICE, name):
                    self._holders[email_key(found)].append(name)
        return list(self._holders.get(key, []))

    def _table(self, kind: str, name: str) -> dict[bytes, str]:
        key = (kind, name)
        if key not in self._tables:
            table: dict[bytes, str] = {}
            for address in self._addresses(kind, name):
                table[tags._mac(self.secret, kind, name, address)] = address
            self._tables[key] = table
        return self._tables[key]

    def _addresses(self, kind: str, name: str) -> Iterable[str]:
        if kind == tags.SERVICE:
            paths = [self.services[name].subscribers_path]
        elif name in self.jobs:
            paths = [self.data.job(name, "list")]
        else:
            paths = [self.services[s].subscribers_path for s in self.job_services(name)]
        for path in paths:
            for line in files.read_lines(path):
                if line and not line.startswith("#"):
                    yield line.split("\t", 1)[0]


# --- one batch -----------------------------------------------------------------

def process(data: DataDir, settings: Settings, raws: list[bytes], source: str,
            stop: Callable[[], bool] | None = None) -> list[Result]:
    """Classify and apply a batch; returns one Result per message handled, in
    order: all of them, or those before ``stop()`` said the time is up (it is
    asked before each message; the caller leaves the rest where they are).

    A message begun before and never finished (:class:`~.intake.Tries`) is
    handled in a batch of its own, so a message that stops the reader costs
    no other message anything; begun twice, it is set aside unread.

    Raises :class:`~vykhukhol.errors.StorageError` (or LockBusy) when the
    results cannot be put on disk: then nothing may be removed from the mailbox."""
    from vykhukhol.bounces import intake

    path = journal_path(data)
    files.make_folder(path.parent)
    with files.record_lock(path):
        seen = recover(data, settings)
        tries = intake.Tries(data, seen)
        finder = Finder(data, settings.secret)
        plan = Plan(time=format_time(now()))
        results: list[Result] = []
        repeats: list[record.Line] = []
        try:
            for raw in raws:
                if stop is not None and stop():
                    break
                mid = message_id(raw)
                alone = mid not in seen and tries.unfinished(mid)
                if alone and plan.ids:  # what came before it is safe on disk first
                    _run_plan(data, settings, secrets.token_hex(6), plan, fresh=True)
                    plan = Plan(time=format_time(now()))
                if mid not in seen:
                    tries.begin(mid)
                result = _one(data, settings, finder, raw, source, plan, seen, tries)
                if result.repeated:  # one line for every result, repeats too
                    repeats.append(record.line(mid, record.REPEATED, "-", "-", source,
                                               "processed before"))
                results.append(result)
                seen.add(result.id)
                if alone and plan.ids:
                    _run_plan(data, settings, secrets.token_hex(6), plan, fresh=True)
                    plan = Plan(time=format_time(now()))
            if plan.ids:
                _run_plan(data, settings, secrets.token_hex(6), plan, fresh=True)
        finally:
            tries.close()
        if repeats:
            record.write(data, repeats)
    return results


@dataclass
class Report:
    """One event a mail service provider reported by its callback
    (:mod:`vykhukhol.bounces.providers`), as the same report by mail would be classified."""

    event: str   # the provider's own id of the event: one id is applied once
    kind: str    # classify's PERMANENT, TEMPORARY, COMPLAINT or UNSUBSCRIBE (AUTO_REPLY: noted)
    address: str
    reason: str
    tag: str = ""  # our tag, where the provider returned it (a header, its metadata, the envelope)


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
    path = journal_path(data)
    files.make_folder(path.parent)
    with files.record_lock(path):
        seen = recover(data, settings)
        finder = Finder(data, settings.secret)
        plan = Plan(time=format_time(now()))
        results: list[Result] = []
        repeats: list[record.Line] = []
        for report in reports:
            rid = report_id(source, report.event)
            if rid in seen:  # the provider retried: said in the log, applied no more
                results.append(Result(rid, "repeated", address=report.address,
                                      reason="processed before", repeated=True))
                repeats.append(record.line(rid, record.REPEATED, "-", report.address, source,
                                           "processed before"))
                continue
            seen.add(rid)
            plan.ids.append(rid)
            address = report.address.strip().lower()
            parsed = tags.parse(report.tag) if report.tag else None
            if parsed is None and "@" in report.tag:
                split = tags.split_address(report.tag, settings["mail.verp_separator"])
                parsed = split[1] if split else None
            verdict = kinds.Verdict(report.kind, report.reason,
                                    tags=[(report.tag, parsed)] if parsed else [],
                                    named={address} if address else set(), sender=address,
                                    letter=f"event:{report.event}"[:200])
            if address and report.kind in (kinds.PERMANENT, kinds.TEMPORARY):
                # The provider's words read like a report's (SPEC 5): a failure
                # it gave up on is read for its reason, a temporary one is a delay.
                reading = reasons.read(text=report.reason, action=(
                    "failed" if report.kind == kinds.PERMANENT else "delayed"))
                verdict.readings, verdict.cause = {address: reading}, reading.cause
            result = Result(rid, report.kind, address=address or "-", reason=report.reason)
            raw = json.dumps(report.__dict__, ensure_ascii=False, indent=1).encode()
            results.append(_act(data, finder, result, verdict, raw, source, plan, by_address=True))
        if plan.ids:
            _run_plan(data, settings, secrets.token_hex(6), plan, fresh=True)
        if repeats:
            record.write(data, repeats)
    return results


def _one(data: DataDir, settings: Settings, finder: Finder, raw: bytes, source: str,
         plan: Plan, seen: set[str], tries) -> Result:
    """One message's result: set aside, refused unread, or judged."""
    from vykhukhol.bounces import intake

    mid = message_id(raw)
    if mid in seen:
        return Result(mid, "repeated", reason="processed before", repeated=True)
    if tries.given_up(mid):
        refused = "set aside unread: the reader was stopped twice while on it"
    else:
        refused = intake.refusal(raw)
    if refused is not None:
        plan.ids.append(mid)
        record.keep(data, mid, raw)
        return _noted(plan, Result(mid, kinds.REFUSED, reason=refused, aside=True), source)
    try:
        return _judge(data, settings, finder, raw, source, plan, seen)
    except VykhukholError:
        raise  # the disk: nothing of the batch may be removed
    except Exception as exc:  # noqa: BLE001 - one odd message must not block the box
        result = _noted(plan, Result(mid, kinds.REFUSED, reason=(
            f"could not be handled ({type(exc).__name__}); nothing was done")), source)
        if mid not in plan.ids:
            plan.ids.append(mid)
        return result


def _judge(data: DataDir, settings: Settings, finder: Finder, raw: bytes, source: str,
           plan: Plan, seen: set[str]) -> Result:
    """One message's verdict, recipient and effects, added to the plan."""
    mid = message_id(raw)
    if mid in seen:
        return Result(mid, "repeated", reason="processed before", repeated=True)
    verdict = kinds.classify(raw, settings["mail.verp_separator"])
    result = Result(mid, verdict.kind, reason=verdict.reason)
    plan.ids.append(mid)
    if verdict.kind == kinds.REFUSED:
        return _noted(plan, result, source)
    return _act(data, finder, result, verdict, raw, source, plan)


def _act(data: DataDir, finder: Finder, result: Result, verdict: kinds.Verdict, raw: bytes,
         source: str, plan: Plan, by_address: bool = False) -> Result:
    """What a verdict does: whom its tag (or, for a report the provider vouches
    for, its address) means, and its effects, added to the plan. Mail and a
    provider's callback (:func:`apply_reports`) both come through here, so they
    follow one set of rules."""
    found, kind = None, ""
    for _, tag in verdict.tags:  # best first: the envelope's, then the returned letter's
        found, kind = finder.who(tag, sorted(verdict.named) + [verdict.sender]), tag.kind
        if found is not None:
            break
    if found is None and by_address:
        named = sorted(verdict.named)
        holding = finder.holding(named[0]) if named else []
        if holding:
            result.address = named[0]
            result.target = "service " + ",".join(holding)
            return _effects(data, finder, result, verdict, raw, source, plan, tags.SERVICE,
                            holding[0], holding)
        result.kind, result.reason = "unknown address", (
            f"no list holds this address; {verdict.kind}: {verdict.reason}")
        return _noted(plan, result, source)
    if found is None:
        if verdict.tags:
            result.kind, result.reason = "unknown tag", (
                f"a tag that matches nobody (forged, altered, or the address left the list); "
                f"{verdict.kind}: {verdict.reason}")
            return _noted(plan, result, source)
        if verdict.kind in (kinds.AUTO_REPLY, kinds.TEMPORARY):
            result.reason += "; no tag"
            return _noted(plan, result, source)
        result.kind, result.reason = kinds.KEPT, f"no tag of ours; {verdict.reason}"
        record.keep(data, result.id, raw)
        return _noted(plan, result, source)
    name, address = found
    result.address = address
    result.target = f"service {name}" if kind == tags.SERVICE else f"newsletter {name}"
    services = [name] if kind == tags.SERVICE else finder.job_services(name)
    return _effects(data, finder, result, verdict, raw, source, plan, kind, name, services)


def _effects(data: DataDir, finder: Finder, result: Result, verdict: kinds.Verdict, raw: bytes,
             source: str, plan: Plan, kind: str, name: str, services: list[str]) -> Result:
    address = result.address
    if verdict.kind in (kinds.PERMANENT, kinds.TEMPORARY):
        if verdict.named and email_key(address) not in {email_key(a) for a in verdict.named}:
            if verdict.kind == kinds.TEMPORARY:
                return _noted(plan, result, source)
            result.kind = kinds.KEPT
            result.reason = (f"the report names {', '.join(sorted(verdict.named)[:3])}, not the "
                             f"address the tag was made for: kept for the admin")
            record.keep(data, result.id, raw)
            return _noted(plan, result, source)
        reading = cause_of(verdict, address)
        result.reason = f"{reading.log_text()}; {result.reason}"
        if reading.cause is reasons.Cause.DELAY:
            return _noted(plan, result, source)
        plan.bounced += 1
        if kind == tags.NEWSLETTER and name in finder.jobs:
            plan.ledger.append((name, address))  # any refusal fails a newsletter's row
        if kind == tags.NEWSLETTER:
            plan.history.append((name, "bounced"))
        if reading.cause is reasons.Cause.GONE:
            plan.gone.append(address)
        elif reading.cause is reasons.Cause.SOFT:
            letter = verdict.letter or f"day:{plan.time[:10]}"  # no letter named: one a day
            plan.soft += [(s, address, letter) for s in services]
        else:  # the sender refused: never on the subscriber; counted for the run that sent it
            plan.refused.append((verdict.run, reading.reason))
    elif verdict.kind in (kinds.COMPLAINT, kinds.UNSUBSCRIBE):
        plan.unsub += [(s, address) for s in services]
        if kind == tags.NEWSLETTER:
            plan.history.append((name, "complaints" if verdict.kind == kinds.COMPLAINT
                                 else "unsubscribed"))
        if verdict.kind == kinds.COMPLAINT:  # never written to again (SPEC 12); a repeat adds nothing
            from vykhukhol.members import suppression

            suppression.add(data, finder.secret, address, suppression.Why.COMPLAINT, source,
                            now())
    elif verdict.kind == kinds.KEPT:
        record.keep(data, result.id, raw)
    return _noted(plan, result, source)


def cause_of(verdict: kinds.Verdict, address: str) -> reasons.Reading:
    """Why the letter to ``address`` failed: the report's reading of that
    address, else of the report as a whole (a failure whose reason no reader
    found is soft: only different letters failing delete the address)."""
    key = email_key(address)
    for named, reading in verdict.readings.items():
        if email_key(named) == key:
            return reading
    if verdict.cause is not None:
        return reasons.Reading(verdict.cause, "report")
    if verdict.kind == kinds.TEMPORARY:
        return reasons.Reading(reasons.Cause.DELAY, "delayed")
    return reasons.Reading(reasons.Cause.SOFT, "undefined")


def _noted(plan: Plan, result: Result, source: str) -> Result:
    plan.log.append(record.line(result.id, result.kind, result.target, result.address, source,
                                result.reason).text())
    return result


def _run_plan(data: DataDir, settings: Settings, batch: str, plan: Plan, fresh: bool,
              befores: dict[str, dict[str, int]] | None = None) -> None:
    """Steps 1-4 of the module's docstring (step 1 only when ``fresh``)."""
    path = journal_path(data)
    if fresh:
        files.append_line(path, "\t".join((BATCH, batch, plan.to_json())))
    for service, address in plan.unsub:
        _unsubscribe(data, service, address)
    moment = now()
    source = _source_of(plan)
    for address in dict.fromkeys(plan.gone):  # suppressed, then off every list
        counts.forget_everywhere(data, settings, address, suppression.Why.GONE, source, moment)
    by_job: dict[str, set[str]] = defaultdict(set)
    for job, address in plan.ledger:
        by_job[job].add(email_key(address))
    for job, keys in by_job.items():
        _fail_rows(data, job, keys)
    # The newsletters' history, once per batch however often a kill repeats this step.
    history.count(data, Counter(plan.history), once=batch)
    record.count_day(data, settings["timezone"], plan.bounced, once=batch)
    by_service: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for service, address, letter in plan.soft:
        by_service[service][email_key(address)].append(letter)
    for service, letters in by_service.items():
        _count_failures(data, settings, batch, service, dict(letters),
                        (befores or {}).get(service), source)
    if plan.refused and fresh:
        counts.note_refused(data, plan.refused, moment)
    lines = [record.Line(*text.split("\t")) for text in plan.log]
    record.write(data, lines)
    files.append_line(path, "\t".join((DONE, batch)))


def _source_of(plan: Plan) -> str:
    """Where the batch came from (imap, pipe, a provider), as its log lines say."""
    for text in plan.log:
        parts = text.split("\t")
        if len(parts) >= 6 and parts[5] not in ("", "-"):
            return parts[5][:40]
    return "bounce"


def _unsubscribe(data: DataDir, service: str, address: str) -> None:
    from vykhukhol.members import membership

    try:
        membership.unsubscribe(data, service, address)
    except NotFound:
        pass  # the service went away meanwhile


def _fail_rows(data: DataDir, job: str, keys: set[str]) -> None:
    """A bounced newsletter letter's ledger row becomes ``failed`` (from pending,
    sent or in doubt: the bounce is later, surer news than the server's 250)."""
    try:
        list_path = data.job(job, "list")
    except BadInput:
        return
    moment = format_time(now())

    def mark(row: newsletters.Row) -> newsletters.Row:
        if email_key(row.email) in keys and row.state.may_become(LedgerState.FAILED, bounced=True):
            return newsletters.Row(row.index, row.email, row.name, LedgerState.FAILED,
                                   moment, newsletters.BOUNCED_LEASE)
        return row

    newsletters.rewrite_rows(list_path, mark, bounced=True)


def _count_failures(data: DataDir, settings: Settings, batch: str, service_name: str,
                    letters: dict[str, list[str]], before: dict[str, int] | None,
                    source: str) -> None:
    """Soft failures of different letters counted for each address of one
    service (:func:`.counts.soft_in_service`: at bounce_limit deleted and
    suppressed). The ``before`` line goes to the journal under the file's
    lock; with ``before`` (a killed batch's record), only addresses still at
    that value count."""
    deleted: list[record.Line] = []

    def note(current: dict[str, int]) -> None:
        if before is None:
            files.append_line(journal_path(data), "\t".join(
                (BEFORE, batch, service_name, json.dumps(current, separators=(",", ":")))))

    gone = counts.soft_in_service(data, settings, service_name, letters, source, now(),
                                  before=before, note=note)
    for address in gone:
        deleted.append(record.line("-", "deleted", f"service {service_name}", address, "-",
                                   f"{settings['bounce_limit']} soft failures of different "
                                   "letters; suppressed"))
    if deleted:
        record.write(data, deleted)


# --- the journal -----------------------------------------------------------------

def recover(data: DataDir, settings: Settings) -> set[str]:
    """Finish a killed batch; returns the ids of every message processed (the
    caller holds the journal's record lock)."""
    path = journal_path(data)
    plans: dict[str, Plan] = {}
    befores: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    done: set[str] = set()
    for line in files.read_lines(path):
        parts = line.split("\t")
        try:
            if parts[0] == BATCH and len(parts) == 3:
                plans[parts[1]] = Plan.from_json(parts[2])
            elif parts[0] == BEFORE and len(parts) == 4:
                befores[parts[1]][parts[2]] = {k: int(v) for k, v in json.loads(parts[3]).items()}
            elif parts[0] == DONE and len(parts) == 2:
                done.add(parts[1])
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a line torn by a kill: its batch was never begun
    for batch, plan in plans.items():
        if batch not in done:
            _run_plan(data, settings, batch, plan, fresh=False, befores=befores.get(batch, {}))
            done.add(batch)
    _prune(path, plans)
    return {mid for plan in plans.values() for mid in plan.ids}


def _prune(path: Path, plans: dict[str, Plan]) -> None:
    """Forget batches older than KEEP_DAYS once the file is big (all are done here)."""
    try:
        if path.stat().st_size < PRUNE_BYTES:
            return
    except FileNotFoundError:
        return
    from datetime import timedelta

    limit = now() - timedelta(days=KEEP_DAYS)
    kept = []
    for batch, plan in plans.items():
        try:
            moment = parse_time(plan.time)
        except BadInput:
            moment = None
        if moment is not None and moment >= limit:
            kept.append(f"{BATCH}\t{batch}\t{plan.to_json()}\n{DONE}\t{batch}\n")
    files.atomic_write(path, kept, new_mode=0o600)


def process_safely(data: DataDir, settings: Settings, raws: list[bytes], source: str,
                   stop: Callable[[], bool] | None = None) -> list[Result] | None:
    """:func:`process`, with a refusal to write said in bounces.log: None then."""
    try:
        return process(data, settings, raws, source, stop)
    except VykhukholError as exc:
        record.problem(data, source, f"the results could not be written: {exc.message}; "
                       "the messages stay in the mailbox")
        return None
