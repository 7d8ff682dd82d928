"""Confirmation requests held back by a wave of sign-ups
(docs/using/subscriber-pages.md#subscriber-bots).

When more sign-ups come in an hour than ``subscribe_alarm`` allows, the
subscribe pages start a hold (``data/state/subscribe-hold``, the time it
began): from then on a new subscriber is stored as usual, but the page notes
its confirmation request in ``data/state/held-confirmations`` (service,
address, time: the line of :mod:`vykhukhol.members.unsent`) instead of
mailing it. Nothing is lost and nothing is sent until the owner looks:
:func:`release` hands every held request to the next run (as an unsent
confirmation) and ends the hold; :func:`drop` ends it by taking the held
addresses, still unconfirmed, off their lists.

This module keeps the two files; counting the sign-ups and deciding when to
hold is :mod:`vykhukhol.web.bots`'.
"""

from __future__ import annotations

from datetime import datetime

from vykhukhol import files
from vykhukhol.datadir import DataDir
from vykhukhol.files import kv
from vykhukhol.timeutil import format_time

HELD = "held-confirmations"
HOLD = "subscribe-hold"


def holding(data: DataDir) -> bool:
    """Whether confirmation requests are being held."""
    return (data.state / HOLD).exists()


def hold_since(data: DataDir) -> datetime | None:
    return kv.time_of(kv.read_kv(data.state / HOLD), "since")


def start_hold(data: DataDir, moment: datetime) -> bool:
    """Begin holding; True when this call began it (so one alert goes)."""
    began = False

    def claim(values: dict[str, str]) -> None:
        nonlocal began
        if "since" not in values:
            values["since"] = format_time(moment)
            began = True

    files.make_folder(data.state)
    kv.change_kv(data.state / HOLD, claim)
    return began


def note_held(data: DataDir, service: str, email: str, moment: datetime) -> None:
    path = data.state / HELD
    files.make_folder(path.parent)
    with files.record_lock(path):
        files.append_line(path, f"{service}\t{email}\t{format_time(moment)}")


def held(data: DataDir) -> list[tuple[str, str]]:
    """The held (service, address) pairs, each once, oldest first."""
    rows = (line.split("\t") for line in files.read_lines(data.state / HELD))
    return list(dict.fromkeys((row[0], row[1]) for row in rows if len(row) >= 2))


def _take(data: DataDir) -> list[tuple[str, str]]:
    """Every held pair, out of the file; the hold ends."""
    path = data.state / HELD
    with files.record_lock(path):
        taken = held(data)
        files.remove(path)
    files.remove(data.state / HOLD)
    return taken


def release(data: DataDir) -> int:
    """Hand every held request to the next run and end the hold. Returns how many."""
    from vykhukhol.members import unsent
    from vykhukhol.services.rules import EPOCH

    taken = _take(data)
    for service, email in taken:
        unsent.note_unsent(data, service, email, EPOCH)  # old: the next run takes it at once
    return len(taken)


def drop(data: DataDir) -> int:
    """End the hold by taking the held addresses off their lists (those still
    unconfirmed: one confirmed meanwhile stays). Returns how many went."""
    from vykhukhol.errors import VykhukholError
    from vykhukhol.members import membership
    from vykhukhol.services import find_service
    from vykhukhol.services import subscribers as subs

    gone = 0
    for name, email in _take(data):
        try:
            service = find_service(data, name)
        except VykhukholError:
            continue
        sub = subs.find(service.subscribers_path, email)
        if sub is not None and not sub.state.confirmed:
            gone += bool(membership.unsubscribe(data, service.name, email))
    return gone
