"""The proof-of-work puzzle of the public forms, when ``subscribe_challenge``
is on (docs/using/subscriber-pages.md#subscriber-challenge).

The puzzle is ALTCHA's (the ``altcha`` library): the server picks a random
number up to :data:`MAX_NUMBER` and sends SHA-256(salt + number), signed;
the browser tries numbers until one hashes to it (our own script,
``widget.js`` beside the templates, about a second of a phone's time) and
posts the number back in the hidden ``altcha`` field. A bot that wants to
post a thousand addresses pays a thousand such seconds.

A puzzle is good for :data:`LIFE` seconds and once: a solved one seen before
is refused (``data/state/challenges``, the signatures of the last hour).

Imported only when the setting is on: the library stays off the pages' fast
path otherwise (docs/design/startup.md#startup-boundary).
"""

from __future__ import annotations

import base64
import hmac
import json
from datetime import datetime, timedelta, timezone
from typing import Final

import altcha

from vykhukhol import tokens
from vykhukhol.datadir import DataDir

MAX_NUMBER = 100_000  # tries at most; ~50 000 on average, about a second in a browser
LIFE = 900            # seconds a puzzle may take from drawn to posted
SEEN_WINDOW = 3600    # seconds a solved puzzle's signature is remembered (> LIFE)
ALGORITHM: Final = "SHA-256"


def _key(secret: bytes) -> str:
    """The puzzles' HMAC key, derived from the site's secret (never the secret itself)."""
    return tokens.sign(secret, b"altcha:puzzle-key")


def new(secret: bytes) -> dict:
    """A fresh puzzle, as the widget reads it."""
    expires = datetime.now(timezone.utc) + timedelta(seconds=LIFE)
    options = altcha.ChallengeOptionsV1(algorithm=ALGORITHM, hmac_key=_key(secret),
                                        max_number=MAX_NUMBER, expires=expires)
    return altcha.create_challenge_v1(options).to_dict()


def problem(data: DataDir, secret: bytes, payload: str) -> str:
    """Why ``payload`` (the ``altcha`` field: base64 of the puzzle's JSON with
    the number found) is not a solved, fresh, unused puzzle of ours; "" when
    it is. The signature is compared in constant time before the library
    looks at the rest."""
    if not payload:
        return "no puzzle solved"
    try:
        fields = json.loads(base64.b64decode(payload, validate=True))
        signature, puzzle = str(fields["signature"]), str(fields["challenge"])
    except (ValueError, TypeError, KeyError):
        return "a puzzle not solved"
    key = _key(secret)
    if fields.get("algorithm") != ALGORITHM or not hmac.compare_digest(
            altcha.hmac_hex(ALGORITHM, puzzle.encode(), key).encode(), signature.encode()):
        return "a puzzle not solved"
    good, _ = altcha.verify_solution_v1(fields, key, check_expires=True)
    if not good:
        return "a puzzle not solved or too old"
    from vykhukhol.web.clients import Counter

    if Counter(data.state / "challenges", SEEN_WINDOW).take(signature[:128], 1):
        return "a puzzle solved before"
    return ""
