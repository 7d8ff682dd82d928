"""Signatures as the Standard Webhooks specification defines them
(https://www.standardwebhooks.com/): the receiver checks ``webhook-signature``
against its copy of the endpoint's secret."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

PREFIX = "whsec_"


def new_secret() -> str:
    """A fresh endpoint secret: ``whsec_`` and 32 random bytes in base64."""
    return PREFIX + base64.b64encode(os.urandom(32)).decode("ascii")


def key_of(secret: str) -> bytes:
    """The HMAC key a secret stands for (the base64 after ``whsec_``)."""
    return base64.b64decode(secret.removeprefix(PREFIX), validate=True)


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header's value: ``v1,`` and the base64 of
    HMAC-SHA256 over ``id.timestamp.body``."""
    signed = f"{message_id}.{timestamp}.".encode("ascii") + body
    digest = hmac.new(key_of(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {"webhook-id": message_id, "webhook-timestamp": str(timestamp),
            "webhook-signature": signature(secret, message_id, timestamp, body)}
