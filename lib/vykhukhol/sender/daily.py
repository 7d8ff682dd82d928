"""Letters sent per day (``data/state/daily``), for the admin's chart: 60 days kept; and
the day's letters to the big mailbox providers (:mod:`vykhukhol.watch.receivers`)."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import vykhukhol.watch.receivers as receivers
from vykhukhol.errors import VykhukholError
from vykhukhol.files import kv
from vykhukhol.sender.runtime import Run


def count_daily(run: Run) -> None:
    """Letters sent per day, for the admin's chart (60 days kept)."""
    total = sum(run.report.sent.values())
    if not total:
        return
    day = run.now().astimezone(ZoneInfo(run.settings["timezone"])).date().isoformat()

    def change(values: dict[str, str]) -> None:
        values[day] = str(int(values.get(day, "0") or 0) + total)
        for old in sorted(values)[:-60]:
            del values[old]
    try:
        kv.change_kv(run.data.state / "daily", change)
    except VykhukholError as exc:
        run.log.error(f"the daily count could not be written: {exc.message}")
    try:  # the same day's letters to the big providers (Gmail's bulk line)
        receivers.note_run(run.data.state, day, {group: n for group, n in run.report.receivers.items()
                                                 if group is not None})
    except VykhukholError as exc:
        run.log.error(f"the letters per provider could not be written: {exc.message}")
