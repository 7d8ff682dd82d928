"""The status page, the admin's front page: mode and its switch, what blocks
a run, locks, warnings, the 30-day chart, recent runs and alerts, and the
cron line to paste. (Named dashboard, not status: one letter from states.)"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol.bounces import record
from vykhukhol.errors import BadInput
from vykhukhol.files import kv, runlog
from vykhukhol.i18n import duration, tr
from vykhukhol.sender import doors as locks_mod
from vykhukhol.services import demo
from vykhukhol.services import subscribers as subs
from vykhukhol.states import Outcome
from vykhukhol.timeutil import UTC, format_time, now
from vykhukhol.watch import alerts, cronwatch, health, pace, selfblock
from vykhukhol.web.admin.core import Admin, local_time
from vykhukhol.web.admin.login import remember_browser
from vykhukhol.web.http import Response

CHART_DAYS = 30


def status(admin: Admin, args: dict) -> Response:
    data, settings = admin.data, admin.settings
    locks = []
    for lock in locks_mod.all_locks(data):
        holder = lock.holder()
        if holder:
            age = int(datetime.now(UTC).timestamp() - holder.since)
            locks.append((str(lock.busy.relative_to(data.root)), holder.lease, duration(admin.lang, max(age, 0))))
    entries = runlog.recent(data, 2000)
    cron = cron_url(settings, admin.cgi_dir)

    last = cronwatch.last_run(str(data.root))
    last_run = {"time": format_time(datetime.fromtimestamp(last, UTC)) if last else "",
                "silent": cronwatch.silence(str(data.root)) is not None}

    return remember_browser(admin, admin.page(
        "status.html", mode=settings["mode"], block=selfblock.block_reason(data), locks=locks,
        runs=recent_runs(entries, admin.lang, lambda t: local_time(settings, t))[:15], alerts=[runlog.Entry(e.time, e.lease, e.level, alerts.shown(e.message, admin.lang))
                                 for e in entries if e.level == "alert"][-15:][::-1],
        last_run=last_run, cron_url=cron, crontab=f"*/5 * * * * wget -q -t 1 -O /dev/null {cron}" if cron else "",
        paces=pace.shown(data, settings, now()),
        warnings=warnings(admin), steps=first_steps(admin), hosted=not demo.is_local(settings["site_url"]), chart=chart(admin), local=lambda t: local_time(settings, t)))


def first_steps(admin: Admin) -> list[dict]:
    """What a new site still lacks, in order, each with the page that does it
    (docs/using/admin.md#admin-first-steps); a step done is not shown. The form
    counts as on the site once anyone has subscribed through it (or was imported)."""
    services = list(svc.load_services(admin.data))
    steps = []
    if not services:
        steps.append({"id": "step-service", "href": admin.url("/services") + "#new-service",
                      "text": admin._("Create a service: the list people subscribe to.")})
    if not any(next(iter(subs.subscribers(s.subscribers_path)), None) for s in services):
        where = f"/services/{services[0].name}" if services else "/services"
        steps.append({"id": "step-form", "href": admin.url(where) + "#form-for-site",
                      "text": admin._("Put the service's subscription form on your site.")})
    if admin.settings["mode"] != "working":
        steps.append({"id": "step-working", "href": "#mode-switch",
                      "text": admin._("Switch to working mode, so that letters go to subscribers.")})
    return steps


def cron_url(settings: settings_mod.Settings, cgi_dir: Path) -> str:
    scripts = sorted(cgi_dir.glob("cron-*.py"))
    return f"{settings['site_url']}/cgi/{scripts[0].name}" if scripts else ""


def recent_runs(entries: list[runlog.Entry], lang: str = "en",
                local: Callable[[str], str] = str) -> list[dict]:
    """Runs from the log, newest first: lease, start, duration, letters, why it
    stopped (the log has the outcome's English label; the page shows ``lang``'s,
    and the idle tick's "nothing due before" with the time as ``local`` shows it)."""
    outcomes = {outcome.label("en"): outcome for outcome in Outcome}
    idle = re.compile(r"all done \(nothing due before (\S+)\)")
    runs: dict[str, dict] = {}
    for entry in entries:
        run = runs.setdefault(entry.lease, {"lease": entry.lease, "start": entry.time,
                                            "end": "", "letters": "", "why": "", "alerts": 0})
        if entry.message.startswith(runlog.ENDED):
            run["end"] = entry.time
            found = runlog.parse_ended(entry.message)
            if found:
                run["duration"], run["why"], run["letters"] = found
                if run["why"] in outcomes:
                    run["why"] = outcomes[run["why"]].label(lang)
                elif until := idle.fullmatch(run["why"]):
                    run["why"] = tr(lang, "nothing due before {time}", time=local(until.group(1)))
        if entry.level == "alert":
            run["alerts"] += 1
    # Lines of the web pages ("web", "web-…") are no runs: no row of their own.
    return [r for r in runs.values() if r["lease"] != "web" and not r["lease"].startswith("web-")][::-1]


def warnings(admin: Admin) -> list[str]:
    return health.warnings(admin.data, admin.settings, admin.cgi_dir, admin._, admin._n,
                           lambda exc: exc.text(admin.lang))


def chart(admin: Admin) -> dict:
    """Subscriptions, letters handed over and bounces per day over the last 30
    days, as SVG bars (the bounces beside the letters)."""
    zone = ZoneInfo(admin.settings["timezone"])
    today = now().astimezone(zone).date()
    days = [today - timedelta(days=i) for i in range(CHART_DAYS - 1, -1, -1)]
    joined = dict.fromkeys(days, 0)
    # Only times near the chart are moved to the zone: one at the calendar's
    # ends (0001-01-01 typed into a file) would overflow there.
    since, until = now() - timedelta(days=CHART_DAYS + 1), now() + timedelta(days=1)
    for service in svc.load_services(admin.data):
        for sub in subs.subscribers(service.subscribers_path):
            if sub.subscribed and since <= sub.subscribed <= until:
                day = sub.subscribed.astimezone(zone).date()
                if day in joined:
                    joined[day] += 1
    sent_by_day = kv.read_kv(admin.data.state / "daily")
    sent = {day: int(sent_by_day.get(day.isoformat(), "0") or 0) for day in days}
    bounced_by_day = record.per_day(admin.data)
    bounced = {day: bounced_by_day.get(day.isoformat(), 0) for day in days}
    top = max([1, *joined.values(), *sent.values(), *bounced.values()])
    width, height = 600, 120
    step = width / CHART_DAYS
    bars, columns, labels = [], [], []
    for index, day in enumerate(days):
        x = index * step
        for offset, value, kind in ((0.06, joined[day], "joined"), (0.36, sent[day], "sent"),
                                    (0.66, bounced[day], "bounced")):
            h = round(value / top * (height - 10), 1)
            bars.append({"x": round(x + offset * step, 1), "y": round(height - h, 1),
                         "w": round(step * 0.28, 1), "h": h, "kind": kind})
        # One invisible column a day carries both values, so hovering anywhere
        # over a day shows them.
        columns.append({"x": round(x, 1), "w": round(step, 1), "title": admin._(
            "{day}: {joined}, {sent}, {bounced}", day=day.isoformat(),
            joined=admin._n("{n} subscription", "{n} subscriptions", joined[day]),
            sent=admin._n("{n} letter handed over", "{n} letters handed over", sent[day]),
            bounced=admin._n("{n} bounce", "{n} bounces", bounced[day]))})
        if (CHART_DAYS - 1 - index) % 7 == 0:  # a label a week, today's included
            labels.append({"x": round(x + step / 2, 1), "text": f"{day:%d.%m}"})
    return {"bars": bars, "columns": columns, "labels": labels, "width": width,
            "height": height, "top": top, "joined": sum(joined.values()),
            "sent": sum(sent.values()), "bounced": sum(bounced.values()), "first": days[0].isoformat(), "last": days[-1].isoformat()}


def change_mode(admin: Admin, args: dict) -> Response:
    mode = admin.request.form().get("mode", "")
    if mode not in settings_mod.MODES:
        raise BadInput(admin._("Unknown mode."))
    cleared = locks_mod.set_mode(admin.data, admin.data.settings, mode)
    message = admin._("Mode: {mode}.", mode=mode)
    if cleared:
        message += " " + admin._("Cleared: {what}.", what=", ".join(cleared))
    return admin.done("/", message)
