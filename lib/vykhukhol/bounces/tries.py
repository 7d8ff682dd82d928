"""Messages begun and never finished: ``data/bounces/tries.txt``.

A message the reader began but never finished (the process was killed while
on it) is, the second time, set aside unread instead of being tried again,
so no message can hold up the mailbox. What a message must be before it is
parsed at all is :mod:`vykhukhol.bounces.reading.limits`.
"""

from __future__ import annotations

from pathlib import Path

from vykhukhol import files
from vykhukhol.datadir import DataDir

TRIES_BYTES = 200_000  # tries.txt is cut back to the unfinished ids past this size
GIVE_UP = 2            # times a reader was stopped on a message before it is set aside unread


def tries_path(data: DataDir) -> Path:
    return data.root / "bounces" / "tries.txt"


class Tries:
    """``data/bounces/tries.txt``: what the reader began. Each reader that
    begins a message first writes a ``-`` line, then one line (the message
    id) for each message it begins. The reader's journal says which messages
    have a result. A reader that was stopped (killed) was on the last message
    it began; a message that was that last, unfinished one :data:`GIVE_UP`
    times is set aside. Any message begun and not finished is handled in a
    batch of its own, so only the one a reader was on when it stopped is
    blamed. Used under the journal's record lock (one reader at a time)."""

    def __init__(self, data: DataDir, finished: set[str]) -> None:
        self.path = tries_path(data)
        self.begun: set[str] = set()      # begun, never finished
        self.blamed: dict[str, int] = {}  # the message a stopped reader was on, how often
        last = ""
        for line in files.read_lines(self.path):
            line = line.strip()
            if line == "-" or line.startswith("* "):
                self._blame(last, finished)
                last = ""
            if line.startswith("* "):      # a count carried over by a cut-back
                self._blame(line[2:], finished)
            elif line and line != "-":
                last = line
                if line not in finished:
                    self.begun.add(line)
        self._blame(last, finished)  # the last reader's own last message
        try:
            if self.path.stat().st_size > TRIES_BYTES:
                files.atomic_write(self.path, [f"* {mid}\n" for mid, n in self.blamed.items()
                                               for _ in range(n)]
                                   + [f"-\n{mid}\n" for mid in self.begun - set(self.blamed)],
                                   new_mode=0o600)
        except FileNotFoundError:
            pass
        self._file: files.AppendFile | None = None

    def _blame(self, mid: str, finished: set[str]) -> None:
        if mid and mid not in finished:
            self.blamed[mid] = self.blamed.get(mid, 0) + 1
            self.begun.add(mid)

    def unfinished(self, mid: str) -> bool:
        """Was ``mid`` begun before and never finished?"""
        return mid in self.begun

    def given_up(self, mid: str) -> bool:
        """Was a reader stopped while on ``mid`` :data:`GIVE_UP` times?"""
        return self.blamed.get(mid, 0) >= GIVE_UP

    def begin(self, mid: str) -> None:
        """Note that ``mid`` is begun. Not fsynced: a kill of the process leaves
        the line with the system; only a crash of the machine loses it, and
        then the message is simply tried once more."""
        if self._file is None:
            files.make_folder(self.path.parent)
            self._file = files.AppendFile(self.path)
            self._file.append("-", sync=False)
        self._file.append(mid, sync=False)

    def close(self) -> None:
        if self._file is not None:
            self._file.close(sync=False)
            self._file = None
