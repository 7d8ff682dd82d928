"""Postmark's Bounce and Spam Complaint webhooks (docs/deliverability/providers.md#provider-callbacks).

Postmark posts one JSON record per event (postmarkapp.com/developer/webhooks):
``RecordType`` ``Bounce`` with ``Type`` (``HardBounce``, ``SoftBounce``,
``Transient``, ``BadEmailAddress``, ``SpamComplaint``, …), ``ID``, ``Email``,
``Details``, ``Description`` and ``Metadata`` (what the letter's
``X-PM-Metadata-*`` headers set); ``RecordType`` ``SpamComplaint`` likewise.
Postmark signs nothing, and the key in the URL alone is no proof: it is in
every provider's URL. So, as the generic form asks for its signature, this
one asks for the HTTP basic auth the owner sets on the webhook
(``hooks.postmark_user``/``_password``), and is off (403) until both are set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vykhukhol.bounces.reading import events
from vykhukhol.bounces.reading.callbacks import CallbackRefused, basic_auth, json_body
from vykhukhol.bounces.reading.classify import Report

if TYPE_CHECKING:  # for the hints only: a callback loads them anyway, through the app
    from vykhukhol.datadir import DataDir
    from vykhukhol.settings import Settings


def read(body: bytes, environ: dict, settings: Settings, data: DataDir) -> list[Report]:
    user, password = settings["hooks.postmark_user"], settings["hooks.postmark_password"]
    if not user or not password:
        raise CallbackRefused(403, "hooks.postmark_user and hooks.postmark_password are not set: "
                                   "Postmark's callback is off")
    if not basic_auth(environ, user, password):
        raise CallbackRefused(401, "basic authentication failed")
    return events.postmark(json_body(body))
