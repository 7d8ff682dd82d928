"""What every provider's callback shares: a refusal with its status, the body
read as JSON, its fields as short lines and addresses, the key in the URL and
HTTP basic auth, each compared in constant time. Nothing here reads or writes
a data file; what each provider's events mean is :mod:`.events`."""

from __future__ import annotations

import hmac
from typing import Any

from vykhukhol.addresses import check_email
from vykhukhol.errors import BadInput, VykhukholError

MAX_BODY = 1_000_000  # bytes of a callback's body; providers batch far below this
MAX_EVENTS = 1000     # events taken from one body (SendGrid batches, the generic form)


class CallbackRefused(VykhukholError):
    """A callback that changes nothing, with the HTTP status the provider gets
    (4xx: do not retry the same thing; 503: try again later)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def json_body(body: bytes) -> Any:
    """The body as JSON, or CallbackRefused 400."""
    import json

    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise CallbackRefused(400, "the body is not JSON") from None


def same(given: str, expected: str) -> bool:
    """``given`` equals a non-empty ``expected``, in constant time."""
    return bool(expected) and hmac.compare_digest(given.encode("utf-8", "surrogateescape"),
                                                  expected.encode("utf-8", "surrogateescape"))


def basic_auth(environ: dict, user: str, password: str) -> bool:
    """True when no user is set, or the request's Basic credentials are these."""
    import base64
    import binascii

    if not user:
        return True
    header = environ.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        given_user, _, given_password = base64.b64decode(value.strip(), validate=True) \
            .decode("utf-8").partition(":")
    except (binascii.Error, ValueError):
        return False
    # both compared, always: the time says nothing about which one differs
    return same(given_user, user) & same(given_password, password)


def text(value: Any, limit: int = 300) -> str:
    """A field as one line of at most ``limit`` characters ("" for anything else)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        return ""
    return " ".join(value.split())[:limit]


def address(value: Any) -> str:
    """An e-mail address a provider names, lower case, or "" when it is none."""
    found = text(value, 254).strip("<>")
    try:
        return check_email(found).lower() if found else ""
    except BadInput:
        return ""
