"""Several SMTP connections at once, for a relay: each a *lane*, a thread of
its own holding one :class:`~.smtp.SmtpTransport` and one letter at a time.

A relay or an ESP costs a network round trip per command; one connection
then caps a run at a few dozen letters a second, however fast the rest is.
:class:`Lanes` lets the run's own thread go on making letters while up to
``smtp_connections`` of them are on their way.

What it deliberately does not do: journals, quotas, caps and the clock stay
with the caller's thread (:class:`vykhukhol.sender.runtime.Run`), which asks
:meth:`Lanes.wait_free` before it writes a letter's intent and
:meth:`Lanes.hand` only after that intent is on disk. A lane counts as busy
until its outcome has been taken by :meth:`Lanes.finished`, so no more than
``count`` letters are ever between intent and outcome: a ``kill -9`` leaves
at most one letter in doubt per connection. The threads only talk to their
server (socket waits let go of the GIL), so the letter-making thread keeps
its speed.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

from vykhukhol.mail.config import MailConfig
from vykhukhol.mail.dkim import signer_for
from vykhukhol.mail.message import Outgoing
from vykhukhol.mail.signing import SigningProcess
from vykhukhol.mail.smtp import SmtpTransport
from vykhukhol.mail.transport import Transport


@dataclass
class Finished:
    """One letter's end: ``error`` is None when the server took it, else what
    :meth:`Transport.send` raised (a :class:`DeliveryError` as a rule)."""

    tag: Any                 # the caller's note of which letter this was
    error: BaseException | None
    seconds: float           # how long the hand-over took


class _Lane:
    def __init__(self, lanes: Lanes, number: int) -> None:
        self.transport = lanes.opener(lanes.config)
        if lanes.signing is not None:
            self.transport.use_signer(lanes.signing)
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self._done = lanes._done
        self.thread = threading.Thread(target=self._loop, name=f"smtp-lane-{number}", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            work = self.inbox.get()
            if work is None:
                self.transport.close()
                return
            msg, recipient, deadline, tag = work
            began = time.monotonic()
            error: BaseException | None = None
            try:
                self.transport.set_deadline(deadline)
                self.transport.send(msg, recipient)
            except BaseException as exc:  # noqa: BLE001 - handed back, raised by the caller
                error = exc
            self._done.put((self, Finished(tag, error, time.monotonic() - began)))


def _cores() -> int:
    """The cores this process may run on (a helper on the only one gains nothing)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Lanes:
    """Up to ``count`` SMTP connections, opened as they are first needed."""

    def __init__(self, config: MailConfig, count: int,
                 opener: Callable[[MailConfig], Transport] | None = None) -> None:
        self.config = config
        self.count = max(1, count)
        self.opener = opener or SmtpTransport
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._lanes: list[_Lane] = []
        self._idle: list[_Lane] = []
        self.in_flight = 0
        self.signing: SigningProcess | None = None  # DKIM on another core, see prepare

    def prepare(self) -> None:
        """What :meth:`Transport.prepare` does, once for every lane (the key
        checked here, in the caller's thread); with signing on and more than
        one lane, the letters are then signed by a :class:`.signing.SigningProcess`
        on another core while the lanes wait for their servers, so the
        letter-making thread never signs."""
        self.opener(self.config).prepare()
        if self.config.dkim_domain and self.count > 1 and self.signing is None \
                and _cores() > 1:
            assert self.config.dkim_key is not None  # prepare() refused a missing one
            here = signer_for(self.config.dkim_domain, self.config.dkim_selector,
                              self.config.dkim_key)  # made by prepare(): signs until it starts
            self.signing = SigningProcess(self.config.dkim_domain, self.config.dkim_selector,
                                          self.config.dkim_key, meanwhile=here)
            for lane in self._lanes:
                lane.transport.use_signer(self.signing)

    def finished(self, block: bool = False) -> list[Finished]:
        """The letters whose lanes are done, each lane free again once taken;
        with ``block``, waits for at least one (when any is on its way)."""
        out: list[Finished] = []
        while self.in_flight:
            try:
                lane, end = self._done.get(block=block and not out)
            except queue.Empty:
                break
            self._idle.append(lane)
            self.in_flight -= 1
            out.append(end)
        return out

    def has_free(self) -> bool:
        return bool(self._idle) or len(self._lanes) < self.count

    def wait_free(self) -> list[Finished]:
        """Wait until a lane is free; returns the letters finished meanwhile."""
        out = self.finished()
        while not self.has_free():
            out += self.finished(block=True)
        return out

    def hand(self, msg: EmailMessage | Outgoing, recipient: str, deadline: float | None,
             tag: Any) -> None:
        """Give a letter to a free lane (:meth:`wait_free` first); its end comes
        back from :meth:`finished` with ``tag``."""
        if self._idle:
            lane = self._idle.pop()
        else:
            lane = _Lane(self, len(self._lanes) + 1)
            self._lanes.append(lane)
        self.in_flight += 1
        lane.inbox.put((msg, recipient, deadline, tag))

    def close(self) -> list[Finished]:
        """Wait for the letters on their way, hang up every connection; returns
        those letters' ends."""
        out: list[Finished] = []
        while self.in_flight:
            out += self.finished(block=True)
        for lane in self._lanes:
            lane.inbox.put(None)
        for lane in self._lanes:
            lane.thread.join()
        self._lanes, self._idle = [], []
        if self.signing is not None:
            signing, self.signing = self.signing, None
            signing.close()
        return out
