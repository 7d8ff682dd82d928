"""Where a letter's file goes in the outbox, and how it is written there.

One home for the file's name and content, used by the outbox transport
(:mod:`.outbox`) and by the confirmation request a subscribe post writes
without the e-mail package (:mod:`.confirm_letter`), so the two cannot drift.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

from vykhukhol import files

_UNSAFE = re.compile(r"[^a-z0-9@._+-]")


def put(folder: Path, recipient: str, envelope_from: str, letter: str) -> Path:
    """Write ``letter`` (its text, CRLF line ends) to
    ``<folder>/<yyyymmddTHHMMSS>-<µs>-<recipient>.eml`` with the envelope
    sender on top as a ``Return-Path`` header. Names sort by the moment they
    were written and never overwrite one another. Raises
    :class:`~vykhukhol.errors.StorageError` when the disk refuses it."""
    safe = _UNSAFE.sub("_", recipient.lower())[:100]
    moment = datetime.now(timezone.utc)
    while True:
        path = Path(folder) / f"{moment:%Y%m%dT%H%M%S}-{moment:%f}-{safe}.eml"
        if not path.exists():
            break
        moment += timedelta(microseconds=1)
    files.atomic_write(path, f"Return-Path: <{envelope_from}>\r\n" + letter)
    return path
