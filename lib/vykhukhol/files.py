"""Atomic rewrites, record locks, append-only journals and the rename lock.

This is the only module that writes data files. Everything else asks it to:

* ``atomic_write(path, lines)`` — write a temporary file in the same folder,
  flush, fsync, ``os.replace``, fsync the folder. A crash at any point leaves
  either the old or the new file; a full disk or a permission error leaves the
  old file and raises :class:`StorageError`. ``atomic_write_bytes`` is the
  same for bytes; ``splice`` is such a rewrite that changes a few byte ranges
  and copies the rest of the old file through as it is.
* ``record_lock(path)`` — a short ``filelock`` around one read-modify-write, so
  a CGI writer and the sender never lose each other's changes.
* ``append_line(path, line)`` — one line added to a journal and fsynced;
  ``AppendFile`` keeps a journal open for many lines.
* :class:`RenameLock` — the original's ``db.free``/``db.busy`` lock: taken by
  renaming free → busy (atomic on every file system a hoster offers), released
  by renaming back. It is held for a whole run; its age tells a dead run.
* ``make_folder(path)`` — a folder (and its missing parents) for data files.

Who may read them is decided here, once (see :data:`FILE_MODE`).

It deliberately knows nothing of what the files contain.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TextIO

from vykhukhol.errors import LockBusy, StorageError

if TYPE_CHECKING:
    import filelock

LOCK_TIMEOUT = 20.0  # seconds a writer waits for a record lock before giving up

# Who may read what Vykhukhol writes (SPEC 13). Every kind of file in data/ is
# its owner's alone: subscriber files, newsletter ledgers and journals hold
# addresses, names and IP addresses; state/ holds sessions and login counts;
# the log and the outbox name recipients; settings.ini holds the secret and
# the passwords; letters and service.ini are nobody else's business either,
# and nothing in data/ is served to the web directly. So one rule for every
# kind: files 0600, folders 0700, lock files too. Each mode is masked by the
# process's umask, so nothing is ever made wider than the umask allows.
FILE_MODE = 0o600
FOLDER_MODE = 0o700
NOBODY_ELSE = 0o007  # the bits a rewrite takes away from an older, wider file
# The one exception: the public archive (archive/ beside cgi/, README "The
# public archive") is written for the web server to serve as static files, so
# it is readable by all — and holds nothing personal by construction.
PUBLIC_FILE_MODE = 0o644
PUBLIC_FOLDER_MODE = 0o755


def _read_umask() -> int:
    """The process's umask, without changing it where the system tells it
    (Linux: /proc/self/status); else by setting it and back, once at import,
    before a server starts its threads."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


UMASK = _read_umask()


def masked(mode: int) -> int:
    """``mode`` less what the umask forbids: what every file and folder gets."""
    return mode & ~UMASK


def make_folder(path: Path) -> None:
    """Create ``path`` and its missing parents as :data:`FOLDER_MODE` folders
    (mkdir applies the umask itself); an existing folder keeps its mode."""
    path = Path(path)
    if path.is_dir():
        return
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=FOLDER_MODE)
        except FileExistsError:
            if not folder.is_dir():
                raise


def make_public_folder(path: Path) -> None:
    """A folder of the public archive, and its missing parents (the web
    server must pass through them): :data:`PUBLIC_FOLDER_MODE` less the umask."""
    path = Path(path)
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=PUBLIC_FOLDER_MODE)
        except FileExistsError:
            if not folder.is_dir():
                raise


def write_public(path: Path, content: str) -> None:
    """:func:`atomic_write` for a file of the public archive: readable by the
    web server (:data:`PUBLIC_FILE_MODE` less the umask), whatever it was."""
    try:
        make_public_folder(Path(path).parent)
    except OSError as exc:
        raise StorageError(f"cannot write {Path(path).name}: {exc.strerror or exc}") from exc
    _replace(path, (content.encode("utf-8"),), PUBLIC_FILE_MODE, public=True)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some systems cannot open folders; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, content: str | Iterable[str], new_mode: int = FILE_MODE) -> None:
    """Replace ``path`` with ``content`` (a string, or lines each ending in \\n).

    The file keeps its permissions less any for others (so a group the owner
    shares with the web server keeps working, and a file written 0644 by an
    older version stops being world-readable); a new one gets ``new_mode``
    masked by the umask."""
    if isinstance(content, str):
        content = (content,)
    _replace(path, (chunk.encode("utf-8", "surrogateescape") for chunk in content), new_mode)


def atomic_write_bytes(path: Path, chunks: Iterable[bytes], new_mode: int = FILE_MODE) -> None:
    """:func:`atomic_write` for bytes: ``path`` replaced by the chunks, joined."""
    _replace(path, chunks, new_mode)


def _replace(path: Path, chunks: Iterable[bytes], new_mode: int, public: bool = False) -> None:
    path = Path(path)
    folder = path.parent
    tmp_name = None
    try:
        make_folder(folder)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb", buffering=1 << 16) as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(OSError):
            mode = path.stat().st_mode & 0o777 & ~NOBODY_ELSE if path.exists() and not public \
                else masked(new_mode)
            os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
        tmp_name = None
        _fsync_dir(folder)
    except OSError as exc:
        raise StorageError(f"cannot write {path.name}: {exc.strerror or exc}; the old file is kept") from exc
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


_COPY_BLOCK = 1 << 20  # bytes copied at a time by splice


class Spliced(NamedTuple):
    """What :func:`splice` wrote: the CRC-32 of the old file's first ``upto``
    bytes as it found them, of the new file's bytes that took their place
    (its first ``new_upto`` bytes), and of the new file's first ``mark``
    bytes for each mark asked for."""

    old_crc: int
    new_crc: int
    new_upto: int
    mark_crcs: list[int]


class _Running:
    """A CRC-32 of a stream's first ``limit`` bytes, noting it at each mark."""

    def __init__(self, limit: int, marks: list[int] | tuple = ()) -> None:
        self.limit, self.marks, self.crc, self.at = limit, list(marks), 0, 0
        self.found: list[int] = []

    def feed(self, data: bytes) -> None:
        import zlib

        view, start = memoryview(data), 0
        end = max(0, min(len(data), self.limit - self.at))
        while len(self.found) < len(self.marks) and self.marks[len(self.found)] - self.at <= end:
            cut = max(start, self.marks[len(self.found)] - self.at)
            self.crc = zlib.crc32(view[start:cut], self.crc)
            start = cut
            self.found.append(self.crc)
        self.crc = zlib.crc32(view[start:end], self.crc) if end > start else self.crc
        self.at += len(data)


def splice(path: Path, changes: Iterable[tuple[int, bytes, bytes]], upto: int = 0,
           marks: list[int] | tuple = ()) -> Spliced | None:
    """Rewrite ``path`` atomically with each ``(offset, old, new)`` applied — the
    bytes ``old`` found at ``offset`` replaced by ``new`` — and every other byte
    copied through as it is (a straight copy: hundreds of MB/s). The changes
    must not overlap and lie within the first ``upto`` bytes; ``marks`` are
    offsets of the new file (ascending, within its first ``new_upto`` bytes)
    where the CRC of what comes before is wanted. Returns None, and writes
    nothing, if any ``old`` is not where it is said to be (the file changed
    meanwhile). The caller holds the file's record lock."""
    changes = sorted(changes)
    try:
        source = open(path, "rb")
    except FileNotFoundError:
        return None
    with source:
        for offset, old, _ in changes:
            source.seek(offset)
            if source.read(len(old)) != old:
                return None
        new_upto = upto + sum(len(new) - len(old) for _, old, new in changes)
        before, after = _Running(upto), _Running(new_upto, marks)

        def copy(start: int, stop: int | None) -> Iterator[bytes]:
            source.seek(start)
            at = start
            while stop is None or at < stop:
                block = source.read(_COPY_BLOCK if stop is None else min(_COPY_BLOCK, stop - at))
                if not block:
                    return
                before.feed(block)
                after.feed(block)
                at += len(block)
                yield block

        def chunks() -> Iterator[bytes]:
            at = 0
            for offset, old, new in changes:
                yield from copy(at, offset)
                before.feed(old)
                after.feed(new)
                yield new
                at = offset + len(old)
            yield from copy(at, None)

        _replace(path, chunks(), FILE_MODE)
    return Spliced(before.crc, after.crc, new_upto, after.found)


def append_line(path: Path, line: str, sync: bool = True) -> None:
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

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._syncer: _Syncer | None = None
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        except OSError as exc:
            raise StorageError(f"cannot append to {self.path.name}: {exc.strerror or exc}") from exc

    def append(self, line: str, sync: bool = True) -> None:
        data = (line.rstrip("\n") + "\n").encode("utf-8")
        try:
            os.write(self._fd, data)
            if sync:
                os.fsync(self._fd)
        except OSError as exc:
            raise StorageError(f"cannot append to {self.path.name}: {exc.strerror or exc}") from exc

    def sync(self) -> None:
        """Put what was appended on disk."""
        try:
            os.fsync(self._fd)
        except OSError as exc:
            raise StorageError(f"cannot write {self.path.name}: {exc.strerror or exc}") from exc

    def sync_later(self) -> Callable[[], None]:
        """Start putting what was appended on disk, in a thread of its own.
        Returns the function that waits until it is there (and raises
        :class:`StorageError` if it could not be)."""
        if self._syncer is None:
            self._syncer = _Syncer(self._fd)
        return self._syncer.start_sync(self.path.name)

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


def read_lines(path: Path) -> Iterator[str]:
    """Stream a text file's lines without their line ends; a missing file is empty.

    A line ends at \\n, \\r\\n or \\r (what editors on any system write), never at
    U+2028, U+2029, U+0085, \\v, \\f or \\x1c-\\x1e, where ``str.splitlines`` would
    break it: a value holding one of those comes back whole (issue 9, item 13)."""
    try:
        # surrogateescape: a line that is not UTF-8 (an FTP upload in cp1251)
        # survives a rewrite byte for byte instead of turning into U+FFFD.
        handle = open(path, encoding="utf-8", errors="surrogateescape", newline="")
    except FileNotFoundError:
        return
    with handle:
        for line in handle:
            yield line.rstrip("\r\n")


def read_text(path: Path, default: str | None = None) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return default


def remove(path: Path) -> None:
    """Delete a file if it is there."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StorageError(f"cannot delete {Path(path).name}: {exc.strerror or exc}") from exc


_LOCKS: dict[str, filelock.FileLock] = {}  # imported on first use: a GET page takes no lock
# filelock chmods a lock file to the mode it is given, umask or not (and
# without one, older releases chose 0644); it insists on owner read and write.
_LOCK_MODE = masked(FILE_MODE) | 0o600


@contextlib.contextmanager
def record_lock(path: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold ``<path>.lock`` for one short read-modify-write of ``path``.

    Reentrant within a thread (one FileLock object per path, each thread with
    its own descriptor), exclusive across threads and processes.
    """
    import filelock  # ~16-30 ms of start-up, paid only by a process that locks

    lock_path = os.path.abspath(f"{path}.lock")
    try:
        lock = _LOCKS.get(lock_path)
        if lock is None:
            lock = _LOCKS.setdefault(lock_path, filelock.FileLock(
                lock_path, thread_local=True, mode=_LOCK_MODE))
        with lock.acquire(timeout=timeout):
            yield
    except filelock.Timeout:
        raise LockBusy(f"{Path(path).name} is being changed by another process; try again") from None
    except OSError as exc:
        raise StorageError(f"cannot lock {Path(path).name}: {exc.strerror or exc}; "
                           "check the folder's permissions and free space") from None


@contextlib.contextmanager
def quick_record_lock(path: str | Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """The same lock as :func:`record_lock` (``flock`` on ``<path>.lock``, which
    is what filelock takes on POSIX), without importing filelock: for the idle
    cron tick (:mod:`vykhukhol.idle`), whose whole cost is its imports. Not
    reentrant. Raises OSError when it cannot be had in ``timeout`` seconds."""
    import fcntl
    import time

    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, _LOCK_MODE)
    try:
        give_up = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > give_up:
                    raise
                time.sleep(0.01)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def drop_lock(path: Path) -> bool:
    """Delete ``<path>.lock`` unless someone holds it; True if it went.

    Only for a lock whose every critical section would now change nothing (the
    file it guards is gone for good, or what it guards is settled): a process
    that opened the lock file just before it went may still take it, on the
    deleted file, while the next one takes a new file. Two holders at once are
    harmless only then. A held lock is left for a later sweep."""
    lock_path = Path(f"{path}.lock")
    if not lock_path.exists():
        return False
    try:
        with record_lock(path, timeout=0):
            remove(lock_path)  # while we hold it: nobody is inside
    except (LockBusy, StorageError):
        return False
    return True


class Holder(NamedTuple):  # not a dataclass: the idle cron tick imports this module
    """Who holds a busy rename lock, as far as the lock file tells."""

    lease: str
    since: float  # epoch seconds


class RenameLock:
    """``<stem>.free`` ⇄ ``<stem>.busy`` in ``folder``.

    ``acquire`` raises :class:`LockBusy` when another run holds it and
    :class:`StorageError` when the rename fails for another reason.
    """

    def __init__(self, folder: Path, stem: str) -> None:
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
            # there for good now, so its lock file need not stay (issue 9, item 13).
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
        with contextlib.suppress(OSError):
            fd = os.open(self.busy, os.O_WRONLY | os.O_TRUNC)
            try:
                os.write(fd, lease.encode())
            finally:
                os.close(fd)
            os.utime(self.busy)

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


def remove_stale_temps(folder: Path, older_than: float) -> int:
    """Delete temporary files that a killed rewrite left in ``folder`` (named by
    :func:`atomic_write`: ``.<name>.<random>.tmp``) once older than ``older_than``
    seconds; a live rewrite's file is younger. Returns how many went."""
    import time

    gone = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        if entry.name.startswith(".") and entry.name.endswith(".tmp") and entry.is_file():
            try:
                if time.time() - entry.stat().st_mtime > older_than:
                    os.unlink(entry.path)
                    gone += 1
            except OSError:
                continue
    return gone


def rotate(path: Path, max_bytes: int, keep: int = 3) -> None:
    """Move ``path`` to ``path.1`` (and older ones along) once it passes ``max_bytes``."""
    try:
        if Path(path).stat().st_size < max_bytes:
            return
    except FileNotFoundError:
        return
    with record_lock(path):
        try:
            if Path(path).stat().st_size < max_bytes:
                return
            for index in range(keep - 1, 0, -1):
                older = Path(f"{path}.{index}")
                if older.exists():
                    os.replace(older, f"{path}.{index + 1}")
            os.replace(path, f"{path}.1")
        except OSError as exc:
            raise StorageError(f"cannot rotate {Path(path).name}: {exc.strerror or exc}") from exc


def open_private(path: Path) -> TextIO:
    """A new text file the user named outside data/ (an export of subscribers),
    opened for writing, :data:`FILE_MODE` less the umask. A file already there
    is never overwritten (FileExistsError): it may be the only copy of something."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    return os.fdopen(fd, "w", encoding="utf-8", newline="")


def program_problem(path: str) -> str | None:
    """Why ``path`` cannot be run as a program (it must be the absolute path of
    an executable file), or None."""
    if not os.path.isabs(path):
        return f"{path!r} is not an absolute path"
    if not os.path.isfile(path):
        return f"{path} is not a file"
    if not os.access(path, os.X_OK):
        return f"{path} is not executable"
    return None
