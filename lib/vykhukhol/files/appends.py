"""Append-only journals: one line a write, fsynced now or when the caller says.

Part of :mod:`vykhukhol.files`; import the names from there.
"""

from __future__ import annotations

import contextlib
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
    (so the caller can do something else between the write and the wait)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = path
        self._name = os.path.basename(path)
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        except OSError as exc:
            raise StorageError(f"cannot append to {self._name}: {exc.strerror or exc}") from exc

    def append(self, line: str, sync: bool = True) -> None:
        data = (line.rstrip("\n") + "\n").encode("utf-8")
        try:
            os.write(self._fd, data)
            if sync:
                os.fsync(self._fd)
        except OSError as exc:
            raise StorageError(f"cannot append to {self._name}: {exc.strerror or exc}") from exc

    def sync(self) -> None:
        """Put what was appended on disk: its bytes and the file's new size,
        which is what ``fdatasync`` flushes (it leaves out the times, which
        nothing reads back), ~25% faster than ``fsync`` here (README 16);
        ``fsync`` where there is no ``fdatasync`` (macOS)."""
        try:
            getattr(os, "fdatasync", os.fsync)(self._fd)  # looked up here: tests fake os
        except OSError as exc:
            raise StorageError(f"cannot write {self._name}: {exc.strerror or exc}") from exc

    def close(self, sync: bool = True) -> None:
        """Never raises: what was appended is in the file already; a refused
        last fsync only leaves the unsynced outcomes to a power cut."""
        with contextlib.suppress(OSError):
            if sync:
                os.fsync(self._fd)
        with contextlib.suppress(OSError):
            os.close(self._fd)
