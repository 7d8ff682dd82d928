"""SendGrid's Event Webhook (docs/deliverability/providers.md#provider-callbacks).

SendGrid posts a JSON array of events (twilio.com/docs/sendgrid, "Event
Webhook Reference"), each with ``email``, ``event``, ``sg_event_id`` (the
event's id), ``reason``/``status`` and, for ``bounce``, ``type``
(``bounce`` or ``blocked``); custom arguments of the letter appear as fields
of their own (``vykhukhol_tag``). Events: ``bounce`` (type ``bounce``:
permanent; ``blocked``: temporary), ``dropped`` (by its reason), ``spamreport``
(a complaint), ``unsubscribe``/``group_unsubscribe``; others do nothing.

The proof: the key in the URL and, with ``hooks.sendgrid_public_key`` set
(the Signed Event Webhook's verification key, base64 DER), the ECDSA
P-256/SHA-256 signature in ``X-Twilio-Email-Event-Webhook-Signature`` over the
``X-Twilio-Email-Event-Webhook-Timestamp`` header followed by the raw body.
"""

from __future__ import annotations

import base64
import binascii
import time
from typing import TYPE_CHECKING

from vykhukhol.bounces.reading import events
from vykhukhol.bounces.reading.callbacks import CallbackRefused, json_body
from vykhukhol.bounces.reading.classify import Report
from vykhukhol.settings.keys import p256_key

if TYPE_CHECKING:  # for the hints only: a callback loads them anyway, through the app
    from vykhukhol.datadir import DataDir
    from vykhukhol.settings import Settings

MAX_AGE = 900  # seconds between SendGrid's signing and our check, either way


def read(body: bytes, environ: dict, settings: Settings, data: DataDir, clock=time.time) -> list[Report]:
    public_key = settings["hooks.sendgrid_public_key"]
    if not public_key and settings.raw.get("hooks.sendgrid_public_key", "").strip():
        # A key settings.ini holds but that is no P-256 key reads as the empty
        # default: refused, never taken as "no signature to check".
        raise CallbackRefused(403, "hooks.sendgrid_public_key is not an ECDSA P-256 public key")
    if public_key:
        verify(public_key, environ.get("HTTP_X_TWILIO_EMAIL_EVENT_WEBHOOK_SIGNATURE", ""),
               environ.get("HTTP_X_TWILIO_EMAIL_EVENT_WEBHOOK_TIMESTAMP", ""), body, clock())
    return events.sendgrid(json_body(body))


def verify(public_key: str, signature: str, stamp: str, body: bytes, now: float) -> None:
    """CallbackRefused 403 unless ``signature`` is SendGrid's over ``stamp`` + ``body``."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    if not signature or not stamp.strip().isdigit():
        raise CallbackRefused(403, "no Signed Event Webhook signature")
    if abs(now - int(stamp)) > MAX_AGE:
        raise CallbackRefused(403, f"the signature's timestamp is more than {MAX_AGE} seconds away from now")

    key = p256_key(public_key)  # settings refuse any other; settings.ini edited by hand may not
    if key is None:
        raise CallbackRefused(403, "hooks.sendgrid_public_key is not an ECDSA P-256 public key")
    try:
        key.verify(base64.b64decode(signature, validate=True), stamp.encode() + body,
                   ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, binascii.Error, ValueError):
        raise CallbackRefused(403, "the signature does not verify") from None
