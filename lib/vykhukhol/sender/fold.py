"""The fold: the series journal written into the subscriber files, with
SPEC 5 step 5's clean-up (deletions, ``done`` marks), one streamed rewrite
per service, and each service's next-due summary refreshed.

Called by :func:`~vykhukhol.sender.serial.hold_db` as it takes a DB's lock
(a killed predecessor's journal) and as it gives it back (this run's).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import datetime, timezone

from vykhukhol import dueindex, files, journal, state
from vykhukhol import services as svc
from vykhukhol import subscribers as subs
from vykhukhol.addresses import email_key
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.runtime import Run
from vykhukhol.sender.work import Work, save_index
from vykhukhol.series import clean_up, next_action, rules_of
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
                targets[name] = Work(service, rules_of(run, service))
            except (NotFound, BadInput):
                continue  # its journal lines wait until the service is readable again
    for name, work in targets.items():
        fold_service(run, work, by_service.get(name, {}))
    leftover = [r for r in records if r.target not in targets]
    book.clear()
    for record in leftover:  # keep what could not be folded (a broken service) for later
        book.note_record(record)


def fold_service(run: Run, work: Work, records: dict[tuple[str, str], journal.Record]) -> None:
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

    def change(sub: subs.Subscriber) -> subs.Subscriber | None:
        after = sub
        for item in items_of.get(sub.key, ()):
            after = apply_record(run, service, after, records[(sub.key, item)])
        kept, why = clean_up(after, rules, moment)
        if kept is None:
            gone[why] += 1
            run.log.write(f"{service.name}: {sub.email} deleted: {why}")
            return None
        return kept

    def track(sub: subs.Subscriber) -> None:
        action = next_action(sub, rules)
        if action.due is not None and (earliest[0] is None or action.due < earliest[0]):
            earliest[0] = action.due

    def touched(index: int, line: str) -> bool:
        """Parse this line? (Its address is journalled.)"""
        return email_key(line.partition("\t")[0]) in items_of

    path = service.subscribers_path
    with files.record_lock(path):
        if scan is not None and splice_taken(run, work, items_of, change):
            return
        # A killed run's journal, or a file changed under the taken lines (a
        # rewrite by another writer): the journalled addresses' lines are parsed,
        # the rest copied; their due times are unknown, so the next run reads them.
        subs.rewrite(path, change, track, parse=touched)
        earliest[0] = moment
        save_index(run, service, None)
        state.write_due(run.data, service.name, earliest[0], rules.fingerprint(),
                        state.file_stamp(path))


def splice_taken(run: Run, work: Work, items_of: dict[str, set[str]],
                 change: Callable[[subs.Subscriber], subs.Subscriber | None]) -> bool:
    """The taken lines, changed, spliced into the file, the index moved along
    and the summary written (under the file's record lock); False if the file
    no longer holds them where they were, or a journalled address is not
    among them."""
    service, scan = work.service, work.scan
    if not set(items_of) <= {sub.key for _, sub in scan.rows.values()}:
        return False
    path = service.subscribers_path
    changes, notes = [], {}
    for offset, (raw, sub) in sorted(scan.rows.items()):
        after = change(sub)
        new = b"" if after is None else (after.to_line() + "\n").encode("utf-8", "surrogateescape")
        if new != raw:
            changes.append((offset, raw, new))
            notes[offset] = (len(new) - len(raw),
                             None if after is None else dueindex.classify(after, work.rules))
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
    state.write_due(run.data, service.name, earliest, work.rules.fingerprint(),
                    state.file_stamp(path))
    return True


def apply_record(run: Run, service: svc.Service, sub: subs.Subscriber,
                 record: journal.Record) -> subs.Subscriber:
    """One journalled letter written into the subscriber's line."""
    if record.outcome == journal.TEMPFAIL:
        return sub
    if record.outcome == journal.IN_DOUBT:
        run.log.write(f"{service.name}: letter {record.item} to {sub.email} got no answer (a run "
                      "died, or the server went silent); it is counted in doubt and not sent again")
    try:
        moment = parse_time(record.time)
    except BadInput:
        moment = run.now()
    if record.outcome == journal.FAILED:
        return sub.replace(failures=sub.failures + 1)
    # SKIPPED: a suppressed address (SPEC 12). Its letter's turn passes unsent,
    # as a sent one's would, so it is not taken again by every run.
    if record.item == "reminder":
        if sub.state is not SubscriberState.NEW:
            return sub
        return sub.replace(reminders=sub.reminders + 1, last_reminder=moment)
    number = int(record.item)
    if sub.sent >= number:
        return sub  # folded before (a journal left by a kill after its fold)
    if record.outcome == journal.SKIPPED:
        return sub.replace(sent=number, last_sent=moment)
    return sub.replace(sent=number, last_sent=moment, failures=0)
