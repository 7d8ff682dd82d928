"""The rename locks at the sender's door (docs/design/run.md#run-steps, step 6,
and docs/design/run.md#run-killed) and the
admin's mode switch that clears a self-block.

:func:`take_lock` answers with a :class:`Taken`: the lock is ours, another
live run holds it (or the rename failed), or its holder died (the sender
blocks itself). :func:`release` answers with a :class:`Released`. Every lock
the sender uses is listed once, by :func:`all_locks`.
"""

from __future__ import annotations

import os
import time
from enum import Enum
from typing import TYPE_CHECKING

import vykhukhol.watch.alerts as alerts
import vykhukhol.watch.selfblock as selfblock
from vykhukhol import files, newsletters
from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import DataDir
from vykhukhol.errors import LockBusy, StorageError
from vykhukhol.states import Outcome
from vykhukhol.timeutil import format_duration

if TYPE_CHECKING:
    from vykhukhol.sender.runtime import Run


class Taken(Enum):
    """How taking a lock ended."""

    OURS = "ours"                # the run holds it now
    REFUSED = "refused"          # a live run holds it, or the rename failed (alerted)
    HOLDER_DIED = "holder died"  # a run holding it was killed: the sender blocked itself


class Released(Enum):
    """How giving a lock back ended."""

    FREE = "free"      # renamed back to free
    STUCK = "stuck"    # the rename failed (alerted): the run stops


def hostname() -> str:
    """This machine's name, as socket.gethostname() gives it (without importing socket)."""
    return os.uname().nodename


def all_locks(data: DataDir) -> list[files.RenameLock]:
    """Every lock the sender takes: the newsletters' and each DB's."""
    return [newsletters.lock(data)] + [svc.db_lock(data, db) for db in svc.list_dbs(data)]


def _lock_is_dead(lock: files.RenameLock, time_limit: int) -> tuple[bool, float]:
    """(did the holder die?, its age in seconds)."""
    holder = lock.holder()
    if holder is None:
        return False, 0.0
    age = time.time() - holder.since
    return age > time_limit or not _holder_alive(lock), age


def _holder_alive(lock: files.RenameLock) -> bool:
    """False only when the lock names a process of this host that is gone."""
    parts = (files.read_text(lock.busy, "") or "").strip().split("\t")
    if len(parts) < 3 or parts[2] != hostname():
        return True
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


def take_lock(run: Run, lock: files.RenameLock, what: str) -> Taken:
    """Steps 7 and 8 at the door: a dead holder blocks the sender (alerted),
    a live one is refused (alerted)."""
    lock.ensure()
    dead, age = _lock_is_dead(lock, run.time_limit)
    if dead:
        reason = (f"a run holding {what} died {format_duration(int(age))} after it started "
                  f"(time_limit is {format_duration(run.time_limit)})")
        selfblock.set_block(run.data, reason, format_duration(int(age)))
        run.log.error(f"blocked: {reason}")
        run.alert(alerts.DOWN_BY_HOSTER, time_limit=format_duration(run.time_limit),
                  age=format_duration(int(age)))
        run.stop(Outcome.BLOCKED)
        return Taken.HOLDER_DIED
    try:
        lock.acquire(f"{run.lease}\t{os.getpid()}\t{hostname()}")
    except LockBusy:
        run.alert(alerts.CANNOT_LAUNCH, detail=f"{what} is held by another run")
        run.stop(Outcome.BUSY, soft=True)
        return Taken.REFUSED
    except StorageError as exc:
        run.alert(alerts.CANNOT_LAUNCH, detail=exc.message)
        run.stop(Outcome.BUSY, soft=True)
        return Taken.REFUSED
    return Taken.OURS


def release(run: Run, lock: files.RenameLock, what: str) -> Released:
    """Step 6: rename the lock back to free; if that fails, alert and stop."""
    try:
        lock.release()
    except StorageError as exc:
        run.alert(alerts.CANNOT_TERMINATE, detail=exc.message)
        run.stop(Outcome.BUSY)
        return Released.STUCK
    return Released.FREE


def set_mode(data: DataDir, settings_path, mode: str) -> list[str]:
    """Switch the mode; switching to working clears a self-block and the stale
    locks (docs/design/run.md#run-killed). Returns what was cleared, for the user to read."""
    current = settings_mod.load(settings_path)
    cleared = []
    if mode == "working":
        if selfblock.clear_block(data):
            cleared.append("the self-block")
        limit = current["time_limit"]
        for lock in all_locks(data):
            if _lock_is_dead(lock, limit)[0] and lock.force_free():
                cleared.append(f"the stale lock {lock.busy.relative_to(data.root)}")
    settings_mod.update(settings_path, {"mode": mode})
    return cleared
