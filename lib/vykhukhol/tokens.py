"""Signed links: HMAC-SHA256 over (service, lower-cased email, purpose).

Tokens are compared in constant time. They carry no expiry: a subscriber may
confirm or leave from an old letter, and the secret can be changed to void
every link at once.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import urlencode

PURPOSES = ("confirm", "unsubscribe")
TOKEN_LENGTH = 32  # hex characters kept: 128 bits


def make(secret: bytes, service: str, email: str, purpose: str) -> str:
    if purpose not in PURPOSES:
        raise ValueError(f"unknown token purpose {purpose!r}")
    message = "\n".join((service, email.strip().lower(), purpose)).encode("utf-8")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()[:TOKEN_LENGTH]


def check(secret: bytes, service: str, email: str, purpose: str, token: str) -> bool:
    if not isinstance(token, str) or len(token) != TOKEN_LENGTH or not token.isascii():
        return False  # compare_digest refuses non-ASCII text; such a token is forged anyway
    return hmac.compare_digest(make(secret, service, email, purpose), token)


def link(site_url: str, script: str, secret: bytes, service: str, email: str, purpose: str,
         job: str | None = None) -> str:
    """The full URL of a confirm or unsubscribe page for one subscriber; ``job``
    (a newsletter's) only says which letter the link came from, for the
    newsletters' history: it is not signed, and grants nothing."""
    fields = {"s": service, "e": email, "t": make(secret, service, email, purpose)}
    if job:
        fields["n"] = job
    return f"{site_url.rstrip('/')}/cgi/{script}?{urlencode(fields)}"


def unsubscribe_link(site_url: str, secret: bytes, service: str, email: str,
                     job: str | None = None) -> str:
    return link(site_url, "unsubscribe.py", secret, service, email, "unsubscribe", job)


def confirm_link(site_url: str, secret: bytes, service: str, email: str) -> str:
    return link(site_url, "confirm.py", secret, service, email, "confirm")
