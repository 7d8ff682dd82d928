"""Who may read what Vykhukhol writes (the modes of files and folders), the
folders themselves, and the reading and removing of data files.

Part of :mod:`vykhukhol.files`; import the names from there.
"""

from __future__ import annotations

import os

from vykhukhol.errors import StorageError

TYPE_CHECKING = False  # typing itself is not imported: a CGI page pays for every import
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import TextIO

# Who may read what Vykhukhol writes (docs/reference/data-files.md#data-files-modes). Every kind of file in data/ is
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
# The one exception: the public archive (archive/ beside cgi/, README section
# 19) is written for the web server to serve as static files, so it is
# readable by all — and holds nothing personal by construction.
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


def make_folder(path: str | os.PathLike, mode: int = FOLDER_MODE) -> None:
    """Create ``path`` and its missing parents as ``mode`` folders (mkdir
    applies the umask itself); an existing folder keeps its mode."""
    path = os.fspath(path)
    if os.path.isdir(path):
        return
    path = path.rstrip(os.sep) or os.sep  # "a/b/" is "a/b", whose parent is "a"
    missing = []
    while path and not os.path.exists(path) and path != os.path.dirname(path):
        missing.append(path)
        path = os.path.dirname(path)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, mode)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise


def read_lines(path: str | os.PathLike) -> Iterator[str]:
    """Stream a text file's lines without their line ends; a missing file is empty.

    A line ends at \\n, \\r\\n or \\r (what editors on any system write), never at
    U+2028, U+2029, U+0085, \\v, \\f or \\x1c-\\x1e, where ``str.splitlines`` would
    break it: a value holding one of those comes back whole."""
    try:
        # surrogateescape: a line that is not UTF-8 (an FTP upload in cp1251)
        # survives a rewrite byte for byte instead of turning into U+FFFD.
        handle = open(path, encoding="utf-8", errors="surrogateescape", newline="")
    except FileNotFoundError:
        return
    with handle:
        for line in handle:
            yield line.rstrip("\r\n")


def read_text(path: str | os.PathLike, default: str | None = None) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except FileNotFoundError:
        return default


def remove(path: str | os.PathLike) -> None:
    """Delete a file if it is there."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StorageError(f"cannot delete {os.path.basename(path)}: {exc.strerror or exc}") from exc


def open_private(path: str | os.PathLike) -> TextIO:
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
