"""The soft failures counted per letter (docs/deliverability/bounces.md#returned-message):
``data/state/soft``.

One set of rules for every way a soft refusal arrives — a report by mail
(:mod:`.apply`), a provider's callback (through :mod:`.apply`), a reply at
hand-over (the sender's fold, :mod:`vykhukhol.sender.fold` and
:mod:`vykhukhol.sender.news`): :func:`settle_soft` — ``failures`` counts soft
failures of different letters. Which letters were counted, and when the last
one was, is kept in ``data/state/soft`` (one line per service and address:
``service|address<TAB>time count letter letter …``), not in the subscriber
file, so files written before keep working. A letter already counted counts
nothing again; no soft failure for ``bounce_reset`` sets the count back to 0;
at ``bounce_limit`` the address is deleted (:mod:`.removal`). What the other
causes do: *address gone* — :mod:`.removal` as well; *sender refused* and
*delay* — nothing on the subscriber (the caller counts or notes them; the
sender's refusals per run: :mod:`.refusals`).

Exactly once. ``data/state/soft`` is written *before* the subscriber file:
a kill between the two leaves the letter known and the count recorded there,
and the next attempt (the reader's journal, the sender's journal) finds the
letter known and sets ``failures`` to that recorded count. So a report
applied twice counts once, and a kill never loses a count.

Light on purpose: the sender's fold imports it on every run that had a refusal.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from vykhukhol.addresses import email_key
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.files import kv
from vykhukhol.settings import Settings
from vykhukhol.timeutil import format_time, parse_time, seconds_between

KEEP_LETTERS = 20  # letters remembered per address: more than any bounce_limit in use
# The entry of an address read as gone with doubt, across the site (no
# service is named so: a service's name never starts with "*").
DOUBT = "*gone"
DOUBT_LETTERS = 2  # different letters read as gone with doubt before the address leaves


def soft_path(data: DataDir) -> Path:
    return data.soft_counts


def _read(value: str | None) -> tuple[datetime | None, int, list[str]]:
    """(last soft failure, the count it left, the letters counted) of one entry."""
    parts = (value or "").split()
    try:
        return parse_time(parts[0]), int(parts[1]), parts[2:]
    except (IndexError, ValueError, BadInput):
        return None, 0, []


def counted(values: dict[str, str], service: str, key: str, failures: int,
            letters: Iterable[str], moment: datetime, reset: int) -> int:
    """The subscriber's ``failures`` once ``letters`` (soft failures, each
    named by the letter it was about) are counted; ``values`` (the soft file)
    is changed to match. Pure apart from ``values``."""
    entry = f"{service}|{key}"
    last, count, known = _read(values.get(entry))
    if last is not None and seconds_between(moment, last) >= reset:
        last, count, known, failures = None, 0, [], 0  # quiet for bounce_reset: a fresh start
    elif last is None:
        count = failures  # a count from before this file: kept as it is
    new = [letter for letter in dict.fromkeys(letters) if letter not in known]
    # A letter already known whose count did not reach the subscriber file (a
    # kill between the two writes): the recorded count is the truth.
    result = max(failures, count) + len(new)
    if new or entry not in values:
        values[entry] = " ".join([format_time(moment), str(result), *(known + new)[-KEEP_LETTERS:]])
    return result


def stale(values: dict[str, str], service: str, key: str, moment: datetime, reset: int) -> bool:
    """Whether a subscriber's count is due to be set back to 0: no soft failure
    for ``reset`` seconds, or a count left from before the soft file."""
    last, _, _ = _read(values.get(f"{service}|{key}"))
    return last is None or seconds_between(moment, last) >= reset


def prune(values: dict[str, str], moment: datetime, reset: int) -> None:
    """Forget entries quiet for longer than ``reset`` (their count is void)."""
    for entry in [e for e, v in values.items() if (t := _read(v)[0]) is None
                  or seconds_between(moment, t) >= reset]:
        del values[entry]


def forget_counts(data: DataDir, key: str, services: Iterable[str]) -> None:
    """The soft failures counted for an address in these services forgotten
    (a restore: the owner judged those refusals wrong, so they start again)."""
    entries = {f"{service}|{email_key(key)}" for service in [*services, DOUBT]}
    if not entries & set(kv.read_kv(soft_path(data))):
        return

    def change(values: dict[str, str]) -> None:
        for entry in entries & set(values):
            del values[entry]

    kv.change_kv(soft_path(data), change)


def note_doubt(data: DataDir, settings: Settings, letters: dict[str, list[str]],
               moment: datetime) -> set[str]:
    """Letters that failed with an address read as gone in doubt (address key
    → the letters), kept in the soft file under :data:`DOUBT`; returns the
    keys that have now failed so for :data:`DOUBT_LETTERS` different letters (their
    address leaves as gone: docs/design/bounces.md#bounces-doubt). A letter
    already known counts nothing again, so noting it twice changes nothing;
    none for ``bounce_reset`` starts the count again."""
    reset = settings["bounce_reset"]
    result: set[str] = set()

    def change(values: dict[str, str]) -> None:
        prune(values, moment, reset)
        for key, named in letters.items():
            entry = f"{DOUBT}|{key}"
            _, _, known = _read(values.get(entry))
            known = known + [letter for letter in dict.fromkeys(named) if letter not in known]
            values[entry] = " ".join([format_time(moment), str(len(known)),
                                      *known[-KEEP_LETTERS:]])
            if len(known) >= DOUBT_LETTERS:
                result.add(key)

    if letters:
        kv.change_kv(soft_path(data), change)
    return result


def settle_soft(data: DataDir, settings: Settings, service: str,
                letters: dict[str, list[str]], failures: dict[str, int],
                moment: datetime) -> dict[str, int]:
    """Count soft failures in the soft file (address key → the letters it
    failed, its ``failures`` as the file reads now); returns each address's
    new ``failures``. The caller writes them into the subscriber file after."""
    reset = settings["bounce_reset"]
    result: dict[str, int] = {}

    def change(values: dict[str, str]) -> None:
        prune(values, moment, reset)
        for key, named in letters.items():
            if key in failures:
                result[key] = counted(values, service, key, failures[key], named, moment, reset)

    if any(key in failures for key in letters):
        kv.change_kv(soft_path(data), change)
    return result
