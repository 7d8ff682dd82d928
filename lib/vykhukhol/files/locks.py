"""Locks: the record lock around one read-modify-write of a file (``flock`` on
``<path>.lock``, reentrant within a thread), and the original's rename lock
``db.free``/``db.busy``.

Part of :mod:`vykhukhol.files`; import the names from there.
"""

from __future__ import annotations

import os

from vykhukhol.errors import LockBusy, StorageError
from vykhukhol.files.modes import FILE_MODE, make_folder, masked, read_text, remove
from vykhukhol.files.rewrite import atomic_write

TYPE_CHECKING = False  # typing itself is not imported: a CGI page pays for every import
if TYPE_CHECKING:
    from types import TracebackType

LOCK_TIMEOUT = 20.0  # seconds a writer waits for a record lock before giving up
# A lock file gets the data files' mode less the umask, and always its owner's
# read and write (what filelock, which took these locks before, gave it).
_LOCK_MODE = masked(FILE_MODE) | 0o600
_LONGEST_PAUSE = 0.05  # seconds between tries while another holds the lock

# The record locks this process holds: (lock file, thread) -> [descriptor, depth].
# A thread that holds one and asks again goes on (reentrant); another thread
# opens its own descriptor, and flock keeps two descriptions apart exactly as
# it keeps two processes apart.
_HELD: dict[tuple[str, int], list[int]] = {}
# A forked child holds nothing of its own: the parent's lock is the parent's.
os.register_at_fork(after_in_child=_HELD.clear)


class record_lock:  # noqa: N801 - used as a function: ``with record_lock(path):``
    """Hold ``<path>.lock`` for one short read-modify-write of ``path``.

    Reentrant within a thread, exclusive across threads and processes (flock:
    the sender, the CLI, CGI and ``vykhukhol serve`` all take it so). Raises
    :class:`LockBusy` when it cannot be had in ``timeout`` seconds (0: one
    try; negative: wait for ever), :class:`StorageError` when the lock file
    cannot be opened, and for an OSError of the block it guards. The file's
    folder is made when it is missing, as filelock made it.

    Written on ``fcntl`` rather than filelock: filelock's import (logging,
    threading, decimal) cost every subscribe POST ~15 ms before its answer,
    and only POSIX hosts run these scripts. A class rather than a generator
    under contextlib's decorator: the idle cron tick takes this module, and
    contextlib (with collections and functools) would be a third of its
    imports (docs/design/startup.md#startup-boundary).
    """

    def __init__(self, path: str | os.PathLike, timeout: float = LOCK_TIMEOUT) -> None:
        self._path = path
        self._timeout = timeout

    def __enter__(self) -> None:
        from _thread import get_ident  # built in: threading itself would cost an import

        lock_path = os.path.abspath(f"{self._path}.lock")
        self._key = (lock_path, get_ident())
        held = _HELD.get(self._key)
        if held is not None:
            held[1] += 1
            return
        try:
            fd = _take(lock_path, self._timeout, os.path.basename(self._path))
        except OSError as exc:
            raise self._failed(exc) from None
        _HELD[self._key] = [fd, 1]

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
        held = _HELD[self._key]
        held[1] -= 1
        if held[1] == 0:
            del _HELD[self._key]
            try:
                os.close(held[0])  # closing the only descriptor of the description releases the flock
            except OSError as error:
                if exc is None:
                    raise self._failed(error) from None
        if isinstance(exc, OSError):
            raise self._failed(exc) from None

    def _failed(self, exc: OSError) -> StorageError:
        return StorageError(f"cannot lock {os.path.basename(self._path)}: "
                            f"{exc.strerror or exc}; check the folder's permissions and free space")


def _take(lock_path: str, timeout: float, name: str) -> int:
    """An open descriptor of ``lock_path`` holding its flock, or LockBusy."""
    import errno
    import fcntl
    import time

    busy = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES)  # some file systems say EACCES
    give_up = None if timeout < 0 else time.monotonic() + timeout
    pause = 0.001
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, _LOCK_MODE)
        except FileNotFoundError:
            # A file's folder that is not there yet is made, as filelock made it
            # (the archive's first entries file is written so).
            make_folder(os.path.dirname(lock_path))
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, _LOCK_MODE)
        try:
            _settle_mode(fd)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in busy:
                        raise
                if give_up is not None and time.monotonic() >= give_up:
                    raise LockBusy(f"{name} is being changed by another process; try again")
                time.sleep(pause)
                pause = min(pause * 2, _LONGEST_PAUSE)
            # drop_lock may have deleted the file while we waited on it: a lock
            # on a deleted file keeps out nobody who opens the path now.
            try:
                now = os.stat(lock_path, follow_symlinks=False)
            except FileNotFoundError:
                now = None
            ours = os.fstat(fd)
            if now is not None and (now.st_ino, now.st_dev) == (ours.st_ino, ours.st_dev):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # try again on the file that is there now


def _settle_mode(fd: int) -> None:
    """Give a lock file of ours :data:`_LOCK_MODE`, whatever the umask made of it."""
    info = os.fstat(fd)
    if info.st_mode & 0o777 != _LOCK_MODE and info.st_uid == os.geteuid():
        try:
            os.fchmod(fd, _LOCK_MODE)
        except OSError:
            pass  # a mode is no reason to refuse a lock


class quick_record_lock:  # noqa: N801 - used as a function, as record_lock
    """The same lock as :class:`record_lock` (``flock`` on ``<path>.lock``) in its
    plainest form, for the idle cron tick (:mod:`vykhukhol.sender.idle`), whose whole
    cost is its imports. Not reentrant. Raises OSError when it cannot be had in
    ``timeout`` seconds."""

    def __init__(self, path: str | os.PathLike, timeout: float = LOCK_TIMEOUT) -> None:
        self._path = path
        self._timeout = timeout

    def __enter__(self) -> None:
        import fcntl
        import time

        fd = os.open(f"{self._path}.lock", os.O_RDWR | os.O_CREAT, _LOCK_MODE)
        try:
            give_up = time.monotonic() + self._timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > give_up:
                        raise
                    time.sleep(0.01)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
        import fcntl

        try:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)


def drop_lock(path: str | os.PathLike) -> bool:
    """Delete ``<path>.lock`` unless someone holds it; True if it went.

    Only for a lock whose every critical section would now change nothing (the
    file it guards is gone for good, or what it guards is settled): a process
    that opened the lock file just before it went may still take it, on the
    deleted file, while the next one takes a new file. Two holders at once are
    harmless only then. A held lock is left for a later sweep."""
    lock_path = f"{path}.lock"
    if not os.path.exists(lock_path):
        return False
    try:
        with record_lock(path, timeout=0):
            remove(lock_path)  # while we hold it: nobody is inside
    except (LockBusy, StorageError):
        return False
    return True


class Holder:  # not a dataclass nor a NamedTuple: the idle cron tick imports this module
    """Who holds a busy rename lock, as far as the lock file tells."""

    __slots__ = ("lease", "since")

    def __init__(self, lease: str, since: float) -> None:
        self.lease = lease
        self.since = since  # epoch seconds

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Holder):
            return NotImplemented
        return (self.lease, self.since) == (other.lease, other.since)

    __hash__ = None  # type: ignore[assignment]  # unhashable: equal holders may change

    def __repr__(self) -> str:
        return f"Holder(lease={self.lease!r}, since={self.since!r})"


class RenameLock:
    """``<stem>.free`` ⇄ ``<stem>.busy`` in ``folder``.

    ``acquire`` raises :class:`LockBusy` when another run holds it and
    :class:`StorageError` when the rename fails for another reason.
    """

    def __init__(self, folder: str | os.PathLike, stem: str) -> None:
        from pathlib import Path  # callers read .free and .busy as paths

        self.folder = Path(folder)
        self.free = self.folder / f"{stem}.free"
        self.busy = self.folder / f"{stem}.busy"

    def ensure(self) -> None:
        """Create the free file when neither file exists (a fresh or copied folder)."""
        if not self.free.exists() and not self.busy.exists():
            with record_lock(self.free):
                if not self.free.exists() and not self.busy.exists():
                    atomic_write(self.free, "")
            # The record lock guarded only this creation; one of the two files is
            # there for good now, so its lock file need not stay.
            drop_lock(self.free)

    def holder(self) -> Holder | None:
        """The lease holding the lock, or None while it is free.

        A busy file not stamped yet was renamed a moment ago: its age is its
        ctime (a rename sets ctime, not mtime), and its lease reads "".
        """
        try:
            info = self.busy.stat()
        except FileNotFoundError:
            return None
        text = (read_text(self.busy, "") or "").strip()
        if not text:
            return Holder(lease="", since=info.st_ctime)
        return Holder(lease=text.split("\t")[0], since=info.st_mtime)

    def acquire(self, lease: str) -> None:
        try:
            os.rename(self.free, self.busy)
        except FileNotFoundError:
            if self.busy.exists():
                raise LockBusy(f"{self.busy.name} is held") from None
            raise StorageError(f"cannot rename {self.free.name}: the lock file is missing") from None
        except OSError as exc:
            raise StorageError(f"cannot rename {self.free.name}: {exc.strerror or exc}") from exc
        # The rename made it ours; stamp it with our lease and the start time.
        try:
            fd = os.open(self.busy, os.O_WRONLY | os.O_TRUNC)
            try:
                os.write(fd, lease.encode())
            finally:
                os.close(fd)
            os.utime(self.busy)
        except OSError:
            pass  # an unstamped busy file reads as held since its rename

    def release(self) -> None:
        try:
            # Unstamp first, so a run that looks between our rename and the next
            # holder's stamp never reads our (soon dead) pid.
            os.truncate(self.busy, 0)
            os.rename(self.busy, self.free)
        except OSError as exc:
            raise StorageError(f"cannot rename {self.busy.name} back: {exc.strerror or exc}") from exc

    def force_free(self) -> bool:
        """Clear a stale busy lock (the admin's debug→working switch). True if one was cleared."""
        if not self.busy.exists():
            self.ensure()
            return False
        if self.free.exists():
            remove(self.busy)
        else:
            self.release()
        return True


def rotate(path: str | os.PathLike, max_bytes: int, keep: int = 3) -> None:
    """Move ``path`` to ``path.1`` (and older ones along) once it passes ``max_bytes``."""
    try:
        if os.stat(path).st_size < max_bytes:
            return
    except FileNotFoundError:
        return
    with record_lock(path):
        try:
            if os.stat(path).st_size < max_bytes:
                return
            for index in range(keep - 1, 0, -1):
                older = f"{path}.{index}"
                if os.path.exists(older):
                    os.replace(older, f"{path}.{index + 1}")
            os.replace(path, f"{path}.1")
        except OSError as exc:
            raise StorageError(f"cannot rotate {os.path.basename(path)}: {exc.strerror or exc}") from exc
