"""The cron that stopped (docs/using/alerts.md#cron-silent): on shared hosting a broken cron job fails
in silence, and a list that sends nothing looks just like a list with nothing
to send. Vykhukhol has no daemon to notice; its pages do.

Every run, full or idle, appends to ``data/log/run.log``, and nothing else
does (a page's events go to ``data/log/pages.log``: a stranger's posts must
not pass for runs), so that file's mtime is the last time a run wrote. A full run notes in
``data/state/cron`` the median gap between the last :data:`RUNS_MEASURED`
runs (their "run ended" lines, idle ticks included): the pace the cron keeps.
A page request (subscribe, confirm, the own page, the admin) asks
:func:`due_alert`: when no run has started for ``max(1 h, 3 × that median)``
it sends the alert "cron is silent" after its answer, at most one every
:data:`ALERT_EVERY` seconds; the Status page shows the last run's time in red
and ``vykhukhol status`` exits 1 (:func:`silence`).

Light on purpose: the question is asked on every page, so it costs one
``stat`` and one small file; nothing is imported for it but :mod:`os`,
:mod:`time` and the files package the page has already.
"""

from __future__ import annotations

import os
import time

from vykhukhol.files import kv

TYPE_CHECKING = False
if TYPE_CHECKING:
    from vykhukhol.datadir import DataDir
    from vykhukhol.settings import Settings

SILENT_LEAST = 3600       # seconds without a run before the cron counts as silent, at least…
SILENT_FACTOR = 3         # …or this many times the median gap between runs, if longer
RUNS_MEASURED = 20        # runs whose gaps make the median
ALERT_EVERY = 6 * 3600    # seconds between two "cron is silent" alerts
TAIL_BYTES = 64 * 1024    # of run.log read for the gaps: far more than 20 runs' last lines


def _log(root: str) -> str:
    return os.path.join(root, "log", "run.log")


def _state(root: str) -> str:
    return os.path.join(root, "state", "cron")


def last_run(root: str) -> float | None:
    """When a run last started (the run log's mtime), or None: no run ever."""
    try:
        return os.stat(_log(root)).st_mtime
    except OSError:
        return None


def line(root: str) -> float:
    """Seconds without a run after which the cron counts as silent."""
    try:
        gap = float(kv.read_kv(_state(root)).get("median_gap", "0") or 0)
    except (OSError, ValueError):
        gap = 0.0
    return max(SILENT_LEAST, SILENT_FACTOR * gap)


def silence(root: str, moment: float | None = None) -> float | None:
    """Seconds since the last run when that is past :func:`line`, else None (a
    site where no run ever started has no cron to miss yet)."""
    last = last_run(root)
    if last is None:
        return None
    quiet = (time.time() if moment is None else moment) - last
    return quiet if quiet > line(root) else None


def due_alert(root: str, moment: float | None = None) -> bool:
    """Whether a page should send the alert now: silent, and not told for
    :data:`ALERT_EVERY` seconds."""
    if silence(root, moment) is None:
        return False
    told = _told(kv.read_kv(_state(root)))
    return told is None or (time.time() if moment is None else moment) - told >= ALERT_EVERY


def _told(values: dict[str, str]) -> float | None:
    try:
        return float(values["told"])
    except (KeyError, ValueError):
        return None


def note_gaps(data: DataDir) -> None:
    """At the end of a full run: the median gap between the last runs, kept
    for :func:`line` (written only when it changed; never raises)."""
    import vykhukhol.files.runlog as runlog
    from vykhukhol.timeutil import parse_time

    path = data.log / "run.log"
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - TAIL_BYTES))
            tail = handle.read().decode("utf-8", "replace").splitlines()[1:]
    except OSError:
        return
    ends = []
    for text in tail:
        entry = runlog.parse_line(text)
        if entry is not None and entry.message.startswith(runlog.ENDED):
            try:
                ended = parse_time(entry.time)
                if ended is not None:
                    ends.append(ended.timestamp())
            except Exception:  # noqa: BLE001 - a torn line counts nothing
                continue
    ends = ends[-RUNS_MEASURED:]
    gaps = [b - a for a, b in zip(ends, ends[1:], strict=False) if b >= a]
    if not gaps:
        return
    gaps.sort()  # the median (statistics.median, without importing fractions and decimal)
    middle = len(gaps) // 2
    value = str(int(gaps[middle] if len(gaps) % 2 else (gaps[middle - 1] + gaps[middle]) / 2))

    def change(values: dict[str, str]) -> None:
        values["median_gap"] = value

    from vykhukhol.errors import VykhukholError

    try:
        if kv.read_kv(data.state / "cron").get("median_gap") != value:
            kv.change_kv(data.state / "cron", change)
    except (VykhukholError, OSError):
        return  # a disk that refuses costs the line its precision (an hour), never the run


def alert(data: DataDir, settings: Settings, moment: float | None = None) -> bool:
    """Send "cron is silent" to the admin, once per :data:`ALERT_EVERY` however
    many pages ask at once (claimed under the state file's lock). Writes
    nothing to the run log: its mtime is what says whether runs start.
    Returns True when a letter went."""
    from datetime import datetime, timezone

    import vykhukhol.watch.alerts as alerts
    from vykhukhol.timeutil import format_duration

    moment = time.time() if moment is None else moment
    quiet = silence(str(data.root), moment)
    if quiet is None:
        return False
    claimed = False

    def claim(values: dict[str, str]) -> None:
        nonlocal claimed
        told = _told(values)
        if told is None or moment - told >= ALERT_EVERY:
            values["told"] = str(int(moment))
            claimed = True

    kv.change_kv(data.state / "cron", claim)
    if not claimed:
        return False
    last = datetime.fromtimestamp(moment - quiet, timezone.utc)
    return alerts.raise_alert(data, settings, _PageLog(), alerts.CRON_SILENT,
                              datetime.fromtimestamp(moment, timezone.utc),
                              silence=format_duration(int(quiet) // 60 * 60 or 60),
                              last=last.strftime("%Y-%m-%d %H:%M UTC"),
                              every=format_duration(int(line(str(data.root)))))


class _PageLog:
    """Where raise_alert's log lines go from a page: the web server's error log,
    never the run log (a line there would look like a run)."""

    lease = "page"

    def alert(self, message: str) -> None:
        import sys

        print(f"vykhukhol: {message}", file=sys.stderr)

    error = alert
