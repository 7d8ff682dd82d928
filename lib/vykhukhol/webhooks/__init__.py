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
"""

from __future__ import annotations

from vykhukhol.webhooks.dispatch import deliver, next_due
from vykhukhol.webhooks.endpoints import Endpoint, add, load, remove

__all__ = ["Endpoint", "add", "deliver", "load", "next_due", "remove"]
