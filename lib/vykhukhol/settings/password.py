"""The admin password: a salted scrypt hash, never the password itself."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from vykhukhol.errors import BadInput

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1  # about 50 ms and 16 MiB per check
MIN_PASSWORD = 8


def hash_password(password: str) -> str:
    if len(password or "") < MIN_PASSWORD:
        raise BadInput(f"the password must have at least {MIN_PASSWORD} characters")
    if any(ch in password for ch in "\r\n\0"):
        raise BadInput("the password must be one line")
    salt = os.urandom(16)  # what secrets.token_bytes gives
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P)
    enc = base64.b64encode
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${enc(salt).decode()}${enc(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        if kind != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt((password or "").encode(), salt=base64.b64decode(salt),
                                n=int(n), r=int(r), p=int(p), dklen=len(expected))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)
