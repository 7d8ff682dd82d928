"""One ``vykhukhol serve`` per data directory, and a port change it undoes
when it exits.

A second ``serve`` on the same data used to rewrite the first one's
``site_url`` to its own port and leave it there, so letters of the first
carried dead links. Now ``serve`` holds ``data/state/serve.lock`` (flock,
released by the kernel when the process ends however it ends) for as long
as it runs, and a second one refuses before it binds a port or changes
anything, naming the one that holds it (``data/state/serving``: pid and
address). A local data directory's ``site_url`` still follows the port it is
served on (demo.follow_port); the value it had is put back when that
``serve`` exits, unless someone changed it meanwhile. A ``serve`` killed
with ``kill -9`` cannot put it back: the next ``serve`` sets it to its own
port again, and only a ``serve`` that runs ever moves it.

It does not stop ``vykhukhol cron`` or CGI from using the data meanwhile:
they take their own locks.
"""

from __future__ import annotations

import contextlib
import os

from vykhukhol import files
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import DataDir
from vykhukhol.errors import LockBusy, VykhukholError


class Claim:
    """This process's hold on the data directory while it serves it."""

    def __init__(self, data: DataDir) -> None:
        self.data = data
        self._stack = contextlib.ExitStack()
        self.previous_url: str | None = None  # site_url before follow_port moved it
        self.moved_to: str | None = None

    def note(self, url: str) -> None:
        """Say who serves the data (for the message a second serve prints)."""
        files.atomic_write(self.data.state / "serving", f"pid {os.getpid()} {url}\n")

    def followed(self, previous: str, moved_to: str | None) -> None:
        """Remember a port change to undo at exit."""
        self.previous_url, self.moved_to = previous, moved_to

    def release(self) -> None:
        """Put site_url back (if it is still ours to put back) and free the lock."""
        try:
            if self.moved_to and self.previous_url:
                current = settings_mod.load(self.data.settings)["site_url"]
                if current.rstrip("/") == self.moved_to.rstrip("/"):
                    settings_mod.update(self.data.settings, {"site_url": self.previous_url})
            files.remove(self.data.state / "serving")
        finally:
            self._stack.close()


def claim(data: DataDir) -> Claim:
    """Hold the data directory for this ``serve``, or refuse (:class:`VykhukholError`)
    when another ``serve`` holds it."""
    held = Claim(data)
    try:
        held._stack.enter_context(files.record_lock(data.state / "serve", timeout=0))
    except LockBusy:
        who = (files.read_text(data.state / "serving", "") or "").strip()
        raise VykhukholError(
            f"another `vykhukhol serve` is serving {data.root} ({who or 'its pid unknown'}); "
            "nothing was changed: stop it first, or give this one another --data") from None
    return held
