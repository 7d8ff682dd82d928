"""When the archive publishes (docs/using/archive.md#archive): after a run, what went out for the
first time; at the switch, what went out while it was off.

:func:`after_run` is the sender's hook. It takes values, not the run: the
data directory, the settings, what the run sent (its report's ``items`` and
``sent``), the run's clock and its log. What a page looks like is
:mod:`vykhukhol.archive.pages`'; what is published is the store's
(:mod:`vykhukhol.archive`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from vykhukhol import files
from vykhukhol import services as svc
from vykhukhol.archive import SENT, Entry, add_entries, entries, kept_newsletter
from vykhukhol.archive.pages import build as build_pages
from vykhukhol.datadir import DataDir, check_name
from vykhukhol.errors import BadInput, NotFound, VykhukholError
from vykhukhol.services import subscribers as subs
from vykhukhol.timeutil import format_time, now

if TYPE_CHECKING:
    from vykhukhol.files.runlog import RunLog
    from vykhukhol.settings import Settings


def build(data: DataDir, settings: Settings, service: svc.Service) -> None:
    """The service's public pages written again (:func:`vykhukhol.archive.pages.build`,
    imported only when there is a page to write: every run calls :func:`after_run`)."""
    build_pages(data, settings, service)


def after_run(data: DataDir, settings: Settings, items: Mapping[str, Collection[str]],
              sent: Mapping[str, int], clock: Callable[[], datetime], log: RunLog) -> None:
    """What a run published (called once, at the end of :func:`sender.run`):
    the public series letters that went out for the first time (``items``:
    target -> the items sent), and the public newsletters whose jobs ended
    (``sent``: target -> letters sent). A failure is logged; it never costs
    the run anything, and the next run tries again."""
    try:
        _publish_series(data, settings, items, clock, log)
        _publish_newsletters(data, settings, sent, clock, log)
    except (VykhukholError, OSError) as exc:
        message = exc.message if isinstance(exc, VykhukholError) else str(exc)
        log.error(f"the public archive could not be written: {message}")


def _publish_series(data: DataDir, settings: Settings, items: Mapping[str, Collection[str]],
                    clock: Callable[[], datetime], log: RunLog) -> None:
    for target, sent_items in items.items():
        numbers = sorted({int(i) for i in sent_items if i.isdigit()})
        if not numbers:
            continue
        try:
            service = svc.find_service(data, target)
        except (NotFound, BadInput):
            continue  # a newsletter job
        if not service.archive:
            continue
        letters = svc.load_letters(service)
        have = {e.ref for e in entries(data, service.name) if e.kind == "letter"}
        stamp = format_time(clock())
        new = [Entry(stamp, "letter", str(n)) for n in numbers
               if n <= len(letters) and letters[n - 1].public and str(n) not in have]
        if new:
            add_entries(data, service.name, new)
            build(data, settings, service)
            log.write(f"{service.name}: published in the archive: "
                      + ", ".join(f"letter {e.ref}" for e in new))


def _publish_newsletters(data: DataDir, settings: Settings, sent: Mapping[str, int],
                         clock: Callable[[], datetime], log: RunLog) -> None:
    if not data.letters.is_dir():
        return
    for marker in sorted(data.letters.glob("*.publish")):
        job = marker.stem
        try:
            check_name(job)
        except BadInput:
            continue  # not one of ours (a file put there by hand)
        if sent.get(job):
            files.atomic_write(marker, SENT + "\n")
        if data.job(job, "job").exists():
            continue  # still being sent
        went_out = (files.read_text(marker, "") or "").strip() == SENT
        kept = kept_newsletter(data, job)
        for name in kept.services if went_out and kept else []:
            try:
                service = svc.find_service(data, name)
            except (NotFound, BadInput):
                continue
            add_entries(data, name, [Entry(format_time(clock()), "news", job)])
            if service.archive:
                build(data, settings, service)
                log.write(f"{name}: published in the archive: newsletter {job}")
        files.remove(marker)  # only now: a build that failed is tried again by the next run


# --- the switch ------------------------------------------------------------------------------

def switch(data: DataDir, settings: Settings, name: str, on: bool) -> svc.Service:
    """``vykhukhol archive on|off`` and the admin's switch: the service's
    ``archive`` flag, and its folder built (on) or removed (off)."""
    service = svc.edit_service(data, name, {"archive": "yes" if on else "no"})
    if on:
        catch_up(data, service)
    build(data, settings, service)
    return service


def catch_up(data: DataDir, service: svc.Service) -> None:
    """Public series letters that went out while the archive was off (the
    runs publish only into an archive that is on): published now, dated now.
    One read of the subscriber file, at the owner's click, never in a run."""
    try:
        letters = svc.load_letters(service)
    except BadInput:
        return
    have = {e.ref for e in entries(data, service.name) if e.kind == "letter"}
    waiting = [letter.number for letter in letters if letter.public and str(letter.number) not in have]
    if not waiting:
        return
    furthest = max((sub.sent for sub in subs.subscribers(service.subscribers_path)), default=0)
    stamp = format_time(now())
    add_entries(data, service.name, [Entry(stamp, "letter", str(n)) for n in waiting
                                     if n <= furthest])
