"""The report a finished newsletter leaves the admin, in Russian (SPEC 5 step 2)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from vykhukhol import newsletters
from vykhukhol import services as svc
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, VykhukholError
from vykhukhol.timeutil import parse_time


def subject_as_sent(data: DataDir, job: newsletters.Job, subject: str, moment: datetime) -> str:
    """The job's subject as its recipients read it, for a recipient without a
    name (the raw template if it cannot be rendered any more)."""
    from vykhukhol import render

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
    try:
        moment = parse_time(stamp) if isinstance(stamp, str) else stamp
        if moment is None:
            return "-"
        return f"{moment.astimezone(ZoneInfo(zone)):%Y-%m-%d %H:%M:%S} ({zone})"
    except (BadInput, OverflowError, ValueError):  # a hand-edited job file: show it as it is
        return str(stamp)


def newsletter_report(job: newsletters.Job, subject: str, count: dict[str, int],
                      failed: list[str], moment: datetime, zone: str = "UTC") -> str:
    subject = " ".join(subject.split())  # one line of the report, whatever the admin typed
    lines = [
        f"Новостная рассылка «{subject}» завершена.",
        "",
        f"Службы: {', '.join(job.services)}",
        f"Получателей в списке: {count['total']}",
        f"Отправлено писем: {count['sent']}",
        f"Отказов доставки: {count['failed']}",
        f"Пропущено (адрес отписался или удалён): {count['skipped']}",
        f"Под сомнением (запуск прервали во время отправки): {count['in doubt']}",
        "",
        f"Начата: {_local(job.values.get('first_run'), zone)}",
        f"Завершена: {_local(moment, zone)}",
        f"Запусков рассыльщика: {int(job.values.get('runs', '0') or 0)}",
    ]
    if failed:
        lines += ["", "Адреса с отказом доставки:"] + [f"  {email}" for email in failed[:1000]]
        if len(failed) > 1000:
            lines.append(f"  … и ещё {len(failed) - 1000}")
    return "\n".join(lines) + "\n"
