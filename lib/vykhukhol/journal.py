"""The sender's progress journal: one fsynced line per letter, as it goes.

Before a letter leaves, an ``intent`` line is appended; after the transport
answers, an outcome line (``sent``, ``failed``, ``tempfail``, ``skipped``).
The journal is folded into the data files (subscriber files, newsletter
ledgers) at the end of the run, under the same rename lock. A run killed
mid-batch leaves its journal behind; the next run that takes the lock folds it
first, and an intent with no outcome becomes "in doubt": counted as sent and
never sent again. So a kill costs at most one letter's certainty.

Line: ``event<TAB>lease<TAB>time<TAB>target<TAB>email<TAB>item`` where target
is a service or a newsletter job and item the letter number, ``reminder`` or
the ledger row.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vykhukhol import files

INTENT, SENT, FAILED, TEMPFAIL, SKIPPED = "intent", "sent", "failed", "tempfail", "skipped"
IN_DOUBT = "in doubt"
EVENTS = (INTENT, SENT, FAILED, TEMPFAIL, SKIPPED)
SYNC = True  # fsync every line: progress survives a power cut, not only a kill


@dataclass
class Record:
    lease: str
    time: str
    target: str
    email: str
    item: str
    outcome: str  # sent | failed | tempfail | skipped | in doubt


class Journal:
    def __init__(self, path: Path, lease: str) -> None:
        self.path = Path(path)
        self.lease = lease

    def note(self, event: str, time: str, target: str, email: str, item: str) -> None:
        files.append_line(self.path, "\t".join((event, self.lease, time, target, email, item)), SYNC)

    def note_record(self, record: Record) -> None:
        """Write a folded-later record back (intent only when it is in doubt)."""
        events = [INTENT] if record.outcome == IN_DOUBT else [INTENT, record.outcome]
        for event in events:
            files.append_line(self.path, "\t".join(
                (event, record.lease, record.time, record.target, record.email, record.item)), SYNC)

    def records(self) -> list[Record]:
        """One record per letter, in the order the letters were attempted."""
        return read(self.path)

    def clear(self) -> None:
        files.remove(self.path)


def read(path: Path) -> list[Record]:
    records: dict[tuple[str, str, str, str], Record] = {}
    for line in files.read_lines(path):
        parts = line.split("\t")
        if len(parts) != 6 or parts[0] not in EVENTS:
            continue  # a torn last line from a kill: the letter it named stays in doubt
        event, lease, time, target, email, item = parts
        key = (lease, target, email, item)
        if event == INTENT:
            records.setdefault(key, Record(lease, time, target, email, item, IN_DOUBT))
        else:
            record = records.setdefault(key, Record(lease, time, target, email, item, event))
            record.outcome = event
    return list(records.values())
