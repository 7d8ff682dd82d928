"""When a newsletter will be done, and when a series' backlog clears
(docs/using/newsletters.md#forecast): an estimate from what the sender is allowed to do and what the cron
was seen doing, not a promise.

The pace, in letters per hour, is the least of: ``news_per_run`` (or
``serial_per_run``) letters per run times the runs an hour the cron was
actually seen to start (:mod:`.cronwatch`'s median gap; 5 minutes, the
crontab line the Status page offers, until there is one), ``hourly_limit``,
and the pace the mail server taught the site (``data/state/pace``, when it
is there). ``daily_limit`` caps each local day. The clock is walked an hour
at a time from the later of now and the start, so a daily cap that runs out
at noon moves the rest to the next day. Newsletters go first in a run
(docs/design/run.md#run-steps, step 2), so their estimate ignores the series; a series' estimate takes
the caps the newsletters leave as they are now (none waiting: all of them).

A braked newsletter (:mod:`.brakes`) has no finish to forecast: it sends
nothing until the admin resumes it, and :func:`paused` says so and why.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from vykhukhol.files import kv
from vykhukhol.i18n import ntr, tr
from vykhukhol.services import subscribers as subs
from vykhukhol.services.rules import LETTER, next_action, rules_of
from vykhukhol.watch import brakes, pace

if TYPE_CHECKING:
    from vykhukhol.datadir import DataDir
    from vykhukhol.settings import Settings

def _(text: str) -> str:
    """Marks a text for the catalog (tools/i18n.py extract); the caller translates it."""
    return text


WEEKDAYS = (_("Monday"), _("Tuesday"), _("Wednesday"), _("Thursday"), _("Friday"),
            _("Saturday"), _("Sunday"))
DEFAULT_GAP = 300          # seconds between runs when none was seen yet (the */5 crontab line)
HORIZON_HOURS = 24 * 366   # past a year the estimate says "more than a year"


def cron_gap(data: DataDir) -> float:
    """Seconds between runs, as the cron was seen to keep them."""
    try:
        gap = float(kv.read_kv(data.state / "cron").get("median_gap", "") or 0)
    except (OSError, ValueError):
        gap = 0.0
    return gap if gap > 0 else DEFAULT_GAP


def learned_pace(data: DataDir, moment: datetime, hourly_limit: int) -> float | None:
    """The lowest pace (letters an hour) a mail server allows the site at
    ``moment`` (:mod:`.pace`: halved when it said "too many", a tenth more each
    clean hour), or None: no server taught one."""
    found = [learned.now(moment, hourly_limit) for learned in pace.learned(data)
             if learned.binds(moment, hourly_limit)]
    return min(found) if found else None


def hourly(per_run: int, gap: float, hourly_limit: int, pace: float | None) -> float:
    """Letters an hour: the runs' share, under the caps and the learned pace."""
    rate = per_run * 3600.0 / max(gap, 1.0)
    if hourly_limit:
        rate = min(rate, hourly_limit)
    if pace is not None:
        rate = min(rate, pace)
    return max(rate, 0.0)


def finish(remaining: float, start: datetime, moment: datetime, per_hour: float,
           daily_limit: int, zone: str) -> datetime | None:
    """When ``remaining`` letters will have left at ``per_hour``, at most
    ``daily_limit`` a local day (0: no cap); None past :data:`HORIZON_HOURS`."""
    if remaining <= 0:
        return max(start, moment)
    if per_hour <= 0:
        return None
    tz = ZoneInfo(zone)
    clock = max(start, moment)
    day = clock.astimezone(tz).date()
    sent_today: float = 0
    for _ in range(HORIZON_HOURS):
        local = clock.astimezone(tz)
        if local.date() != day:
            day, sent_today = local.date(), 0
        room = per_hour if not daily_limit else min(per_hour, daily_limit - sent_today)
        if room >= remaining:
            return clock + timedelta(hours=remaining / per_hour)
        remaining -= room
        sent_today += room
        clock += timedelta(hours=1)
    return None


def describe(when: datetime | None, moment: datetime, lang: str, zone: str) -> str:
    """ "about 3 days: finishes Thursday 14:00", in ``lang``."""
    if when is None:
        return tr(lang, "more than a year")
    local = when.astimezone(ZoneInfo(zone))
    hours = (when - moment).total_seconds() / 3600
    at = tr(lang, "{day} {time}", day=tr(lang, WEEKDAYS[local.weekday()]), time=f"{local:%H:%M}")
    if hours < 1:
        return tr(lang, "within the hour: finishes {at}", at=f"{local:%H:%M}")
    if hours < 36:
        return ntr(lang, "about {n} hour: finishes {at}", "about {n} hours: finishes {at}",
                   round(hours), at=at)
    return ntr(lang, "about {n} day: finishes {at}", "about {n} days: finishes {at}",
               round(hours / 24), at=at if hours < 24 * 7 else f"{local:%Y-%m-%d %H:%M}")


def paused(brake: brakes.Brake, lang: str) -> str:
    """What a braked newsletter's forecast says instead of a finish, in ``lang``."""
    why = brakes.reason(brake, lambda text, **values: tr(lang, text, **values))
    return tr(lang, "paused, {why}: it finishes only after it is resumed", why=why)


def newsletters_paused(data: DataDir, settings: Settings, moment: datetime,
                       lang: str) -> dict[str, str]:
    """Job name → :func:`paused`'s words, for every braked newsletter."""
    return {brake.name: paused(brake, lang)
            for brake in brakes.status(data, settings, moment).values()
            if brake.kind == brakes.NEWSLETTER}


def newsletter_finish(data: DataDir, settings: Settings, remaining: int, start: datetime,
                      moment: datetime) -> datetime | None:
    """A newsletter's expected finish under this site's caps and cron."""
    per_hour = hourly(settings["news_per_run"], cron_gap(data), settings["hourly_limit"],
                      learned_pace(data, moment, settings["hourly_limit"]))
    return finish(remaining, start, moment, per_hour, settings["daily_limit"],
                  settings["timezone"])


def series_due(settings: Settings, service, moment: datetime) -> tuple[int, int]:
    """(letters due now, letters due by the end of the local day) of a series:
    each subscriber's next letter under the service's rules (the subscriber
    file read once; for the admin and the CLI, never for a run)."""
    rules = rules_of(settings, service)
    local = moment.astimezone(ZoneInfo(settings["timezone"]))
    midnight = (local + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    now_count = today = 0
    for sub in subs.subscribers(service.subscribers_path):
        action = next_action(sub, rules)
        if action.kind != LETTER or action.due is None:
            continue
        if action.due <= moment:
            now_count += 1
        if action.due < midnight:
            today += 1
    return now_count, today


def backlog_clears(data: DataDir, settings: Settings, due_now: int,
                   moment: datetime) -> datetime | None:
    """When a series' letters due now will all have left."""
    per_hour = hourly(settings["serial_per_run"], cron_gap(data), settings["hourly_limit"],
                      learned_pace(data, moment, settings["hourly_limit"]))
    return finish(due_now, moment, moment, per_hour, settings["daily_limit"],
                  settings["timezone"])
