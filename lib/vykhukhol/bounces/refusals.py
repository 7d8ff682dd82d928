"""Refusals for the sender's reasons (docs/deliverability/bounces.md#returned-message),
counted per run in ``data/state/refused``: nothing on the subscriber; one
alert for each run whose letters came back past the line (more than 5 %, at
least 5; late bounces count for the run that sent the letter, once per
address, and only for a run that really sent letters).

Light on purpose: the sender imports it at the end of every run that had a refusal.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from vykhukhol.datadir import DataDir
from vykhukhol.files import kv
from vykhukhol.timeutil import format_time

ALERT_SHARE = 0.05   # more than this share of a run's letters refused for the sender's reasons…
ALERT_LEAST = 5      # …and at least this many: the admin is told
KEEP_RUNS = 200      # runs whose refusals are remembered


def refused_path(data: DataDir) -> Path:
    return data.state / "refused"


def _tally(value: str | None) -> tuple[str, int, int, bool, dict[str, int], set[str]]:
    """(time, letters, refused, alerted, reason → count, addresses counted) of
    one run's line; an address counted is a ``#`` and a short hash."""
    parts = (value or "").split()
    try:
        who = {p for p in parts[4:] if p.startswith("#")}
        reasons = {name: int(n) for name, _, n in (p.partition(":") for p in parts[4:]
                                                   if not p.startswith("#"))}
        return parts[0], int(parts[1]), int(parts[2]), parts[3] == "yes", reasons, who
    except (IndexError, ValueError):
        return "-", 0, 0, False, {}, set()


def _untally(time: str, letters: int, refused: int, alerted: bool, reasons: dict[str, int],
             who: set[str]) -> str:
    return " ".join([time, str(letters), str(refused), "yes" if alerted else "no",
                     *(f"{name}:{n}" for name, n in sorted(reasons.items())), *sorted(who)])


def _who(email: str) -> str:
    return "#" + hashlib.blake2s(email.encode(), digest_size=8).hexdigest()


def note_refused(data: DataDir, refused: Sequence[tuple[str, ...]], moment: datetime,
                 letters: dict[str, int] | None = None) -> None:
    """Count refusals for the sender's reasons, each (the run that sent the
    letter, Sisimai's reason, and for a late bounce the address), and the
    letters a run handed over or had refused (``letters``, at the run's end).
    Only a run that counted letters has refusals counted, and an address
    once per run: a report that names no run (no returned headers), a run
    that sent nothing (a confirmation request's) or an address counted
    already counts nothing, so forged reports cannot raise the alert."""

    def change(values: dict[str, str]) -> None:
        for run, count in (letters or {}).items():
            time, had, no, alerted, why, who = _tally(values.get(run))
            values[run] = _untally(format_time(moment), had + count, no, alerted, why, who)
        for run, reason, *address in refused:
            time, had, no, alerted, why, who = _tally(values.get(run))
            if not had:
                continue
            if address and address[0]:
                if _who(address[0]) in who:
                    continue
                who.add(_who(address[0]))
            why[reason] = why.get(reason, 0) + 1
            values[run] = _untally(time, had, no + 1, alerted, why, who)
        for old in sorted(values, key=lambda k: _tally(values[k])[0])[:-KEEP_RUNS]:
            del values[old]

    kv.change_kv(refused_path(data), change)


def refusal_alerts(data: DataDir) -> list[tuple[str, int, int, dict[str, int]]]:
    """Runs past the alert line not told yet, each (run, letters, refused,
    reasons); they are marked told (so each run is alerted once)."""
    path = refused_path(data)
    if not path.exists():
        return []
    due: list[tuple[str, int, int, dict[str, int]]] = []

    def change(values: dict[str, str]) -> None:
        for run, value in values.items():
            time, letters, refused, alerted, why, who = _tally(value)
            if not alerted and refused >= ALERT_LEAST and refused > ALERT_SHARE * max(letters, 1):
                due.append((run, letters, refused, why))
                values[run] = _untally(time, letters, refused, True, why, who)

    if any(not _tally(v)[3] and _tally(v)[2] >= ALERT_LEAST for v in kv.read_kv(path).values()):
        kv.change_kv(path, change)
    return due
