"""Append-only journals: one line a write, fsynced now or when the caller says.

Part of :mod:`vykhukhol.files`; import the names from there.
"""

from __future__ import annotations

import os

from vykhukhol.errors import StorageError
from vykhukhol.files.modes import FILE_MODE


def append_line(path: str | os.PathLike, line: str, sync: bool = True) -> None:
    """Add one line to a journal; with ``sync`` it is on disk when this returns."""
    file = AppendFile(path)
    try:
        file.append(line, sync)
    finally:
        file.close(sync=False)


class AppendFile:
    """A journal held open: :meth:`append` adds one line with one write (so a
    kill leaves whole lines and at most a torn last one); with ``sync`` the
    file is on disk when it returns; without, :meth:`sync` puts it there later
    (so the caller can do something else between the write and the wait).

    With ``room`` (bytes) the file grows by that many zero bytes at a time,
    each run of zeros on disk before a line is written into it: a sync then
    flushes the line's block and nothing else, where one that also grows the
    file must write its new size as well (~30% cheaper here). Its
    readers skip the zeros after the last line (a killed writer leaves
    them); :meth:`close` cuts them off."""

    def __init__(self, path: str | os.PathLike, room: int = 0) -> None:
        self.path = path
        self._name = os.path.basename(path)
        self._room = room
        flags = os.O_RDWR | os.O_CREAT if room else os.O_WRONLY | os.O_APPEND | os.O_CREAT
        try:
            self._fd = os.open(self.path, flags, FILE_MODE)
            if room:
                self._size = os.fstat(self._fd).st_size
                self._end = _end_of_lines(self._fd, self._size)
                os.lseek(self._fd, self._end, os.SEEK_SET)
        except OSError as exc:
            try:
                os.close(self._fd)
            except (AttributeError, OSError):
                pass
            raise StorageError(f"cannot append to {self._name}: {exc.strerror or exc}") from exc

    @property
    def empty(self) -> bool:
        """Whether the file held no line when it was opened, and none since."""
        return (self._end if self._room else os.fstat(self._fd).st_size) == 0

    def append(self, line: str, sync: bool = True) -> None:
        data = (line.rstrip("\n") + "\n").encode("utf-8")
        try:
            if self._room:
                if self._end + len(data) > self._size:
                    self._grow(len(data))
                self._end += os.write(self._fd, data)
            else:
                os.write(self._fd, data)
            if sync:
                os.fsync(self._fd)
        except OSError as exc:
            raise StorageError(f"cannot append to {self._name}: {exc.strerror or exc}") from exc

    def _grow(self, need: int) -> None:
        """Zeros after the end, enough for ``need`` bytes more; the position
        stays at the end. Fewer zeros (a full disk) cost only speed: a line
        past them grows the file as any append does."""
        os.lseek(self._fd, self._size, os.SEEK_SET)
        try:
            self._size += os.write(self._fd, bytes(self._end + need + self._room - self._size))
        finally:
            os.lseek(self._fd, self._end, os.SEEK_SET)

    def sync(self) -> None:
        """Put what was appended on disk: its bytes and the file's new size,
        which is what ``fdatasync`` flushes (it leaves out the times, which
        nothing reads back), ~25% faster than ``fsync`` here;
        ``fsync`` where there is no ``fdatasync`` (macOS)."""
        try:
            getattr(os, "fdatasync", os.fsync)(self._fd)  # looked up here: tests fake os
        except OSError as exc:
            raise StorageError(f"cannot write {self._name}: {exc.strerror or exc}") from exc

    def close(self, sync: bool = True) -> None:
        """Never raises: what was appended is in the file already; a refused
        last fsync only leaves the unsynced outcomes to a power cut (and a
        refused cut leaves the zeros, which readers skip)."""
        if self._room and self._size > self._end:
            try:
                os.ftruncate(self._fd, self._end)
            except OSError:
                pass
        try:
            if sync:
                os.fsync(self._fd)
        except OSError:
            pass
        try:
            os.close(self._fd)
        except OSError:
            pass


def _end_of_lines(fd: int, size: int, block: int = 1 << 16) -> int:
    """Where the zeros after the last line begin (``size`` when there are none)."""
    end = size
    while end > 0:
        start = max(0, end - block)
        os.lseek(fd, start, os.SEEK_SET)
        chunk = os.read(fd, end - start).rstrip(b"\0")
        if chunk:
            return start + len(chunk)
        end = start
    return 0
