"""The generic form, for any provider or script without a module of its own.

The body is one JSON object or an array of them::

    {"address": "ann@example.org", "kind": "permanent",
     "diagnostic": "550 5.1.1 user unknown", "id": "evt-1", "tag": "s1…"}

``kind`` is ``permanent``, ``temporary``, ``complaint`` or ``unsubscribe``;
``diagnostic``, ``id`` (the same id is applied once; without one, the same
address, kind and diagnostic are) and ``tag`` (our tag, or the tagged bounce
address, where the sender kept it) are optional.

The proof: the key in the URL *and* ``X-Vykhukhol-Signature: sha256=HEX``,
the hex HMAC-SHA256 of the raw body under ``hooks.generic_secret``
(docs/deliverability/providers.md#provider-callbacks shows one made with openssl). Without that setting the generic form is
off (403): the key alone is in every provider's URL, and a form that takes
it alone would let anyone holding one URL skip every other provider's own
signature check.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING

from vykhukhol.bounces.reading import events
from vykhukhol.bounces.reading.callbacks import CallbackRefused, json_body
from vykhukhol.bounces.reading.classify import Report

if TYPE_CHECKING:  # for the hints only: a callback loads them anyway, through the app
    from vykhukhol.datadir import DataDir
    from vykhukhol.settings import Settings

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
    return events.generic(json_body(body))
