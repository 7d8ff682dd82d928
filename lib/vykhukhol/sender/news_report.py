"""The report a finished newsletter leaves the admin, in the site's
``language`` (docs/design/run.md#run-steps, step 2). Letters the mail server accepted are "handed
over", never "sent" or "delivered" (docs/using/newsletters.md#newsletter-history):
what bounces later is
counted in the newsletters' history (:mod:`vykhukhol.newsletters.history`)."""

from __future__ import annotations

from datetime import datetime

from vykhukhol import newsletters
from vykhukhol import services as svc
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, VykhukholError
from vykhukhol.i18n import tr
from vykhukhol.timeutil import parse_time


def subject_as_sent(data: DataDir, job: newsletters.Job, subject: str, moment: datetime) -> str:
    """The job's subject as its recipients read it, for a recipient without a
    name (the raw template if it cannot be rendered any more)."""
    from vykhukhol import render  # Jinja2: only when a report is drawn

    title = ""
    for name in job.services:
        try:
            title = svc.find_service(data, name).title
            break
        except VykhukholError:
            continue
    context = {"name": "", "email": "", "service": title, "unsubscribe_url": "", "manage_url": "",
               "date": moment.strftime("%Y-%m-%d")}
    try:
        return " ".join(render.render(subject, context, "subject").split()) or subject
    except BadInput:
        return subject


def _local(stamp: str | datetime | None, zone: str) -> str:
    """A time of the job file shown in ``timezone``, as the admin pages show times."""
    from zoneinfo import ZoneInfo  # only a finished job's report shows times

    try:
        moment = parse_time(stamp) if isinstance(stamp, str) else stamp
        if moment is None:
            return "-"
        return f"{moment.astimezone(ZoneInfo(zone)):%Y-%m-%d %H:%M:%S} ({zone})"
    except (BadInput, OverflowError, ValueError):  # a hand-edited job file: show it as it is
        return str(stamp)


def newsletter_report(job: newsletters.Job, subject: str, count: dict[str, int],
                      hand: dict[str, int], failed: list[str], moment: datetime,
                      zone: str = "UTC", lang: str = "ru") -> str:
    """The report's text: ``count`` is the ledger's states (:func:`newsletters.counts`),
    ``hand`` what it says of the hand-over (:func:`newsletters.handed_counts`),
    ``failed`` the addresses refused at hand-over."""
    subject = " ".join(subject.split())  # one line of the report, whatever the admin typed
    bounced = hand["handed"] - count["sent"]  # handed over, and already back
    lines = [
        tr(lang, "Newsletter “{subject}” is finished.", subject=subject),
        "",
        tr(lang, "Services: {services}", services=", ".join(job.services)),
        tr(lang, "Recipients on the list: {n}", n=count["total"]),
        tr(lang, "Letters handed over to the mail server: {n}", n=hand["handed"]),
        tr(lang, "Refused at hand-over: {n}", n=hand["failed"]),
        tr(lang, "Returned as undeliverable so far: {n}", n=bounced),
        tr(lang, "Skipped (the address unsubscribed or was deleted): {n}", n=count["skipped"]),
        tr(lang, "In doubt (a run was interrupted while handing it over): {n}",
           n=count["in doubt"]),
        "",
        tr(lang, "Started: {time}", time=_local(job.values.get("first_run"), zone)),
        tr(lang, "Finished: {time}", time=_local(moment, zone)),
        tr(lang, "Sender runs: {n}", n=int(job.values.get("runs", "0") or 0)),
        "",
        tr(lang, "A letter handed over is not yet a letter delivered: bounces, complaints and "
                 "unsubscribes that come later are counted in the newsletters' history (admin, "
                 "Newsletters; or `vykhukhol newsletter history`)."),
    ]
    if failed:
        lines += ["", tr(lang, "Addresses refused at hand-over or returned:")]
        lines += [f"  {email}" for email in failed[:1000]]
        if len(failed) > 1000:
            lines.append("  " + tr(lang, "… and {n} more", n=len(failed) - 1000))
    return "\n".join(lines) + "\n"


def report_subject(subject: str, lang: str = "ru") -> str:
    """The report letter's subject."""
    return tr(lang, "Newsletter finished: {subject}", subject=subject)[:200]
