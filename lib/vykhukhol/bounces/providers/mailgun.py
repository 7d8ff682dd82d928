"""Mailgun's webhooks, JSON form (docs/deliverability/providers.md#provider-callbacks).

Mailgun posts ``{"signature": {"timestamp", "token", "signature"},
"event-data": {...}}`` (documentation.mailgun.com, "Securing Webhooks" and
the event structure). The proof: ``signature`` is the hex HMAC-SHA256 of
``timestamp`` followed by ``token``, keyed with the domain's HTTP webhook
signing key (``hooks.mailgun_signing_key``); a timestamp more than
:data:`MAX_AGE` seconds away from now is refused, so a captured request
cannot be played again later. The signature covers only timestamp and
token, not the event, so each token is remembered for that window
(``data/state/mailgun-tokens``: a hash of the token and of the event it came
with): the same token with another event is refused, while Mailgun's own
retry of the same request (same token, same event) still goes through, and
the journal applies it once. Events: ``failed`` with ``severity``
``permanent`` or ``temporary``, ``complained``, ``unsubscribed``; others are
answered 200 and do nothing. ``event-data.id`` is the event's id.

Our tag is read from the envelope sender Mailgun reports
(``envelope.sender``), from ``user-variables`` (``vykhukhol-tag``), or
from the letter's ``X-Vykhukhol-Tag`` header where Mailgun returns it.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import TYPE_CHECKING

from vykhukhol.bounces.reading import events
from vykhukhol.bounces.reading.callbacks import CallbackRefused, json_body, text
from vykhukhol.bounces.reading.classify import Report
from vykhukhol.files.kv import change_kv

if TYPE_CHECKING:  # for the hints only: a callback loads them anyway, through the app
    from vykhukhol.datadir import DataDir
    from vykhukhol.settings import Settings

MAX_AGE = 900  # seconds between Mailgun's signing and our check, either way
TOKENS = "mailgun-tokens"  # in data/state/: the tokens of the last 2 × MAX_AGE seconds


def read(body: bytes, environ: dict, settings: Settings, data: DataDir, clock=time.time) -> list[Report]:
    key = settings["hooks.mailgun_signing_key"]
    if not key:
        raise CallbackRefused(403, "hooks.mailgun_signing_key is not set: Mailgun's callbacks cannot be checked")
    found = json_body(body)
    if not isinstance(found, dict):
        raise CallbackRefused(400, "expected a Mailgun webhook body (a JSON object)")
    signed = found.get("signature")
    if not isinstance(signed, dict):
        raise CallbackRefused(403, "no signature")
    stamp, token, signature = (text(signed.get(k), 200) for k in ("timestamp", "token", "signature"))
    if not stamp.isdigit() or not token or not signature:
        raise CallbackRefused(403, "the signature is incomplete")
    expected = hmac.new(key.encode(), (stamp + token).encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), signature.lower().encode()):
        raise CallbackRefused(403, "the signature does not verify")
    if abs(clock() - int(stamp)) > MAX_AGE:
        raise CallbackRefused(403, f"the signature's timestamp is more than {MAX_AGE} seconds away from now")
    event = found.get("event-data")
    if not isinstance(event, dict):
        raise CallbackRefused(400, "no event-data")
    _remember(data, token, event, int(stamp), clock())
    return events.mailgun(event, token)


def _remember(data: DataDir, token: str, event: dict, stamp: int, moment: float) -> None:
    """The token is new, or came before with this very event; Refused 403 when
    it came with another (a replayed signature carrying other event data)."""
    import json

    key = hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()[:32]
    digest = hashlib.sha256(json.dumps(event, sort_keys=True).encode()).hexdigest()[:32]
    clash: list[bool] = []

    def change(values: dict[str, str]) -> None:
        for old, value in list(values.items()):
            when = value.partition(" ")[0]
            if not when.isdigit() or moment - int(when) > 2 * MAX_AGE:
                del values[old]
        seen = values.get(key)
        if seen is not None and seen.partition(" ")[2] != digest:
            clash.append(True)
            return
        values[key] = f"{stamp} {digest}"

    change_kv(data.state / TOKENS, change)
    if clash:
        raise CallbackRefused(403, "this signature's token came before with another event")
