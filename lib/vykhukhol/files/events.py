"""The events journal: what happened to the list, one line each, for the
webhooks that want to hear of it (docs/using/webhooks.md#webhook-events).

``data/webhooks/events.log`` holds one event a line, tab-separated::

    id <TAB> unix time <TAB> type <TAB> data (a JSON object)

A line is appended with one write, so a kill leaves whole lines and at most a
torn last one (which the reader skips). Nothing is written while no webhook is
configured (no ``data/webhooks/endpoints.ini``): a site without webhooks pays
one ``stat`` per event. The sender delivers the journal
(:mod:`vykhukhol.webhooks`) and empties it once every endpoint has taken all
of it.

Part of :mod:`vykhukhol.files`, apart from its face: the public pages emit
events, so only ``os`` and ``time`` are imported here (no json: a flat
object of strings and whole numbers is written by hand).
"""

from __future__ import annotations

import os
import time

from vykhukhol.errors import StorageError
from vykhukhol.files.modes import FILE_MODE

TYPE_CHECKING = False  # the public pages emit events: typing is not imported
if TYPE_CHECKING:
    from collections.abc import Iterator

FOLDER = "webhooks"
JOURNAL = "events.log"
ENDPOINTS = "endpoints.ini"

def _(text: str) -> str:
    """Marks a text for the catalog (tools/i18n.py extract); the admin translates it."""
    return text


#: The events a webhook may ask for, each with what it means (the manual's table).
TYPES = {
    "subscriber.subscribed": _("someone asked to join a service (double opt-in: not yet confirmed)"),
    "subscriber.confirmed": _("a subscriber confirmed and is on the list"),
    "subscriber.unsubscribed": _("a subscriber left a service"),
    "subscriber.removed": _("bounces removed an address (it does not exist, or failed too often)"),
    "subscriber.complained": _("a subscriber marked a letter as spam"),
    "suppression.added": _("an address was added to the suppression list"),
    "newsletter.finished": _("a newsletter reached all its recipients"),
    "brake.applied": _("complaints or dead addresses braked a service or a newsletter"),
}

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _json_string(text: str) -> str:
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char < " " or "\u2028" <= char <= "\u2029" or "\ud800" <= char <= "\udfff":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def encode(data: dict[str, object]) -> str:
    """A flat JSON object of strings, whole numbers and booleans, on one line."""
    parts = []
    for key, value in data.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int):
            text = str(value)
        elif value is None:
            text = "null"
        else:
            text = _json_string(str(value))
        parts.append(f"{_json_string(key)}:{text}")
    return "{" + ",".join(parts) + "}"


def wanted(root: str | os.PathLike[str]) -> bool:
    """Whether any webhook is configured, so that events are worth writing."""
    return os.path.exists(os.path.join(root, FOLDER, ENDPOINTS))


def new_id(moment: float | None = None) -> str:
    """A unique id that sorts by time: ``msg_`` and 28 hex digits."""
    millis = int((time.time() if moment is None else moment) * 1000)
    return f"msg_{millis:012x}{os.urandom(8).hex()}"


def emit(root: str | os.PathLike[str], kind: str, data: dict[str, object],
         moment: float | None = None) -> str | None:
    """Journal one event of ``kind`` (one of :data:`TYPES`) for the webhooks;
    its id, or None when no webhook is configured. The caller's work is done
    already: a journal that cannot be written raises StorageError, which a
    caller that must not fail for it catches."""
    if kind not in TYPES:
        raise ValueError(f"no event type {kind!r}")
    if not wanted(root):
        return None
    moment = time.time() if moment is None else moment
    event_id = new_id(moment)
    line = f"{event_id}\t{int(moment)}\t{kind}\t{encode(data)}\n".encode("utf-8", "replace")
    _append(os.path.join(root, FOLDER, JOURNAL), line)
    return event_id


def _append(path: str, line: bytes) -> None:
    """One write under a shared lock, so that :func:`cut` (the exclusive
    lock) never empties the journal between an append's open and its write."""
    import fcntl

    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StorageError(f"cannot append to {JOURNAL}: {exc.strerror or exc}") from exc


def whole_size(path: str | os.PathLike[str]) -> int:
    """The journal's size up to the end of its last whole line: a torn tail
    (a write cut by a full disk) is never waited for."""
    try:
        with open(path, "rb") as file:
            size = file.seek(0, os.SEEK_END)
            start = max(0, size - 65536)
            file.seek(start)
            tail = file.read()
    except FileNotFoundError:
        return 0
    end = tail.rfind(b"\n")
    return start + end + 1 if end >= 0 else (0 if start == 0 else start)


def generation(root: str | os.PathLike[str]) -> str:
    """Which filling of the journal offsets count in: a new one after each :func:`cut`."""
    try:
        with open(os.path.join(root, FOLDER, "generation"), encoding="utf-8") as file:
            text = file.read().strip()
    except FileNotFoundError:
        return "0"
    except (OSError, UnicodeDecodeError) as exc:
        raise StorageError(f"cannot read the webhooks' generation: {exc}") from exc
    return text if text.isdigit() and len(text) < 20 else "0"  # a hand-damaged one starts again


def cut(root: str | os.PathLike[str], caught_up) -> bool:
    """Empty the journal when ``caught_up(size)`` says every endpoint has
    taken all of it; True when it was emptied. The generation changes
    first: a kill between the two costs a second delivery of the old
    events (same ids), never a lost one."""
    import fcntl

    from vykhukhol.files.rewrite import atomic_write

    path = os.path.join(root, FOLDER, JOURNAL)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if not size or not caught_up(whole_size(path)):
            return False
        atomic_write(os.path.join(root, FOLDER, "generation"), f"{int(generation(root)) + 1}\n")
        os.ftruncate(fd, 0)
        os.fsync(fd)
        return True
    except OSError as exc:
        raise StorageError(f"cannot empty {JOURNAL}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def emit_quietly(root: str | os.PathLike[str], kind: str, data: dict[str, object]) -> None:
    """:func:`emit` for callers whose own work must not fail for a webhook: a
    journal that cannot be written loses this event, nothing else."""
    try:
        emit(root, kind, data)
    except StorageError:
        pass


def read(path: str | os.PathLike[str], offset: int = 0,
         limit: int = 1000) -> Iterator[tuple[int, str, int, str, str]]:
    """The journal's whole lines from ``offset``: (offset after the line, id,
    time, type, data as JSON text), at most ``limit`` of them. A damaged line
    is passed over; a torn last line (no newline yet) is left for later."""
    try:
        with open(path, "rb") as file:
            file.seek(offset)
            count = 0
            for raw in file:
                if not raw.endswith(b"\n"):
                    return
                offset += len(raw)
                fields = raw.decode("utf-8", "replace").rstrip("\n").split("\t")
                if len(fields) != 4 or not fields[1].isdigit() or fields[2] not in TYPES:
                    continue
                yield offset, fields[0], int(fields[1]), fields[2], fields[3]
                count += 1
                if count >= limit:
                    return
    except FileNotFoundError:
        return
