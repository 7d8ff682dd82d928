"""The short steps of docs/design/run.md#run-steps: the mode (step 1), the bounce mailbox, the
choice of a service (step 3).

A step that ends the run raises :class:`~vykhukhol.sender.runtime.RunEnds`,
as every step does.
"""

from __future__ import annotations

import vykhukhol.watch.alerts as alerts
import vykhukhol.watch.brakes as brakes
import vykhukhol.watch.selfblock as selfblock
from vykhukhol import services as svc
from vykhukhol.bounces import sources
from vykhukhol.sender.runtime import Run, RunEnds
from vykhukhol.sender.serial import in_window
from vykhukhol.states import Outcome
from vykhukhol.timeutil import format_duration


def check_mode(run: Run) -> None:
    """Step 1: in debug mode, or while blocked, nothing is sent."""
    if run.settings["mode"] != "working":
        run.alert(alerts.SCRIPT_OFF)
        run.stop(Outcome.OFF)
        raise RunEnds
    reason = selfblock.block_reason(run.data)
    if reason is not None:
        run.log.write(f"blocked since a run died: {reason}")
        run.alert(alerts.DOWN_BY_HOSTER, time_limit=format_duration(run.time_limit),
                  age=selfblock.block_age(run.data))
        run.stop(Outcome.BLOCKED)
        raise RunEnds


def read_bounces(run: Run) -> None:
    """The bounce mailbox, read and applied in the first quarter of time_limit.
    A mailbox that is down costs a log line, never the sending."""
    if not run.settings["mail.bounce_mailbox"]:
        return
    budget = run.time_limit * sources.SHARE - run.elapsed()
    summary = sources.read_mailbox(run.data, run.settings, budget, run.clock)
    if summary.read or summary.repeated or summary.problem:
        (run.log.error if summary.problem else run.log.write)(summary.text())


def choose_service(run: Run) -> svc.Service:
    """Step 3: the enabled service served longest ago (never served: first)."""
    enabled = [s for s in svc.load_services(run.data) if s.enabled]
    if not enabled:
        run.alert(alerts.ALL_OFF)
        raise RunEnds
    held = brakes.Brakes(run)
    enabled = [s for s in enabled if not held.holds(brakes.SERVICE, s.name)]
    if not enabled:
        run.log.write("every enabled service is braked")
        raise RunEnds
    queue = in_window(run, enabled)
    if not queue:
        run.log.write("no enabled service is inside its send window now")
        raise RunEnds
    return queue[0]
