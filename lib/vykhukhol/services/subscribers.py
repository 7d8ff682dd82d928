"""The subscriber file (docs/using/services.md#subscribers-file): reading it and every change made to it.

A line (:mod:`~vykhukhol.services.subscriber_line`) that does not parse is
kept verbatim by every rewrite, skipped by the sender and reported — never
dropped. Reading streams; ``add`` appends one line (a scan for the address,
no rewrite); every other change is one streamed atomic rewrite under the
file's record lock. A newsletter's readers are read by
:mod:`~vykhukhol.services.confirmed`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from vykhukhol import files
from vykhukhol.addresses import email_key
from vykhukhol.errors import BadInput, Conflict
from vykhukhol.records import NamedTuple
from vykhukhol.services.prefix_scan import lines_maybe_starting
from vykhukhol.services.subscriber_line import HEADER, Subscriber, parse_line
from vykhukhol.states import SubscriberState


class Malformed(NamedTuple):
    """A line that does not parse: its number, its text as it is, and why."""

    lineno: int
    text: str
    reason: str


def read(path: Path) -> Iterator[Subscriber | Malformed]:
    """Every line of the file in order, parsed; comments and blank lines skipped."""
    for lineno, line in enumerate(files.read_lines(path), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            yield parse_line(line)
        except BadInput as exc:
            yield Malformed(lineno, line, exc.message)


def subscribers(path: Path) -> Iterator[Subscriber]:
    return (item for item in read(path) if isinstance(item, Subscriber))


def among(path: Path, keys: Collection[str]) -> Iterator[Subscriber]:
    """The subscribers whose address (as :func:`email_key` has it) is one of
    ``keys``, in file order: :func:`subscribers` filtered, but only those lines
    are parsed, so looking a few addresses up in a big file stays cheap."""
    for line in files.read_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        if email_key(line.split("\t", 1)[0]) not in keys:
            continue
        try:
            yield parse_line(line)
        except BadInput:
            continue


def malformed(path: Path) -> list[Malformed]:
    return [item for item in read(path) if isinstance(item, Malformed)]


def find(path: Path, email: str) -> Subscriber | None:
    wanted = email_key(email)
    # The whole key as the prefix: a line holding this address starts with it
    # once lower-cased (a line starting with white space never matched).
    for line in lines_maybe_starting(path, wanted):
        # A cheap test on the raw line first: most lines are not the one.
        if not line.lower().startswith(wanted):
            continue
        if email_key(line.split("\t", 1)[0]) == wanted:
            try:
                return parse_line(line)
            except BadInput:
                return None
    return None


def _contains(path: Path, key: str) -> bool:
    return find(path, key) is not None


def add(path: Path, subscriber: Subscriber, sync: bool = True, absent: bool = False) -> None:
    """Append a new subscriber; Conflict if the address is in the file already.
    ``sync=False``: the caller fsyncs the file itself, later (a public page
    does it after its answer). ``absent``: the caller holds the record lock and
    has just looked the address up, so it is not looked up twice."""
    with files.record_lock(path):
        if not absent and _contains(path, subscriber.email):
            raise Conflict("{email} is subscribed already", email=subscriber.email)
        if not path.exists() or path.stat().st_size == 0:
            files.atomic_write(path, [HEADER + "\n", subscriber.to_line() + "\n"])
        else:
            _ensure_final_newline(path)
            files.append_line(path, subscriber.to_line(), sync=sync)


def _ensure_final_newline(path: Path) -> None:
    with open(path, "rb") as handle:
        handle.seek(-1, 2)
        last = handle.read(1)
    if last not in (b"\n", b""):
        files.append_line(path, "")


Change = Callable[[Subscriber], "Subscriber | None"]


def rewrite(path: Path, change: Change, on_line: Callable[[Subscriber], None] | None = None,
            parse: Callable[[int, str], bool] | None = None) -> int:
    """Stream-rewrite the file: ``change`` returns the subscriber (changed or not)
    or None to delete it. Malformed lines are kept. Returns how many changed.

    ``on_line`` sees every subscriber kept after its change (the sender uses it to
    compute the service's next due time in the same pass). With ``parse``, a
    line is parsed (and seen by ``change`` and ``on_line``) only when
    ``parse(index, line)`` says so, ``index`` counting the subscriber lines
    (malformed ones too) from 0; the others are copied through as they are.
    """
    changed = 0

    def lines() -> Iterator[str]:
        nonlocal changed
        yield HEADER + "\n"
        index = -1
        for line in files.read_lines(path):
            if not line.strip() or line.startswith("#"):
                continue
            index += 1
            if parse is not None and not parse(index, line):
                yield line + "\n"
                continue
            try:
                item = parse_line(line)
            except BadInput:
                yield line + "\n"  # malformed: kept as it is
                continue
            after = change(item)
            if after is not item:
                changed += 1
            if after is not None:
                if on_line:
                    on_line(after)
                yield after.to_line() + "\n"

    with files.record_lock(path):
        if not path.exists():
            return 0
        files.atomic_write(path, lines())
    return changed


def update_one(path: Path, email: str, change: Change) -> bool:
    """Apply ``change`` to one subscriber; False if the address is not there."""
    wanted = email_key(email)
    found = False

    def one(sub: Subscriber) -> Subscriber | None:
        nonlocal found
        if sub.key != wanted:
            return sub
        found = True
        return change(sub)

    if not path.exists() or find(path, email) is None:
        return False
    rewrite(path, one)
    return found


def remove(path: Path, email: str) -> bool:
    return update_one(path, email, lambda sub: None)


def counts(path: Path) -> dict[str, int]:
    """Subscribers by state, plus ``malformed`` lines."""
    result = {state.value: 0 for state in SubscriberState}
    result["malformed"] = 0
    for item in read(path):
        if isinstance(item, Malformed):
            result["malformed"] += 1
        else:
            result[item.state.value] += 1
    return result


def add_many(path: Path, new: list[Subscriber]) -> tuple[int, int]:
    """Add many subscribers in one rewrite; returns (added, already there)."""
    added = duplicates = 0
    with files.record_lock(path):
        seen = {item.key for item in read(path) if isinstance(item, Subscriber)}
        fresh = []
        for sub in new:
            if sub.key in seen:
                duplicates += 1
                continue
            seen.add(sub.key)
            fresh.append(sub)
            added += 1
        if fresh:
            def lines() -> Iterator[str]:
                yield HEADER + "\n"
                for line in files.read_lines(path):
                    if line and not line.startswith("#"):
                        yield line + "\n"
                for sub in fresh:
                    yield sub.to_line() + "\n"
            files.atomic_write(path, lines())
    return added, duplicates
