"""The outbox (mail.transport = file): the newest letters and one letter shown;
in debug mode, what waits for working mode as well (no letter leaves in debug,
so an empty outbox is not the whole truth)."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from vykhukhol import mail, newsletters
from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol.errors import BadInput, NotFound, VykhukholError
from vykhukhol.files.kv import time_of
from vykhukhol.members import unsent
from vykhukhol.states import LedgerState
from vykhukhol.timeutil import now
from vykhukhol.watch import forecast
from vykhukhol.web.admin.core import Admin
from vykhukhol.web.http import Response

OUTBOX_SHOWN = 200      # newest outbox letters listed


def _local_date(settings: settings_mod.Settings, header: str) -> str:
    """A Date header shown in the settings' time zone, like every other time here."""
    from email.utils import parsedate_to_datetime

    try:
        moment = parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError):  # not a date: shown as written
        return header
    try:
        return moment.astimezone(ZoneInfo(settings["timezone"])).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, ValueError):  # a date at the calendar's ends: shown as written
        return header


def outbox_page(admin: Admin, args: dict) -> Response:
    letters = []
    for path in mail.list_outbox(admin.data.outbox)[:OUTBOX_SHOWN]:
        try:
            shown = mail.show_outbox(path)
        except VykhukholError:
            continue
        letters.append({"file": path.name, "to": shown.header("To"),
                        "subject": shown.header("Subject"),
                        "date": _local_date(admin.settings, shown.header("Date"))})
    return admin.page("outbox.html", letters=letters, total=len(mail.list_outbox(admin.data.outbox)),
                      waiting=waiting_for_working_mode(admin))


def waiting_for_working_mode(admin: Admin) -> dict | None:
    """In debug mode (docs/using/admin.md#admin-outbox), the letters that go
    once the mode is working: the confirmations noted for the first working
    run, the series letters due now of each enabled service, and the pending
    rows of each newsletter whose start has come. None in working mode."""
    if admin.settings["mode"] == "working":
        return None
    moment = now()
    zone = ZoneInfo(admin.settings["timezone"])

    def local(noted: str) -> str:
        when = time_of({"t": noted}, "t")
        return when.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S") if when else noted

    confirmations = [{"service": note.service, "email": note.email, "noted": local(note.noted)}
                     for note in unsent.notes(admin.data)]
    series = []
    for service in svc.load_services(admin.data):
        if not service.enabled:
            continue  # its letters wait for the switch, not for the mode
        try:
            due, _ = forecast.series_due(admin.settings, service, moment)
        except BadInput:  # letters that cannot be read: the service's page says why
            continue
        if due:
            series.append({"service": service.name, "count": due})
    news = []
    for job in newsletters.list_jobs(admin.data):
        if job.start > moment:
            continue
        pending = newsletters.counts(admin.data.job(job.name, "list"))[LedgerState.PENDING.value]
        if pending:
            news.append({"name": job.name, "count": pending})
    return {"confirmations": confirmations, "series": series, "newsletters": news,
            "any": bool(confirmations or series or news)}


def outbox_letter(admin: Admin, args: dict) -> Response:
    path = admin.data.outbox / args["file"]
    if path.parent != admin.data.outbox or not path.is_file():
        raise NotFound(admin._("No such letter."))
    shown = mail.show_outbox(path)  # whatever the file holds: never a 500
    return admin.page("outbox_letter.html", file=args["file"], headers=shown.headers,
                      plain=own_links(shown.plain, admin.settings["site_url"]), html=shown.html)


def own_links(text: str, site_url: str) -> list[tuple[str, bool]]:
    """``text`` in pieces, each (piece, is a link): the links to this
    installation's own pages (the confirmation link the local demo is tried
    with) are made clickable; no other address is, since a subscriber's name
    in a letter could carry one."""
    import re

    own = re.compile(re.escape(site_url) + r"/[^\s<>\"'`]*")
    pieces: list[tuple[str, bool]] = []
    at = 0
    for found in own.finditer(text):
        url = found.group(0).rstrip(".,;:!?)")  # the end of a sentence is not the link's
        pieces += [(text[at:found.start()], False), (url, True)]
        at = found.start() + len(url)
    pieces.append((text[at:], False))
    return [piece for piece in pieces if piece[0]]
