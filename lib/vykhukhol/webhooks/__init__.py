"""Webhooks out: the list tells the rest of the site what happened to it
(docs/using/webhooks.md#webhooks).

Events are journalled as they happen (:mod:`vykhukhol.files.events`, cheap
enough for the public pages); the sender's run delivers them at its end, in
a small share of ``time_limit`` (:func:`~.dispatch.deliver`), so no daemon
is needed and no letter waits for a slow receiver. Each delivery is signed
as the Standard Webhooks specification says (:mod:`.signing`), posted only
to a public https address unless the owner allowed otherwise
(:mod:`.guards`, :mod:`.posting`), and retried with growing pauses over
later runs for three days (:mod:`.progress`). The endpoints live in
``data/webhooks/endpoints.ini`` (:mod:`.endpoints`).

The face holds the two calls the run makes at every end; while no webhook
exists they cost one ``stat`` and load nothing of this package's machinery
(ssl and http.client alone are ~30 ms a run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vykhukhol.files import events

if TYPE_CHECKING:
    from vykhukhol.datadir import DataDir
    from vykhukhol.watch.watched import Watched


def deliver_in_run(run: Watched, time_limit: float, elapsed: float) -> None:
    """The run's deliveries (:func:`.dispatch.deliver_in_run`), when a webhook exists."""
    if events.wanted(run.data.root):
        from vykhukhol.webhooks.dispatch import deliver_in_run as deliver  # only with webhooks

        deliver(run, time_limit, elapsed)


def next_due(data: DataDir) -> float | None:
    """When a delivery is due next, for the idle proof (:func:`.dispatch.next_due`)."""
    if not events.wanted(data.root):
        return None
    from vykhukhol.webhooks.dispatch import next_due as due  # only with webhooks

    return due(data)
