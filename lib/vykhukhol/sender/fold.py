"""The fold: the series journal written into the subscriber files, with
step 5's clean-up (deletions, ``done`` marks: docs/design/run.md#run-steps),
one streamed rewrite per service, and each service's next-due summary refreshed.

Called by :func:`~vykhukhol.sender.serial.hold_db` as it takes a DB's lock
(a killed predecessor's journal) and as it gives it back (this run's). A
plain sent letter's line is settled ahead (:func:`settle_ahead`), while the
server answers the next letter; the fold uses it only where settling the
line then would give the same.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import datetime, timezone

import vykhukhol.sender.dueindex as dueindex
import vykhukhol.sender.journal as journal
from vykhukhol import files
from vykhukhol import services as svc
from vykhukhol.addresses import email_key
from vykhukhol.bounces import counts, removal
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.files import kv
from vykhukhol.members import membership, removed, suppression
from vykhukhol.sender.runtime import Run
from vykhukhol.sender.work import Scan, Settled, Work, save_index
from vykhukhol.services import due_summary
from vykhukhol.services import subscribers as subs
from vykhukhol.services.rules import Action, clean_up, next_action, rules_of
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import parse_time


def fold_series(run: Run, book: journal.Journal, worked: list[Work]) -> None:
    """Write the journalled letters into the subscriber files and apply the
    clean-up rules, one streamed rewrite per service; refresh each summary."""
    records = book.records()
    by_service: dict[str, dict[tuple[str, str], journal.Record]] = defaultdict(dict)
    for record in records:
        by_service[record.target][(email_key(record.email), record.item)] = record
    targets = {w.service.name: w for w in worked if not w.idle}
    for name in by_service:
        if name not in targets:
            try:
                service = svc.find_service(run.data, name)
                targets[name] = Work(service, rules_of(run.settings, service))
            except (NotFound, BadInput):
                continue  # its journal lines wait until the service is readable again
    forgotten: dict[str, str] = {}
    for name, work in targets.items():
        forgotten.update(fold_service(run, work, by_service.get(name, {})))
    forget_elsewhere(run, forgotten)
    leftover = [r for r in records if r.target not in targets]
    book.clear()
    for record in leftover:  # keep what could not be folded (a broken service) for later
        book.note_record(record)


def forget_elsewhere(run: Run, forgotten: dict[str, str]) -> None:
    """Addresses the fold deleted as gone or at bounce_limit (address → the
    suppression's why, or :data:`DOUBT_WORDS`), deleted from every other
    service as well; before the journal is cleared, so a kill meanwhile only
    repeats it."""
    if not forgotten:
        return

    for email, why in forgotten.items():
        words = why if why == DOUBT_WORDS else ""
        for name in membership.forget_everywhere(run.data, run.settings, email,
                                                 suppression.Why.GONE if words
                                                 else suppression.Why(why), "smtp", run.now(),
                                                 suppressed=True, words=words):
            run.log.write(f"{name}: {email} deleted: {why} (refused at hand-over)")


#: Why an address read as gone with doubt left, at its second letter refused so
#: (docs/design/bounces.md#bounces-doubt).
DOUBT_WORDS = f"{counts.DOUBT_LETTERS} {removal.DOUBT_WHY}"


def refusals_of(records: dict[tuple[str, str], journal.Record]
                ) -> tuple[dict[str, list[str]], set[str], dict[str, list[str]]]:
    """The journalled refusals at hand-over: soft ones (address → the letters,
    each named by the run and the item), the addresses gone, and those read
    as gone with doubt (address → the letters, named across the site by the
    service and the item, so that a retry is the same letter), which count
    as soft meanwhile (docs/design/bounces.md#bounces-doubt). A ``failed``
    line without a cause (written before) counts as soft."""
    soft: dict[str, list[str]] = defaultdict(list)
    gone: set[str] = set()
    doubt: dict[str, list[str]] = defaultdict(list)
    for (key, item), record in records.items():
        if record.outcome != journal.FAILED:
            continue
        if record.cause == journal.GONE:
            gone.add(key)
        elif record.cause in ("soft", "", journal.GONE_IN_DOUBT):
            soft[key].append(f"{record.lease}:{item}")
            if record.cause == journal.GONE_IN_DOUBT:
                doubt[key].append(f"{record.target}:{item}")  # a retry is the same letter
    return dict(soft), gone, dict(doubt)


def fold_service(run: Run, work: Work, records: dict[tuple[str, str], journal.Record]
                 ) -> dict[str, str]:
    """One service's journalled letters and clean-up written into its file, and
    its next-due summary. After a scan, the lines the run took are spliced
    into the file (every other byte copied through) and the due index moved
    along; otherwise (a killed run's journal, or a file that changed under
    the taken lines) only the journalled addresses' lines are parsed, the
    rest copied through, and the index is dropped."""
    service, rules, scan = work.service, work.rules, work.scan
    moment = run.now()
    earliest: list[datetime | None] = [None]
    gone: Counter = Counter()
    items_of: dict[str, set[str]] = defaultdict(set)  # address → its journalled items
    for key, item in records:
        items_of[key].add(item)

    soft, lost, doubt = refusals_of(records)
    failures: dict[str, int] = {}  # the soft counts, as the soft file now says
    forgotten: dict[str, str] = {}  # address → why, deleted here, to be deleted elsewhere
    resets: list[dict[str, str] | None] = [None]

    def stale(sub: Subscriber) -> bool:
        """A hand-over never resets the count; only bounce_reset's quiet does."""
        reset = resets[0]
        if reset is None:
            reset = resets[0] = kv.read_kv(counts.soft_path(run.data))
        return counts.stale(reset, service.name, sub.key, moment, run.settings["bounce_reset"])

    def settle(sub: Subscriber) -> tuple[Subscriber | None, Action | None]:
        """The line's records applied and the clean-up done: the subscriber
        kept (None: deleted) and what is next due for it."""
        key = sub.key  # (a property: lower-cased again at every ask)
        ahead = work.settled.get(key)
        if ahead is not None and ahead_holds(ahead, sub, key):
            return ahead.kept, ahead.action
        after = sub
        for item in items_of.get(key, ()):
            after = apply_record(run, service, after, records[(key, item)])
        if key in lost or failures.get(key, 0) >= rules.bounce_limit:
            why = journal.GONE if key in lost else "soft bounces"
            words = DOUBT_WORDS if key in lost and key in doubt else ""
            forgotten[sub.email] = words or why

            removed.note(run.data, service.name, after.to_line(), why, "smtp", words, moment)
            gone[why] += 1
            run.log.write(f"{service.name}: {sub.email} deleted: {words or why} (refused at "
                          "hand-over); suppressed")
            return None, None
        if key in failures:
            after = after.replace(failures=failures[key])
        elif after.failures and after.sent > sub.sent and stale(after):
            after = after.replace(failures=0)
        kept, why, action = clean_up(after, rules, moment)
        if kept is None:
            gone[why] += 1
            run.log.write(f"{service.name}: {sub.email} deleted: {why}")
        return kept, action

    def ahead_holds(ahead: Settled, sub: Subscriber, key: str) -> bool:
        """Whether the line settled ahead is what settling it now gives: the
        same line and the same one record, sent, and no refusal to count."""
        record = ahead.record
        return (ahead.sub is sub and items_of.get(key) == {record.item}
                and records.get((key, record.item)) is record and record.outcome == journal.SENT
                and key not in lost and key not in failures and rules.bounce_limit > 0)

    def change(sub: Subscriber) -> Subscriber | None:
        return settle(sub)[0]

    def track(sub: Subscriber) -> None:
        action = next_action(sub, rules)
        if action.due is not None and (earliest[0] is None or action.due < earliest[0]):
            earliest[0] = action.due

    def touched(index: int, line: str) -> bool:
        """Parse this line? (Its address is journalled.)"""
        return email_key(line.partition("\t")[0]) in items_of

    path = service.subscribers_path
    with files.record_lock(path):
        if soft or lost:
            failures.update(count_refusals(run, work, soft, lost, doubt))
        if scan is not None and splice_taken(run, work, scan, items_of, settle):
            return forgotten
        # A killed run's journal, or a file changed under the taken lines (a
        # rewrite by another writer): the journalled addresses' lines are parsed,
        # the rest copied; their due times are unknown, so the next run reads them.
        subs.rewrite(path, change, track, parse=touched)
        earliest[0] = moment
        save_index(run, service, None)
        due_summary.write_due(run.data, service.name, earliest[0], rules.fingerprint(),
                        due_summary.file_stamp(path))
    return forgotten


def count_refusals(run: Run, work: Work, soft: dict[str, list[str]], lost: set[str],
                   doubt: dict[str, list[str]] | None = None) -> dict[str, int]:
    """Under the file's lock, before it is rewritten: the soft failures
    counted in the soft file (:func:`~vykhukhol.bounces.counts.settle_soft`),
    the letters refused with the address read as gone in doubt noted
    (:func:`~vykhukhol.bounces.counts.note_doubt`: at the second different
    one the address joins ``lost``), and the addresses to be deleted
    suppressed first, so a kill between loses nothing and counts nothing
    twice. Returns the new counts."""
    service, moment = work.service, run.now()
    taken = {sub.key: sub for _, sub in work.scan.rows.values()} if work.scan else {}
    if set(soft) | lost <= set(taken):
        found = {key: taken[key] for key in set(soft) | lost}
    else:
        found = {sub.key: sub for sub in subs.among(service.subscribers_path, set(soft) | lost)}
    after = counts.settle_soft(run.data, run.settings, service.name, soft,
                               {k: found[k].failures for k in soft if k in found}, moment)
    if doubt:
        lost |= counts.note_doubt(run.data, run.settings,
                                  {k: v for k, v in doubt.items() if k in found}, moment)
    for why, keys in ((suppression.Why.GONE, lost & set(found)),
                      (suppression.Why.BOUNCES, {k for k, v in after.items()
                                                 if v >= work.rules.bounce_limit} - lost)):
        if keys:
            suppression.add_many(run.data, suppression.secret_of(run.settings), sorted(keys), why,
                                 "smtp", moment)
    return after


def splice_taken(run: Run, work: Work, scan: Scan, items_of: dict[str, set[str]],
                 settle: Callable[[Subscriber], tuple[Subscriber | None, Action | None]]
                 ) -> bool:
    """The taken lines, changed, spliced into the file, the index moved along
    and the summary written (under the file's record lock); False if the file
    no longer holds them where they were, or a journalled address is not
    among them."""
    service = work.service
    if not set(items_of) <= {sub.key for _, sub in scan.rows.values()}:
        return False
    path = service.subscribers_path
    changes, notes = [], {}
    settled = work.settled
    for offset, (raw, sub) in sorted(scan.rows.items()):
        after, action = settle(sub)
        ahead = settled.get(sub.key) if settled else None
        if after is None:
            new = b""
        elif ahead is not None and ahead.kept is after:
            new = ahead.line
        else:
            new = as_line(after)
        if new != raw:
            changes.append((offset, raw, new))
            notes[offset] = (len(new) - len(raw),
                             None if action is None else dueindex.of_action(action))
    index = scan.index
    if changes:
        spliced = files.splice(path, changes, upto=index.covered,
                               marks=dueindex.shifted_marks(index, notes))
        if spliced is None:
            return False
        if spliced.old_crc == index.crc:
            index = dueindex.moved(index, notes, spliced)
        else:  # another writer changed lines the run did not take: read them again
            index = dueindex.Index(index.fingerprint)
    stamp = dueindex.stamp_of(path)
    index.stamp = stamp if stamp.split(":")[0] == str(index.covered) else "-"
    if changes or not scan.saved:
        save_index(run, service, index)
    soonest = index.earliest()
    earliest = None if soonest is None else datetime.fromtimestamp(soonest, timezone.utc)
    if index.stamp == "-":  # lines the index does not cover yet: the next run reads them
        earliest = run.now()
    due_summary.write_due(run.data, service.name, earliest, work.rules.fingerprint(),
                    due_summary.file_stamp(path))
    return True


def settle_ahead(run: Run, work: Work, book: journal.Journal, offset: int, item: str) -> None:
    """A sent series letter's line as the fold will write it, made at once,
    while the server answers the next letter's MAIL, so the fold has that
    much less to do after the last letter. Only the plain case: one letter
    sent to a confirmed subscriber with no failures, who is kept; the fold
    checks it again before it uses it (``ahead_holds`` in :func:`fold_service`)."""
    if work.scan is None or offset not in work.scan.rows:
        return
    sub = work.scan.rows[offset][1]
    record = book.kept(work.service.name, sub.email, item)
    if record is None or record.outcome != journal.SENT or sub.failures \
            or sub.state is SubscriberState.NEW:
        return  # (a new subscriber's clean-up depends on the fold's moment)
    after = apply_record(run, work.service, sub, record)
    kept, _, action = clean_up(after, work.rules, run.now())
    if kept is not None:
        work.settled[sub.key] = Settled(sub, record, kept, action, as_line(kept))


def as_line(sub: Subscriber) -> bytes:
    """A subscriber's line as the file holds it (what a splice writes)."""
    return (sub.to_line() + "\n").encode("utf-8", "surrogateescape")


#: A run's records share a few times (one a second): each is read once.
_record_time = functools.lru_cache(maxsize=256)(parse_time)

def apply_record(run: Run, service: svc.Service, sub: Subscriber,
                 record: journal.Record) -> Subscriber:
    """One journalled letter written into the subscriber's line."""
    if record.outcome == journal.TEMPFAIL:
        return sub
    if record.outcome == journal.IN_DOUBT:
        run.log.write(f"{service.name}: letter {record.item} to {sub.email} got no answer (a run "
                      "died, or the server went silent); it is counted in doubt and not sent again")
    try:
        moment = _record_time(record.time)
    except BadInput:
        moment = run.now()
    if record.outcome == journal.FAILED:
        return sub  # counted by its cause before the rewrite (fold_service)
    # SKIPPED: a suppressed address. Its letter's turn passes unsent,
    # as a sent one's would, so it is not taken again by every run.
    if record.item == "reminder":
        if sub.state is not SubscriberState.NEW:
            return sub
        return sub.replace(reminders=sub.reminders + 1, last_reminder=moment)
    number = int(record.item)
    if sub.sent >= number:
        return sub  # folded before (a journal left by a kill after its fold)
    return sub.replace(sent=number, last_sent=moment)  # a hand-over never resets failures
