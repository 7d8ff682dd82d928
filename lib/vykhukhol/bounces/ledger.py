"""The bounce reader's journal, ``data/bounces/processed.txt``: what a batch
will do, written before it is done, so that it is done exactly once whatever
kills the process (docs/design/journal.md#journal-bounces). :mod:`.apply` holds the entry points,
:mod:`.decide` what a verdict does; this module writes a batch's plan and
carries it out.

The journal is kept under its record lock for the whole batch:

1. ``batch`` line (fsynced) — the batch's message ids, what it will do and
   its log lines, *before* any file changes;
2. the unsubscribes, the addresses gone (suppressed, then deleted
   everywhere; read so with doubt, their letters noted and at the second
   different one deleted so) and ledger rows (doing them twice changes nothing);
3. per service, a ``before`` line (fsynced, under the subscriber file's
   record lock) with each address's ``failures`` as read, then the soft
   file (:mod:`.counts`: the letters counted), then the rewrite
   (:mod:`.removal`: at ``bounce_limit`` the address deleted);
4. the bounces.log lines, then a ``done`` line.

A message whose id is in a batch line is never counted again; a batch with
no ``done`` line (a kill) is finished by the next reader (:func:`recover`):
step 2 again, and for step 3 an address whose ``failures`` still reads as
its ``before`` value gets its count (a letter the soft file knows already
counts nothing more: the count recorded there is taken), one that reads
otherwise already had it.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from vykhukhol import files, newsletters
from vykhukhol.addresses import email_key
from vykhukhol.bounces import counts, record, refusals, removal
from vykhukhol.bounces import tally as brakes
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.members import membership
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
    refused: list[tuple[str, ...]] = field(default_factory=list)   # (run, reason, email): sender refused
    history: list[tuple[str, str]] = field(default_factory=list)   # (job, history.LATE field)
    bounced: int = 0                                               # for the status chart
    brakes: list[tuple[str, ...]] = field(default_factory=list)    # (target, what, email): watch/brakes.py
    doubt: list[tuple[str, str]] = field(default_factory=list)     # (email, letter): gone, in doubt

    def to_json(self) -> str:
        return json.dumps({"ids": self.ids, "soft": self.soft, "gone": self.gone,
                           "ledger": self.ledger, "unsub": self.unsub, "log": self.log,
                           "time": self.time, "refused": self.refused,
                           "history": self.history, "bounced": self.bounced,
                           "brakes": self.brakes, "doubt": self.doubt},
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
                   [tuple(x) for x in raw.get("history", [])], int(raw.get("bounced", 0)),
                   [tuple(x) for x in raw.get("brakes", [])],
                   [tuple(x) for x in raw.get("doubt", [])])


def message_id(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:16]


def journal_path(data: DataDir) -> Path:
    return data.bounce_journal


def run_plan(data: DataDir, settings: Settings, batch: str, plan: Plan, fresh: bool,
              befores: dict[str, dict[str, int]] | None = None) -> None:
    """Steps 1-4 of the module's docstring (step 1 only when ``fresh``)."""
    path = journal_path(data)
    if fresh:
        files.append_line(path, "\t".join((BATCH, batch, plan.to_json())))
    for service, address in plan.unsub:
        _unsubscribe(data, service, address)
    moment = now()
    source, said = _source_of(plan), _said(plan)
    removal.forget_gone(data, settings, plan.gone, source, moment, said)
    if plan.doubt:
        _gone_in_doubt(data, settings, plan.doubt, source, moment, said)
    by_job: dict[str, set[str]] = defaultdict(set)
    for job, address in plan.ledger:
        by_job[job].add(email_key(address))
    for job, keys in by_job.items():
        _fail_rows(data, job, keys)
    # The newsletters' history, once per batch however often a kill repeats this step.
    history.count(data, Counter(plan.history), once=batch)
    record.count_day(data, settings["timezone"], plan.bounced, once=batch)
    # Late reports count for the letter's own service or newsletter, once per batch.
    brakes.count_reports(data, plan.brakes, batch, moment)
    by_service: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for service, address, letter in plan.soft:
        by_service[service][email_key(address)].append(letter)
    for service, letters in by_service.items():
        _count_failures(data, settings, batch, service, dict(letters),
                        (befores or {}).get(service), source, said)
    if plan.refused and fresh:
        refusals.note_refused(data, plan.refused, moment)
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


def _said(plan: Plan) -> dict[str, str]:
    """Address key → what its refusal said (its bounces.log reason): kept
    with a deletion, so the owner sees the words that decided."""
    said = {}
    for text in plan.log:
        parts = text.split("\t")
        if len(parts) >= 7 and parts[2] in ("permanent", "temporary"):  # classify.Kind's values
            said[email_key(parts[4])] = parts[6]
    return said


def _unsubscribe(data: DataDir, service: str, address: str) -> None:
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
                    source: str, said: dict[str, str] | None = None) -> None:
    """Soft failures of different letters counted for each address of one
    service (:func:`.removal.soft_in_service`: at bounce_limit deleted and
    suppressed). The ``before`` line goes to the journal under the file's
    lock; with ``before`` (a killed batch's record), only addresses still at
    that value count."""
    deleted: list[record.Line] = []

    def note(current: dict[str, int]) -> None:
        if before is None:
            files.append_line(journal_path(data), "\t".join(
                (BEFORE, batch, service_name, json.dumps(current, separators=(",", ":")))))

    gone = removal.soft_in_service(data, settings, service_name, letters, source, now(),
                                   before=before, note=note, words=said)
    for address in gone:
        deleted.append(record.line("-", "deleted", f"service {service_name}", address, "-",
                                   f"{settings['bounce_limit']} soft failures of different "
                                   "letters; suppressed"))
    if deleted:
        record.write(data, deleted)


def _gone_in_doubt(data: DataDir, settings: Settings, doubt: list[tuple[str, str]],
                   source: str, moment: datetime, said: dict[str, str]) -> None:
    """Addresses read as gone with doubt: each letter noted (:mod:`.counts`);
    an address whose second different letter failed so leaves as gone, and
    bounces.log says why (docs/design/bounces.md#bounces-doubt)."""
    letters: dict[str, list[str]] = defaultdict(list)
    emails: dict[str, str] = {}
    for address, letter in doubt:
        letters[email_key(address)].append(letter)
        emails.setdefault(email_key(address), address)
    leaving = counts.note_doubt(data, settings, dict(letters), moment)
    gone = removal.gone_in_doubt(data, settings, [emails[key] for key in leaving], source,
                                 moment, said)
    if gone:
        record.write(data, [record.line("-", "deleted", "-", address, "-",
                                        f"{counts.DOUBT_LETTERS} {removal.DOUBT_WHY}; suppressed")
                            for address in gone])


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
            run_plan(data, settings, batch, plan, fresh=False, befores=befores.get(batch, {}))
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
