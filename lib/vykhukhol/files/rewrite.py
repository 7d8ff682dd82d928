"""Atomic rewrites: a temporary file in the same folder, flushed, fsynced,
renamed over the old one, the folder fsynced; and ``splice``, such a rewrite
that changes a few byte ranges and copies the rest through.

Part of :mod:`vykhukhol.files`; import the names from there.
"""

from __future__ import annotations

import os

from vykhukhol.errors import StorageError
from vykhukhol.files.modes import (
    FILE_MODE,
    NOBODY_ELSE,
    PUBLIC_FILE_MODE,
    PUBLIC_FOLDER_MODE,
    make_folder,
    masked,
)

TYPE_CHECKING = False  # typing itself is not imported: a CGI page pays for every import
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

def _fsync_dir(folder: str) -> None:
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


def atomic_write(path: str | os.PathLike, content: str | Iterable[str], new_mode: int = FILE_MODE,
                 synced: bool = True) -> None:
    """Replace ``path`` with ``content`` (a string, or lines each ending in \\n).

    The file keeps its permissions less any for others (so a group the owner
    shares with the web server keeps working, and a file written 0644 by an
    older version stops being world-readable); a new one gets ``new_mode``
    masked by the umask. ``synced=False``: neither the file nor its folder is
    fsynced, for a file that may come back old or empty after a power cut
    (a rate counter, a cache checked against what it summarises); the rename
    is still atomic, so no reader ever sees half of it."""
    if isinstance(content, str):
        content = (content,)
    _replace(path, (chunk.encode("utf-8", "surrogateescape") for chunk in content), new_mode,
             synced=synced)


def atomic_write_bytes(path: str | os.PathLike, chunks: Iterable[bytes], new_mode: int = FILE_MODE) -> None:
    """:func:`atomic_write` for bytes: ``path`` replaced by the chunks, joined."""
    _replace(path, chunks, new_mode)


def make_public_folder(path: str | os.PathLike) -> None:
    """A folder of the public archive, and its missing parents (the web
    server must pass through them): :data:`PUBLIC_FOLDER_MODE` less the umask."""
    make_folder(path, PUBLIC_FOLDER_MODE)


def write_public(path: str | os.PathLike, content: str) -> None:
    """:func:`atomic_write` for a file of the public archive: readable by the
    web server (:data:`PUBLIC_FILE_MODE` less the umask), whatever it was."""
    try:
        make_public_folder(os.path.dirname(os.fspath(path)))
    except OSError as exc:
        raise StorageError(f"cannot write {os.path.basename(path)}: {exc.strerror or exc}") from exc
    _replace(path, (content.encode("utf-8"),), PUBLIC_FILE_MODE, public=True)


def _replace(path: str | os.PathLike, chunks: Iterable[bytes], new_mode: int,
             public: bool = False, synced: bool = True) -> None:
    path = os.fspath(path)
    folder, name = os.path.split(path)
    folder = folder or os.curdir
    tmp_name = None
    try:
        make_folder(folder)
        fd, tmp_name = _temporary(folder, name)
        with os.fdopen(fd, "wb", buffering=1 << 16) as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            if synced:
                os.fsync(out.fileno())
        try:
            try:
                mode = masked(new_mode) if public else os.stat(path).st_mode & 0o777 & ~NOBODY_ELSE
            except FileNotFoundError:
                mode = masked(new_mode)
            os.chmod(tmp_name, mode)
        except OSError:
            pass
        os.replace(tmp_name, path)
        tmp_name = None
        if synced:
            _fsync_dir(folder)
    except OSError as exc:
        raise StorageError(f"cannot write {name}: {exc.strerror or exc}; the old file is kept") from exc
    finally:
        if tmp_name is not None:
            try:
                os.unlink(tmp_name)
            except OSError:
                pass


_TEMP_FLAGS = (os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_CLOEXEC", 0))


def _temporary(folder: str, name: str) -> tuple[int, str]:
    """A new file ``.<name>.<random>.tmp`` in ``folder``, mode 0600 (what
    tempfile.mkstemp makes, without importing tempfile, shutil and random:
    ~5 ms of a CGI process); the name is what :func:`remove_stale_temps` sweeps."""
    for _ in range(100):
        tmp_name = os.path.join(folder, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp_name, _TEMP_FLAGS, 0o600), tmp_name
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name for {name}")


_COPY_BLOCK = 1 << 20  # bytes copied at a time by splice


class Spliced:
    """What :func:`splice` wrote: the CRC-32 of the old file's first ``upto``
    bytes as it found them, of the new file's bytes that took their place
    (its first ``new_upto`` bytes), and of the new file's first ``mark``
    bytes for each mark asked for. (A plain class: NamedTuple imports typing.)"""

    __slots__ = ("old_crc", "new_crc", "new_upto", "mark_crcs")

    def __init__(self, old_crc: int, new_crc: int, new_upto: int, mark_crcs: list[int]) -> None:
        self.old_crc, self.new_crc, self.new_upto, self.mark_crcs = old_crc, new_crc, new_upto, mark_crcs

    def __repr__(self) -> str:
        return (f"Spliced(old_crc={self.old_crc}, new_crc={self.new_crc}, "
                f"new_upto={self.new_upto}, mark_crcs={self.mark_crcs})")


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


def splice(path: str | os.PathLike, changes: Iterable[tuple[int, bytes, bytes]], upto: int = 0,
           marks: list[int] | tuple = ()) -> Spliced | None:
    """Rewrite ``path`` atomically with each ``(offset, old, new)`` applied — the
    bytes ``old`` found at ``offset`` replaced by ``new`` — and every other byte
    copied through as it is (a straight copy: hundreds of MB/s). The changes
    must not overlap and lie within the first ``upto`` bytes; ``marks`` are
    offsets of the new file (ascending, within its first ``new_upto`` bytes)
    where the CRC of what comes before is wanted. Returns None, and writes
    nothing, if any ``old`` is not where it is said to be (the file changed
    meanwhile). The caller holds the file's record lock.

    Changes close together are read, checked and written a stretch at a time
    (:func:`_stretches`): a run's 2,000 neighbouring lines cost two reads,
    not 4,000 seeks and reads."""
    changes = sorted(changes)
    stretches = list(_stretches(changes))
    try:
        source = open(path, "rb")
    except FileNotFoundError:
        return None
    with source:
        for stretch in stretches:
            held, start = _read_stretch(source, stretch), stretch[0][0]
            if not all(held.startswith(old, offset - start) for offset, old, _ in stretch):
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
            for stretch in stretches:
                start = stretch[0][0]
                yield from copy(at, start)
                held = _read_stretch(source, stretch)
                pieces: list[bytes] = []
                at = start
                for offset, old, new in stretch:
                    pieces += (held[at - start:offset - start], new)
                    at = offset + len(old)
                changed = b"".join(pieces)
                before.feed(held)
                after.feed(changed)
                yield changed
            yield from copy(at, None)

        _replace(path, chunks(), FILE_MODE)
    return Spliced(before.crc, after.crc, new_upto, after.found)


def _stretches(changes: list[tuple[int, bytes, bytes]]) -> Iterator[list[tuple[int, bytes, bytes]]]:
    """The sorted changes in stretches each read at once: a stretch ends
    where the next change would take it past :data:`_COPY_BLOCK` bytes."""
    stretch: list[tuple[int, bytes, bytes]] = []
    for change in changes:
        if stretch and change[0] + len(change[1]) - stretch[0][0] > _COPY_BLOCK:
            yield stretch
            stretch = []
        stretch.append(change)
    if stretch:
        yield stretch


def _read_stretch(source, stretch: list[tuple[int, bytes, bytes]]) -> bytes:
    """The old bytes from the stretch's first change to the end of its last."""
    start = stretch[0][0]
    source.seek(start)
    return source.read(stretch[-1][0] + len(stretch[-1][1]) - start)


def remove_stale_temps(folder: str | os.PathLike[str], older_than: float) -> int:
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
