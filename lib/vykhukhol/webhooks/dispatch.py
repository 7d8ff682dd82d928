"""Delivering the journal: at the end of each sender run, in a small share
of its time, every enabled endpoint gets its due retries and then the new
events it wants, one POST each (docs/using/webhooks.md#webhook-delivery).

An endpoint that fails stops for this run (the rest waits in the journal,
so a dead receiver costs one attempt a run, not one per event); an event
that failed goes on the endpoint's retry list with growing pauses, and is
given up after three days. An endpoint that has failed every delivery for
three days is disabled, with an alert. The journal is emptied once every
enabled endpoint has taken all of it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime, timezone

import vykhukhol.webhooks.endpoints as endpoints_mod
import vykhukhol.webhooks.progress as progress_mod
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, VykhukholError
from vykhukhol.files import events
from vykhukhol.watch.watched import Watched
from vykhukhol.webhooks.endpoints import Endpoint
from vykhukhol.webhooks.guards import resolve
from vykhukhol.webhooks.posting import Answer, post
from vykhukhol.webhooks.progress import GIVE_UP, Pending, Progress
from vykhukhol.webhooks.signing import headers

SHARE = 0.1          # of time_limit, for all deliveries of a run
POST_DEADLINE = 10.0  # seconds, one delivery from connect to its answer's last byte
LEAST = 0.5          # seconds: less left than this, no delivery is started
PER_RUN = 500        # events read from the journal per endpoint and run
TEST = "webhook.test"


def body_of(kind: str, moment: int, data_text: str) -> bytes:
    """The Standard Webhooks payload: type, timestamp, data."""
    data = json.loads(data_text)
    stamp = datetime.fromtimestamp(moment, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return json.dumps({"type": kind, "timestamp": stamp, "data": data},
                      ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def attempt(endpoint: Endpoint, event_id: str, moment: int, kind: str, data_text: str,
            deadline: float, debug: bool, now: int) -> Answer:
    """One signed POST of one event to one endpoint."""
    try:
        body = body_of(kind, moment, data_text)
    except ValueError:
        return Answer(None, "the event's data is damaged; not sent", 0)
    try:
        target = resolve(endpoint.url, endpoint.allow_private, debug)
    except BadInput as exc:
        return Answer(None, exc.message, 0)
    return post(target, body, headers(endpoint.secret, event_id, now, body), deadline)


class Summary:
    """What one delivery round did, for the run log."""

    def __init__(self) -> None:
        self.delivered = 0
        self.failed: list[str] = []
        self.given_up = 0
        self.disabled: list[str] = []

    def text(self) -> str:
        parts = [f"webhooks: {self.delivered} delivered"]
        if self.failed:
            parts.append(f"failed: {'; '.join(self.failed)}")
        if self.given_up:
            parts.append(f"{self.given_up} given up after three days")
        if self.disabled:
            parts.append(f"disabled: {', '.join(self.disabled)}")
        return ", ".join(parts)

    @property
    def anything(self) -> bool:
        return bool(self.delivered or self.failed or self.given_up or self.disabled)


class _Round:
    def __init__(self, data: DataDir, budget: float, debug: bool,
                 clock: Callable[[], float], wall: Callable[[], float]) -> None:
        self.data, self.debug, self.clock, self.wall = data, debug, clock, wall
        self.ends = clock() + budget
        self.summary = Summary()

    def left(self) -> float:
        return self.ends - self.clock()

    def send(self, endpoint: Endpoint, event_id: str, moment: int, kind: str, data_text: str,
             number: int) -> bool:
        now = int(self.wall())
        answer = attempt(endpoint, event_id, moment, kind, data_text,
                         min(POST_DEADLINE, self.left()), self.debug, now)
        progress_mod.log_delivery(self.data, endpoint.name, event_id, kind, number,
                                  answer.text(), answer.millis, now)
        if answer.ok:
            self.summary.delivered += 1
        else:
            self.summary.failed.append(f"{endpoint.name} {answer.text()}")
        return answer.ok

    def endpoint(self, endpoint: Endpoint, generation: str) -> Progress:
        progress = progress_mod.read_progress(self.data, endpoint.name, generation)
        retries = progress_mod.read_retries(self.data, endpoint.name)
        failed = succeeded = False
        kept: list[Pending] = []
        for pending in retries:
            now = int(self.wall())
            if failed or pending.next_at > now or self.left() < LEAST:
                kept.append(pending)
            elif self.send(endpoint, pending.id, pending.time, pending.type, pending.data,
                           pending.attempts + 1):
                succeeded = True
            else:
                failed = True
                later = pending.after_failure(now)
                if later is None:
                    self.summary.given_up += 1
                    progress_mod.log_delivery(self.data, endpoint.name, pending.id, pending.type,
                                              pending.attempts + 1, "given up", 0, now)
                else:
                    kept.append(later)
        if kept != retries:
            progress_mod.write_retries(self.data, endpoint.name, kept)
        path = self.data.webhooks / events.JOURNAL
        for offset, event_id, moment, kind, data_text in events.read(path, progress.offset, PER_RUN):
            if failed or self.left() < LEAST:
                break
            if endpoint.wants(kind):
                if self.send(endpoint, event_id, moment, kind, data_text, 1):
                    succeeded = True
                else:
                    failed = True
                    kept.append(progress_mod.first_failure(event_id, moment, kind, data_text,
                                                           int(self.wall())))
                    progress_mod.write_retries(self.data, endpoint.name, kept)
                progress.offset = offset
                progress_mod.write_progress(self.data, progress)
            else:
                progress.offset = offset
        if succeeded:
            progress.failing_since = 0
        elif failed and not progress.failing_since:
            progress.failing_since = int(self.wall())
        progress_mod.write_progress(self.data, progress)
        return progress


def deliver(data: DataDir, debug: bool, budget: float, clock: Callable[[], float] = time.monotonic,
            wall: Callable[[], float] = time.time) -> Summary:
    """One round over every enabled endpoint, in ``budget`` seconds at most."""
    found = endpoints_mod.load(data)
    run = _Round(data, budget, debug, clock, wall)
    generation = events.generation(data.root)
    offsets = []
    for endpoint in found:
        if not endpoint.enabled:
            continue
        progress = run.endpoint(endpoint, generation)
        offsets.append(progress.offset)
        if progress.failing_since and wall() - progress.failing_since >= GIVE_UP:
            endpoints_mod.change(data, endpoint.name, enabled=False)
            run.summary.disabled.append(endpoint.name)
    events.cut(data.root, lambda size: all(offset >= size for offset in offsets))
    return run.summary


def deliver_in_run(run: Watched, time_limit: float, elapsed: float) -> None:
    """The sender run's last step but the proofs: a round in
    :data:`SHARE` of ``time_limit`` (less when the run used more of its
    time), its summary in the run log, an alert per endpoint disabled."""
    from vykhukhol.watch import alerts

    if not events.wanted(run.data.root):
        return
    budget = min(time_limit * SHARE, time_limit * 0.95 - elapsed)
    if budget < LEAST:
        return
    try:
        summary = deliver(run.data, run.settings["mode"] != "working", budget)
    except VykhukholError as exc:
        run.log.error(f"webhooks not delivered: {exc.message}")
        return
    except OSError as exc:  # a journal or state file the disk refuses: the run's end goes on
        run.log.error(f"webhooks not delivered: {exc.strerror or exc}")
        return
    if summary.anything:
        (run.log.error if summary.failed else run.log.write)(summary.text())
    for name in summary.disabled:
        run.alert(alerts.WEBHOOK_OFF, name=name)


def next_due(data: DataDir) -> float | None:
    """When a delivery is due next (epoch seconds; 0: now), for the idle
    proof; None when nothing waits."""
    if not events.wanted(data.root):
        return None
    try:
        found = [e for e in endpoints_mod.load(data) if e.enabled]
    except BadInput:
        return 0
    generation = events.generation(data.root)
    size = events.whole_size(data.webhooks / events.JOURNAL)
    due: float | None = None
    for endpoint in found:
        if progress_mod.read_progress(data, endpoint.name, generation).offset < size:
            return 0
        for pending in progress_mod.read_retries(data, endpoint.name):
            due = pending.next_at if due is None else min(due, pending.next_at)
    return due


def send_test(data: DataDir, name: str, debug: bool) -> Answer:
    """A ``webhook.test`` event posted to one endpoint now, whether or not it
    is enabled; logged like any delivery."""
    endpoint = next((e for e in endpoints_mod.load(data) if e.name == name), None)
    if endpoint is None:
        raise BadInput(f"no webhook named {name!r}")
    now = int(time.time())
    event_id = events.new_id()
    answer = attempt(endpoint, event_id, now, TEST, events.encode({"endpoint": name}),
                     POST_DEADLINE, debug, now)
    progress_mod.log_delivery(data, name, event_id, TEST, 1, answer.text(), answer.millis, now)
    return answer
