"""The sender's progress journal: one fsynced line per letter, as it goes.

Before a letter leaves, an ``intent`` line is appended; after the transport
answers, an outcome line (``sent``, ``failed``, ``tempfail``, ``skipped``).
The journal is folded into the data files (subscriber files, newsletter
ledgers) at the end of the run, under the same rename lock. A run killed
mid-batch leaves its journal behind; the next run that takes the lock folds it
first, and an intent with no outcome becomes "in doubt": counted as sent and
never sent again. So a kill costs at most one letter's certainty.

Only intents are fsynced, before the letter leaves: that is what keeps a
letter from going twice even after a power cut. An outcome line is written
(so a kill cannot lose it) and reaches the disk with the next intent's fsync
or the fold's; a power cut in between turns that one letter "in doubt", the
safe direction. The file stays open for the run: one write and, for an
intent, one fsync per line. It grows by :data:`ROOM` zeros at a time, so
that fsync flushes the line and not the file's size; the zeros after the
last line are skipped by :func:`read` and cut off by :meth:`Journal.close`.
The intent's fsync is the transport's to call (:meth:`Journal.intend`): over
SMTP it runs once MAIL FROM has left (once RCPT has, when MAIL was sent
ahead as the letter before was answered), so the disk and the server work
at the same time, and it is done before DATA.

While the file holds only what this :class:`Journal` wrote, the records are
kept in memory as well, so the fold does not read back the lines the run
has just written (:meth:`Journal.records`); a failed write drops that copy
and the file is read.

Line: ``event<TAB>lease<TAB>time<TAB>target<TAB>email<TAB>item`` where target
is a service or a newsletter job and item the letter number, ``reminder`` or
the ledger row; a ``failed`` line may add ``<TAB>cause``, why the server
refused (:class:`vykhukhol.bounces.reading.reasons.Cause`'s value: ``address gone``,
``soft``, ``sender refused``; ``address gone (doubtful)`` for an address read
as gone with doubt, which leaves at the second letter refused so:
docs/design/bounces.md#bounces-doubt), which the fold acts on
(docs/deliverability/bounces.md#returned-message). A ``failed`` line without
one (written before) is read as soft. A ``failed`` or ``skipped`` line may
add ``<TAB>why`` after the cause (empty or not): what its newsletter ledger
keeps of it (:mod:`vykhukhol.newsletters.missed`, the server's reply for a
refusal).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vykhukhol import files

INTENT, SENT, FAILED, TEMPFAIL, SKIPPED = "intent", "sent", "failed", "tempfail", "skipped"
IN_DOUBT = "in doubt"
# The cause of a refusal read as "address gone" with doubt (docs/design/bounces.md#bounces-doubt).
GONE, GONE_IN_DOUBT = "address gone", "address gone (doubtful)"
EVENTS = (INTENT, SENT, FAILED, TEMPFAIL, SKIPPED)
SYNC = True  # fsync intents: progress survives a power cut, not only a kill
ROOM = 1 << 16  # the file grows by this many zeros at a time: see files.AppendFile


@dataclass
class Record:
    lease: str
    time: str
    target: str
    email: str
    item: str
    outcome: str  # sent | failed | tempfail | skipped | in doubt
    cause: str = ""  # for failed: why (address gone, soft, sender refused)
    why: str = ""  # for failed and skipped: the ledger's why (newsletters.missed)


def _on_disk_already() -> None:
    return None


class Journal:
    """One run's journal file; :meth:`close` it (or :meth:`clear` it) when done."""

    def __init__(self, path: Path, lease: str) -> None:
        self.path = Path(path)
        self.lease = lease
        self._file: files.AppendFile | None = None
        self._kept: dict[tuple[str, str, str, str], Record] | None = None  # see the module

    def note(self, event: str, time: str, target: str, email: str, item: str,
             cause: str = "", why: str = "") -> None:
        fields = (event, self.lease, time, target, email, item) + _tail(cause, why)
        self._append(fields, SYNC and event == INTENT)

    def intend(self, time: str, target: str, email: str, item: str) -> Callable[[], None]:
        """Note that a letter is about to leave. Returns the function to call
        before it may leave for good: it returns once the intent is on disk
        (the fsync; a caller may send its first command before it calls it)."""
        self._append((INTENT, self.lease, time, target, email, item), False)
        if not SYNC:
            return _on_disk_already
        assert self._file is not None
        return self._file.sync

    def note_record(self, record: Record) -> None:
        """Write a folded-later record back (intent only when it is in doubt)."""
        events = [INTENT] if record.outcome == IN_DOUBT else [INTENT, record.outcome]
        for event in events:
            tail = _tail(record.cause, record.why) if event != INTENT else ()
            self._append((event, record.lease, record.time, record.target, record.email,
                          record.item) + tail, SYNC)

    def _append(self, fields: tuple[str, ...], sync: bool) -> None:
        if self._file is None:
            self._file = files.AppendFile(self.path, room=ROOM)
            self._kept = {} if self._file.empty else None
        try:
            self._file.append("\t".join(fields), sync)
        except BaseException:
            self._kept = None  # the line may be on disk or not: the file says
            raise
        if self._kept is not None and len(fields) in (6, 7, 8) and fields[0] in EVENTS:
            _take(self._kept, fields)  # what read() would take of the line

    def close(self) -> None:
        """Put what was written on disk and let the file go (it stays)."""
        if self._file is not None:
            file, self._file = self._file, None
            file.close(sync=SYNC)

    def kept(self, target: str, email: str, item: str) -> Record | None:
        """This run's record of one letter, as kept in memory (None when the
        journal is read from its file, or has no such letter)."""
        if self._kept is None:
            return None
        return self._kept.get((self.lease, target, email, item))

    def records(self) -> list[Record]:
        """One record per letter, in the order the letters were attempted
        (the journal's own while it is written: change none of them)."""
        if self._kept is not None:  # the file holds just these lines
            return list(self._kept.values())
        return read(self.path)

    def clear(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            file.close(sync=False)
        self._kept = None
        files.remove(self.path)


def _tail(cause: str, why: str) -> tuple[str, ...]:
    """The optional fields after ``item``: ``cause``, then ``why`` (one line,
    no tab: a server's reply may hold either)."""
    if why:
        return (cause, " ".join(why.split()))
    return (cause,) if cause else ()


def read(path: Path) -> list[Record]:
    records: dict[tuple[str, str, str, str], Record] = {}
    for line in files.read_lines(path):
        if line.endswith("\0"):  # the zeros after the last line (ROOM): a killed run leaves them
            line = line.rstrip("\0")
        parts = line.split("\t")
        if len(parts) not in (6, 7, 8) or parts[0] not in EVENTS:
            continue  # a torn last line from a kill: the letter it named stays in doubt
        _take(records, parts)
    return list(records.values())


def _take(records: dict[tuple[str, str, str, str], Record], fields: Sequence[str]) -> None:
    """One line's fields (event, lease, time, target, email, item[, cause[, why]])
    into the records: a letter's intent makes its record, in doubt, and its
    outcome says how it ended."""
    event, lease, time, target, email, item = fields[:6]
    key = (lease, target, email, item)
    record = records.get(key)  # a fold reads two lines a letter: one record made
    if event == INTENT:
        if record is None:
            records[key] = Record(lease, time, target, email, item, IN_DOUBT)
        return
    if record is None:
        record = records[key] = Record(lease, time, target, email, item, event)
    record.outcome = event
    record.cause = fields[6] if len(fields) >= 7 else ""
    record.why = fields[7] if len(fields) == 8 else ""
