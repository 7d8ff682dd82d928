"""The sender's self-block (docs/design/run.md#run-killed): the flag ``data/state/blocked``
that a run killed by the host leaves, until the admin switches the mode.
"""

from __future__ import annotations

from vykhukhol import files
from vykhukhol.datadir import DataDir


def block_reason(data: DataDir) -> str | None:
    """Why the sender blocked itself (the first line of the flag), or None."""
    text = files.read_text(data.state / "blocked")
    return None if text is None else (text.split("\n", 1)[0] or "blocked")


def block_age(data: DataDir) -> str:
    """How long the dead run had been going, as the flag recorded it."""
    lines = (files.read_text(data.state / "blocked") or "").split("\n")
    return lines[1] if len(lines) > 1 and lines[1] else "?"


def set_block(data: DataDir, reason: str, age: str) -> None:
    files.atomic_write(data.state / "blocked", f"{reason}\n{age}\n")


def clear_block(data: DataDir) -> bool:
    was = (data.state / "blocked").exists()
    files.remove(data.state / "blocked")
    return was
