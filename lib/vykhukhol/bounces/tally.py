"""The brakes' tally (docs/deliverability/reputation.md#brakes), ``data/state/brakes``: per target (``service
NAME`` or ``newsletter JOB``) and per day, its letters, the complaints and the
addresses gone that came back for them. The one module that reads and writes
the file; :mod:`vykhukhol.watch.brakes` decides from it.

One ``key<TAB>json`` line per target (:mod:`vykhukhol.files.kv`)::

    service news	{"days":{"2026-12-01":[1200,2,4]},"once":"<batch>","braked":{…}}

- ``days``: day (UTC) → [letters, complaints, gone]; days older than the
  window are dropped as the line is rewritten;
- ``once``: the last bounce batch counted on the line (the bounce reader
  finishes a killed batch before the next, so only the last can come round
  twice: as :mod:`vykhukhol.newsletters.history` does);
- ``who``: a short hash of each (what, address) counted in the window → its
  day: an address counts one complaint and one address gone at most, however
  many reports name it; a resume keeps it, so repeats count nothing after;
- ``braked``: set when the sender latched the brake, with its figures;
  cleared by a resume.

Here, below the sender, because the bounce batch writes it too (as
:mod:`.refusals`, the per-run tally). It decides nothing.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from vykhukhol.files import kv

if TYPE_CHECKING:
    from pathlib import Path

    from vykhukhol.datadir import DataDir

WINDOW_DAYS = 30       # days of letters and reports the line is drawn over
SERVICE, NEWSLETTER = "service", "newsletter"
COMPLAINTS, GONE = "complaints", "gone"


def path(data: DataDir) -> Path:
    return data.state / "brakes"


def target(kind: str, name: str) -> str:
    return f"{kind} {name}"


def read(data: DataDir) -> dict[str, dict]:
    """Every target's entry (a line spoiled by hand reads as empty: it counts
    nothing, and never stops the sender)."""
    values = kv.read_kv(path(data))
    return {key: _entry(values, key) for key in values}


def _entry(values: dict[str, str], key: str) -> dict:
    try:
        entry = json.loads(values.get(key, "{}"))
    except ValueError:
        entry = {}
    return entry if isinstance(entry, dict) else {}


def _days(entry: dict) -> dict[str, list[int]]:
    days = entry.get("days")
    if not isinstance(days, dict):
        return {}
    return {day: counts for day, counts in days.items()
            if isinstance(counts, list) and len(counts) == 3
            and all(isinstance(n, int) for n in counts)}


def _add(entry: dict, day: str, letters: int = 0, complaints: int = 0, gone: int = 0) -> None:
    days = _days(entry)
    old = days.get(day, [0, 0, 0])
    days[day] = [old[0] + letters, old[1] + complaints, old[2] + gone]
    entry["days"] = {d: days[d] for d in sorted(days)[-WINDOW_DAYS - 1:]}


def sums(entry: dict, moment: datetime) -> tuple[int, int, int]:
    """(letters, complaints, gone) of the last :data:`WINDOW_DAYS` days."""
    first = (moment - timedelta(days=WINDOW_DAYS)).date().isoformat()
    totals = [0, 0, 0]
    for day, counts in _days(entry).items():
        if day >= first:
            totals = [a + b for a, b in zip(totals, counts, strict=True)]
    return totals[0], totals[1], totals[2]


def _change(data: DataDir, keys, change, prune: datetime | None = None) -> dict[str, dict]:
    """Read-modify-write under the file's lock: ``change(key, entry)`` for each
    key (False: leave it as it was); with ``prune``, old lines go too."""
    result: dict[str, dict] = {}

    def apply(values: dict[str, str]) -> None:
        for key in keys:
            entry = _entry(values, key)
            if change(key, entry) is not False:
                values[key] = json.dumps(entry, separators=(",", ":"))
        if prune is not None:
            _prune(values, prune)
        result.update({key: _entry(values, key) for key in values})

    kv.change_kv(path(data), apply)
    return result


def _prune(values: dict[str, str], moment: datetime) -> None:
    """Lines of targets with nothing left in the window and no brake go (a
    finished newsletter's, a month on)."""
    first = (moment - timedelta(days=WINDOW_DAYS)).date().isoformat()
    for key in list(values):
        entry = _entry(values, key)
        if "braked" not in entry and not any(day >= first for day in _days(entry)):
            del values[key]


def count_letters(data: DataDir, letters: dict[str, tuple[int, int]], moment: datetime) -> None:
    """A run's letters: target → (letters, of them refused at hand-over as gone)."""
    day = moment.date().isoformat()

    def change(key: str, entry: dict) -> None:
        sent, gone = letters[key]
        _add(entry, day, letters=sent, gone=gone)

    if letters:
        _change(data, list(letters), change, prune=moment)


def _who(what: str, email: str) -> str:
    """The ``who`` key of an address's count: no address in the file."""
    return hashlib.blake2s(f"{what}\0{email}".encode(), digest_size=8).hexdigest()


def _counted(entry: dict, first: str) -> dict[str, str]:
    """The entry's ``who`` of the window (a spoiled one reads as empty)."""
    who = entry.get("who")
    if not isinstance(who, dict):
        return {}
    return {k: day for k, day in who.items() if isinstance(day, str) and day >= first}


def count_reports(data: DataDir, reports: list[tuple[str, ...]], once: str,
                  moment: datetime) -> None:
    """Late reports of one bounce batch: (target, COMPLAINTS or GONE, address)
    each, counted for the target its tag names, today; an address already
    counted for that target in the window counts nothing more (a report
    journalled without its address counts as it did). ``once``: the batch; a
    kill that repeats the batch counts nothing twice."""
    day = moment.date().isoformat()
    first = (moment - timedelta(days=WINDOW_DAYS)).date().isoformat()

    def change(key: str, entry: dict) -> bool:
        if once and entry.get("once") == once:
            return False
        counted = {COMPLAINTS: 0, GONE: 0}
        who = _counted(entry, first)
        for report in reports:
            if report[0] != key or report[1] not in counted:
                continue
            if len(report) > 2 and report[2]:
                mark = _who(report[1], report[2])
                if mark in who:
                    continue
                who[mark] = day
            counted[report[1]] += 1
        _add(entry, day, complaints=counted[COMPLAINTS], gone=counted[GONE])
        entry["who"] = who
        entry["once"] = once
        return True

    if reports:
        _change(data, list(dict.fromkeys(report[0] for report in reports)), change)


def latch(data: DataDir, key: str, braked: dict) -> dict[str, dict]:
    """Note the brake on the target's line (a brake noted already stays as it was)."""
    def change(_: str, entry: dict) -> None:
        entry.setdefault("braked", braked)

    return _change(data, [key], change)


def clear(data: DataDir, key: str, braked) -> bool:
    """A resume: when ``braked(entry)`` says the target is braked, its brake
    and its complaints and addresses gone are forgotten; its letters stay
    counted. Returns whether it was braked."""
    was = False

    def change(_: str, entry: dict) -> bool:
        nonlocal was
        was = bool(braked(entry))
        if was:
            entry.pop("braked", None)
            entry["days"] = {day: [counts[0], 0, 0] for day, counts in _days(entry).items()}
        return was

    if key in kv.read_kv(path(data)):
        _change(data, [key], change)
    return was
