"""Append-only journals: one line a write, fsynced now or later.

Part of :mod:`vykhukhol.files`; import the names from there.
"""

from __future__ import annotations

import contextlib
import os

from vykhukhol.errors import StorageError
from vykhukhol.files.modes import FILE_MODE

TYPE_CHECKING = False  # typing itself is not imported: a CGI page pays for every import
if TYPE_CHECKING:
    from collections.abc import Callable

def append_line(path: str | os.PathLike, line: str, sync: bool = True) -> None:
    """Add one line to a journal; with ``sync`` it is on disk when this returns."""
    file = AppendFile(path)
    try:
        file.append(line, sync)
    finally:
        file.close(sync=False)


class _Syncer:
    """One thread that fsyncs a file when told to, so the caller's thread can
    talk to an SMTP server meanwhile (fsync lets go of the GIL). Two bare
    locks are the cheapest hand-over Python has."""

    def __init__(self, fd: int) -> None:
        import threading

        self.fd = fd
        self.error: OSError | None = None
        self._go, self._done = threading.Lock(), threading.Lock()
        self._go.acquire()
        self._done.acquire()
        self._stopping = False
        self._busy = False
        self._thread = threading.Thread(target=self._loop, name="journal-fsync", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            self._go.acquire()
            if self._stopping:
                return
            try:
                os.fsync(self.fd)
            except OSError as exc:
                self.error = exc
            self._done.release()

    def start_sync(self, name: str) -> Callable[[], None]:
        self._wait()  # one fsync at a time
        self.error = None
        self._busy = True
        self._go.release()

        def on_disk() -> None:
            self._wait()
            if self.error is not None:
                raise StorageError(f"cannot write {name}: {self.error.strerror or self.error}")
        return on_disk

    def _wait(self) -> None:
        if self._busy:
            self._done.acquire()
            self._busy = False

    def stop(self) -> None:
        self._wait()
        self._stopping = True
        self._go.release()
        self._thread.join()


class AppendFile:
    """A journal held open: :meth:`append` adds one line with one write (so a
    kill leaves whole lines and at most a torn last one); with ``sync`` the
    file is on disk when it returns; without, :meth:`sync` puts it there later
    (so the caller can do something else between the write and the wait)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = path
        self._name = os.path.basename(path)
        self._syncer: _Syncer | None = None
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
        """Put what was appended on disk."""
        try:
            os.fsync(self._fd)
        except OSError as exc:
            raise StorageError(f"cannot write {self._name}: {exc.strerror or exc}") from exc

    def sync_later(self) -> Callable[[], None]:
        """Start putting what was appended on disk, in a thread of its own.
        Returns the function that waits until it is there (and raises
        :class:`StorageError` if it could not be)."""
        if self._syncer is None:
            self._syncer = _Syncer(self._fd)
        return self._syncer.start_sync(self._name)

    def close(self, sync: bool = True) -> None:
        """Never raises: what was appended is in the file already; a refused
        last fsync only leaves the unsynced outcomes to a power cut."""
        if self._syncer is not None:
            self._syncer.stop()
            self._syncer = None
        with contextlib.suppress(OSError):
            if sync:
                os.fsync(self._fd)
        with contextlib.suppress(OSError):
            os.close(self._fd)
