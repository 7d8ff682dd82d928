"""Postmark's Bounce and Spam Complaint webhooks (README §17).

Postmark posts one JSON record per event (postmarkapp.com/developer/webhooks):
``RecordType`` ``Bounce`` with ``Type`` (``HardBounce``, ``SoftBounce``,
``Transient``, ``BadEmailAddress``, ``SpamComplaint``, …), ``ID``, ``Email``,
``Details``, ``Description`` and ``Metadata`` (what the letter's
``X-PM-Metadata-*`` headers set); ``RecordType`` ``SpamComplaint`` likewise.
Postmark signs nothing: the key in the URL is the proof, and HTTP basic auth
where the owner sets it on the webhook (``hooks.postmark_user``/``_password``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vykhukhol.bounces.providers.request import (
    CallbackRefused,
    address,
    basic_auth,
    json_body,
    text,
)
from vykhukhol.bounces.reading import classify as kinds
from vykhukhol.bounces.reading.classify import Report

if TYPE_CHECKING:  # for the hints only: a callback loads them anyway, through the app
    from vykhukhol.datadir import DataDir
    from vykhukhol.settings import Settings

# Postmark's bounce types (its BounceType list) and what each is here: the
# address is gone; a failure that may pass; a complaint; an unsubscribe. Any
# other type (AutoResponder, Subscribe, OpenRelayTest, DMARCPolicy, Blocked…)
# is noted and does nothing, as a mail of that kind would.
PERMANENT_TYPES = {"HardBounce", "BadEmailAddress", "ManuallyDeactivated"}
TEMPORARY_TYPES = {"SoftBounce", "Transient", "DnsError", "Unknown", "Undeliverable",
                   "AddressChange", "Blocked", "ChallengeVerification", "SMTPApiError"}


def read(body: bytes, environ: dict, settings: Settings, data: DataDir) -> list[Report]:
    if not basic_auth(environ, settings["hooks.postmark_user"], settings["hooks.postmark_password"]):
        raise CallbackRefused(401, "basic authentication failed")
    record = json_body(body)
    if not isinstance(record, dict):
        raise CallbackRefused(400, "expected one Postmark record (a JSON object)")
    kind_of_record = text(record.get("RecordType"), 40)
    bounce_type = text(record.get("Type"), 40)
    if kind_of_record not in ("Bounce", "SpamComplaint"):
        return []  # deliveries, opens, clicks: nothing to do, and 200 so Postmark stops
    who = address(record.get("Email"))
    if not who:
        raise CallbackRefused(400, "the record names no valid Email")
    if kind_of_record == "SpamComplaint" or bounce_type == "SpamComplaint":
        kind = kinds.COMPLAINT
    elif bounce_type == "Unsubscribe":
        kind = kinds.UNSUBSCRIBE
    elif bounce_type in PERMANENT_TYPES:
        kind = kinds.PERMANENT
    elif bounce_type in TEMPORARY_TYPES:
        kind = kinds.TEMPORARY
    else:
        kind = kinds.AUTO_REPLY if bounce_type == "AutoResponder" else kinds.TEMPORARY
    details = text(record.get("Details"), 160) or text(record.get("Description"), 160)
    metadata = record.get("Metadata") if isinstance(record.get("Metadata"), dict) else {}
    event = text(record.get("ID"), 100) or text(record.get("MessageID"), 100) + "/" + who
    reason = f"Postmark {bounce_type or kind_of_record}" + (f": {details}" if details else "")
    return [Report(event, kind, who, reason, text(metadata.get("vykhukhol-tag"), 100))]
