"""The run log and the page log: one line per event, each carrying a lease id.

``data/log/run.log``, tab-separated: time, lease id, level, message. Capped in
size and rotated (``run.log.1`` … ``run.log.3``). The admin status page and
``vykhukhol status`` read the recent lines back. The last line of every run,
full or idle, is made by :func:`ended_line` and read by :func:`parse_ended`.

Only runs write the run log: its mtime is when a run last wrote, which the
cron watch reads (docs/using/alerts.md#cron-silent). What a page has to say (a
subscribe post over the hourly cap, an erase) goes to ``data/log/pages.log``
(:func:`page_log`), in the same format, capped and rotated on its own: a
stranger's posts can neither pass for a run nor push runs out of rotation.
"""

from __future__ import annotations

import sys
from operator import itemgetter

from vykhukhol import files
from vykhukhol.errors import StorageError
from vykhukhol.timeutil import format_time, now

TYPE_CHECKING = False  # the idle cron tick writes through this module: no typing, dataclasses, pathlib
if TYPE_CHECKING:
    import os
    from datetime import datetime

    from vykhukhol.datadir import DataDir

MAX_BYTES = 1_000_000  # one log file before rotation
KEEP = 3               # rotated files kept
RUN_LOG = "run.log"    # in data/log: written by runs only
PAGES_LOG = "pages.log"  # in data/log: written by pages only

# Control characters that are not white space (ESC, BEL, DEL, the C1 set): a
# terminal reads them as commands (ESC ] 0 retitles the window, ESC [ 2 J
# clears it), so a stranger's words show them as U+FFFD instead.
_UNSHOWN = {code: "\ufffd" for code in (*range(32), *range(127, 160)) if not chr(code).isspace()}


def one_line(text: str) -> str:
    """Words from outside (a server's answer, a bounce's diagnostic) as one
    line a terminal shows as text: white space made single spaces, other
    control characters replaced. Every line of the run log is written so."""
    return " ".join(str(text).translate(_UNSHOWN).split())


# The two records are tuples with named fields written out, as namedtuple
# writes them: collections (and typing, for a NamedTuple) would be the idle
# tick's largest import, and the tick only writes (docs/design/startup.md#startup-boundary).

class Entry(tuple):
    """One line of the run log: time, lease, level, message (all text)."""

    __slots__ = ()

    def __new__(cls, time: str, lease: str, level: str, message: str) -> Entry:
        return tuple.__new__(cls, (time, lease, level, message))

    time = property(itemgetter(0))
    lease = property(itemgetter(1))
    level = property(itemgetter(2))
    message = property(itemgetter(3))


class Ended(tuple):
    """What a run's last line says: ``seconds`` how long it took, as written
    ("0.3"); ``why`` the outcome's English label, perhaps with a note in
    brackets; ``letters`` the letters handed over to the mail server (all text)."""

    __slots__ = ()

    def __new__(cls, seconds: str, why: str, letters: str) -> Ended:
        return tuple.__new__(cls, (seconds, why, letters))

    seconds = property(itemgetter(0))
    why = property(itemgetter(1))
    letters = property(itemgetter(2))


ENDED = "run ended"  # how a run's last line begins


def ended_line(seconds: float, why: str, letters: int) -> str:
    """The last line of a run; ``letters``: how many the mail server accepted
    ("handed over", never "sent" or "delivered": docs/deliverability/bounces.md#bounces)."""
    return f"{ENDED} after {seconds:.1f}s: {why}; handed over {letters}"


def parse_ended(message: str) -> Ended | None:
    """A run's last line read back; None for any other line (or a torn one)."""
    if not message.startswith(ENDED):
        return None
    import re  # only readers of the log: the idle tick writes, and imports no re

    # Anchored at both ends: a search would retry its lazy middle at every
    # "after" in a long line, in time growing with the square of its length.
    # "; letters N" is how logs written before 2026-12 end the line.
    found = re.fullmatch(r"run ended after ([\d.]+)s: (.*); (?:handed over|letters) (\d+)",
                         message)
    return Ended(*found.groups()) if found else None


def append(path: str | os.PathLike, moment: datetime, lease: str, level: str,
           message: str) -> None:
    """The one writer of a run-log line (the full run's :class:`RunLog` and
    the idle tick alike): the file rotated past MAX_BYTES, then the line
    appended (not fsynced: a log line lost to a crash costs only itself)."""
    files.rotate(path, MAX_BYTES, KEEP)
    files.append_line(path, f"{format_time(moment)}\t{lease}\t{level}\t{message}", sync=False)


class RunLog:
    def __init__(self, data: DataDir, lease: str, name: str = RUN_LOG) -> None:
        self.path = data.log / name
        self.lease = lease
        self.lines: list[str] = []  # what this run said, for its report
        self.lost: tuple[int, str] | None = None  # log lines the disk refused, and why

    def write(self, message: str, level: str = "info") -> None:
        """Log a line; never raises. A log the disk refuses costs the log, not
        the run: the line still reaches the run's report (the cron URL's answer),
        the refusal is said once on stderr (the web server's error log), and the
        log itself says so as soon as it takes lines again."""
        message = one_line(message)
        self.lines.append(message if level == "info" else f"{level.upper()}: {message}")
        entries = [(level, message)]
        if self.lost:
            entries.insert(0, ("error", f"{self.lost[0]} line(s) of this run could not be "
                                        f"written to the log: {self.lost[1]}"))
        try:
            files.make_folder(self.path.parent)
            for kind, text in entries:
                append(self.path, now(), self.lease, kind, text)
        except (StorageError, OSError) as exc:
            reason = exc.message if isinstance(exc, StorageError) else str(exc)
            if not self.lost:
                self.lines.append(f"ERROR: the run log cannot be written: {reason}")
                print(f"vykhukhol: the run log cannot be written: {reason}", file=sys.stderr)
            self.lost = ((self.lost[0] if self.lost else 0) + 1, reason)
        else:
            self.lost = None

    def alert(self, message: str) -> None:
        self.write(message, "alert")

    def error(self, message: str) -> None:
        self.write(message, "error")


def page_log(data: DataDir) -> RunLog:
    """Where a page writes its events: never the run log, whose mtime says
    when a run last wrote."""
    return RunLog(data, "web", PAGES_LOG)


def recent(data: DataDir, count: int = 200, name: str = RUN_LOG) -> list[Entry]:
    """The last ``count`` lines of the current log file, oldest first."""
    from collections import deque  # a reader's: the tick only writes

    tail: deque[str] = deque(maxlen=count)
    for line in files.read_lines(data.log / name):
        tail.append(line)
    return [entry for entry in map(parse_line, tail) if entry is not None]


def parse_line(line: str) -> Entry | None:
    """One log line as an Entry; None for a line that is not one (torn by a kill)."""
    parts = line.split("\t", 3)
    return Entry(*parts) if len(parts) == 4 else None
