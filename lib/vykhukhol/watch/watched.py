"""What a watcher sees of the run it watches: the few parts the brakes and
the refusal alert ask of it, so that no watcher imports the sender
(:class:`vykhukhol.sender.runtime.Run` has them all). Figures that only one
helper needs (the letters a run sent, its refusals) are passed to it as values.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from vykhukhol.datadir import DataDir
from vykhukhol.files.runlog import RunLog
from vykhukhol.settings import Settings


class Watched(Protocol):
    """A run as its watchers see it: where it works, with which settings, its
    clock and log, and its way to alert the admin."""

    data: DataDir
    settings: Settings
    log: RunLog
    now: Callable[[], datetime]

    def alert(self, subject: str, **details: str) -> None: ...
