"""Atomic rewrites, record locks, append-only journals and the rename lock.

This is the only module that writes data files. Everything else asks it to:

* ``atomic_write(path, lines)`` — write a temporary file in the same folder,
  flush, fsync, ``os.replace``, fsync the folder. A crash at any point leaves
  either the old or the new file; a full disk or a permission error leaves the
  old file and raises :class:`StorageError`. ``atomic_write_bytes`` is the
  same for bytes; ``splice`` is such a rewrite that changes a few byte ranges
  and copies the rest of the old file through as it is.
* ``record_lock(path)`` — a short ``flock`` on ``<path>.lock`` around one
  read-modify-write (reentrant within a thread), so a CGI writer and the
  sender never lose each other's changes.
* ``append_line(path, line)`` — one line added to a journal and fsynced;
  ``AppendFile`` keeps a journal open for many lines.
* :class:`RenameLock` — the original's ``db.free``/``db.busy`` lock: taken by
  renaming free → busy (atomic on every file system a hoster offers), released
  by renaming back. It is held for a whole run; its age tells a dead run.
* ``make_folder(path)`` — a folder (and its missing parents) for data files.
* ``write_public(path, text)`` — an atomic rewrite of a file of the public
  archive, the one kind of file written for the web server to read.

Who may read them is decided here, once (see :data:`FILE_MODE`).

Its face deliberately knows nothing of what the files contain. It is a
package of four modules by idea: ``modes`` (who may read, folders, reading,
removing), ``rewrite`` (atomic rewrites and splice), ``journal`` (appends)
and ``locks`` (record and rename locks), whose public names are all here:
import them from ``vykhukhol.files``. None of them imports tempfile, shutil,
pathlib (but the rename lock), typing, contextlib or collections: the idle
cron tick and the public pages load this package, inside the start-up
boundary (docs/design/startup.md#startup-boundary). Beside them, three formats that fast paths need
without a heavier package's face, imported by their own names: ``kv``
(key-value state files), ``clicklinks`` (a counted letter's links and
clicks, for cgi/go.py) and ``runlog`` (the run log, written by the sender
and the idle tick, read by the pages, the watchers and the bounces).
"""

from vykhukhol.files.appends import AppendFile, append_line
from vykhukhol.files.locks import (
    LOCK_TIMEOUT,
    Holder,
    RenameLock,
    drop_lock,
    quick_record_lock,
    record_lock,
    rotate,
)
from vykhukhol.files.modes import (
    FILE_MODE,
    FOLDER_MODE,
    NOBODY_ELSE,
    PUBLIC_FILE_MODE,
    PUBLIC_FOLDER_MODE,
    UMASK,
    make_folder,
    masked,
    open_private,
    program_problem,
    read_lines,
    read_text,
    remove,
)
from vykhukhol.files.rewrite import (
    Spliced,
    atomic_write,
    atomic_write_bytes,
    make_public_folder,
    remove_stale_temps,
    splice,
    write_public,
)

__all__ = [
    "FILE_MODE", "FOLDER_MODE", "LOCK_TIMEOUT", "NOBODY_ELSE", "PUBLIC_FILE_MODE",
    "PUBLIC_FOLDER_MODE", "UMASK", "AppendFile", "Holder", "RenameLock", "Spliced", "append_line",
    "atomic_write", "atomic_write_bytes", "drop_lock", "make_folder", "make_public_folder",
    "masked", "open_private", "program_problem", "quick_record_lock", "read_lines", "read_text",
    "record_lock", "remove", "remove_stale_temps", "rotate", "splice", "write_public",
]
