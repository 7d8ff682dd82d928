"""The generic form, for any provider or script without a module of its own.

The body is one JSON object or an array of them::

    {"address": "ann@example.org", "kind": "permanent",
     "diagnostic": "550 5.1.1 user unknown", "id": "evt-1", "tag": "s1…"}

``kind`` is ``permanent``, ``temporary``, ``complaint`` or ``unsubscribe``;
``diagnostic``, ``id`` (the same id is applied once; without one, the same
address, kind and diagnostic are) and ``tag`` (our tag, or the tagged bounce
address, where the sender kept it) are optional.

The proof: the key in the URL *and* ``X-Vykhukhol-Signature: sha256=HEX``,
the hex HMAC-SHA256 of the raw body under ``hooks.generic_secret`` (README
§17 shows one made with openssl). Without that setting the generic form is
off (403): the key alone is in every provider's URL, and a form that takes
it alone would let anyone holding one URL skip every other provider's own
signature check.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING

from vykhukhol.bounces.providers.request import (
    MAX_EVENTS,
    CallbackRefused,
    address,
    json_body,
    text,
)
from vykhukhol.bounces.reading import classify as kinds
from vykhukhol.bounces.reading.classify import Report

if TYPE_CHECKING:  # for the hints only: a callback loads them anyway, through the app
    from vykhukhol.datadir import DataDir
    from vykhukhol.settings import Settings

KINDS = (kinds.PERMANENT, kinds.TEMPORARY, kinds.COMPLAINT, kinds.UNSUBSCRIBE)
SIGNATURE = "HTTP_X_VYKHUKHOL_SIGNATURE"  # the header X-Vykhukhol-Signature, as WSGI names it


def signature(secret: str, body: bytes) -> str:
    """The header's value for ``body``: ``sha256=`` and the hex HMAC-SHA256."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def read(body: bytes, environ: dict, settings: Settings, data: DataDir) -> list[Report]:
    secret = settings["hooks.generic_secret"]
    if not secret:
        raise CallbackRefused(403, "hooks.generic_secret is not set: the generic callback is off")
    given = str(environ.get(SIGNATURE, "")).strip().lower()
    if not hmac.compare_digest(signature(secret, body).encode(), given.encode("utf-8", "replace")):
        raise CallbackRefused(403, "the X-Vykhukhol-Signature does not verify")
    found = json_body(body)
    items = found if isinstance(found, list) else [found]
    if not items or len(items) > MAX_EVENTS:
        raise CallbackRefused(400, f"expected 1 to {MAX_EVENTS} reports")
    reports = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise CallbackRefused(400, f"report {number} is not a JSON object")
        who = address(item.get("address"))
        kind = text(item.get("kind"), 20)
        if not who:
            raise CallbackRefused(400, f"report {number}: no valid address")
        if kind not in KINDS:
            raise CallbackRefused(400, f"report {number}: kind must be one of {', '.join(KINDS)}")
        diagnostic = text(item.get("diagnostic"), 200)
        event = text(item.get("id"), 200) or f"{who}\0{kind}\0{diagnostic}"
        reports.append(Report(event, kind, who, _reason(kind, diagnostic), text(item.get("tag"), 100)))
    return reports


def _reason(kind: str, diagnostic: str) -> str:
    said = {kinds.PERMANENT: "permanent failure reported by callback",
            kinds.TEMPORARY: "temporary failure reported by callback",
            kinds.COMPLAINT: "a spam complaint reported by callback",
            kinds.UNSUBSCRIBE: "an unsubscribe reported by callback"}[kind]
    return f"{said} ({diagnostic})" if diagnostic else said
