"""Services and DBs: the list, adding, editing, enabling, deleting, and the
subscribe form's HTML to paste into a site."""

from __future__ import annotations

from pathlib import Path

from vykhukhol import archive
from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol.archive import publish
from vykhukhol.errors import BadInput, NotFound, VykhukholError
from vykhukhol.i18n import duration, tr
from vykhukhol.services import subscribers as subs
from vykhukhol.timeutil import now
from vykhukhol.watch import forecast
from vykhukhol.web.admin.brakes import braked, resume
from vykhukhol.web.admin.core import Admin
from vykhukhol.web.admin.feedbox import feed_context
from vykhukhol.web.http import Response

#: The DB a site's first service is created in, when there is no DB yet.
FIRST_DB = "main"


def services_page(admin: Admin, args: dict) -> Response:
    rows = []
    for service in svc.load_services(admin.data):
        rows.append({"service": service, "counts": subs.counts(service.subscribers_path),
                     "letters": svc.letter_count(service)})

    return admin.page("services.html", rows=rows, dbs=svc.list_dbs(admin.data), form={}, error="",
                      braked=braked(admin, "service"), first_db=FIRST_DB)


def db_add(admin: Admin, args: dict) -> Response:
    name = admin.request.form().get("db", "").strip()
    svc.add_db(admin.data, name)
    return admin.done("/services", admin._("DB {name} created.", name=name))


def service_add(admin: Admin, args: dict) -> Response:
    form = admin.request.form()
    name = form.get("name", "").strip()
    try:
        if form.get("db", "") == FIRST_DB and not svc.list_dbs(admin.data):
            svc.add_db(admin.data, FIRST_DB)  # the first service brings its DB along
        svc.add_service(admin.data, name, form.get("db", ""), {
            k: form.get(k, "") for k in ("title", "from_name", "from_email", "delete_finished",
                                         "send_window")})
    except VykhukholError as exc:
        rows = [{"service": s, "counts": subs.counts(s.subscribers_path),
                 "letters": svc.letter_count(s)} for s in svc.load_services(admin.data)]
        return admin.page("services.html", 400, rows=rows, dbs=svc.list_dbs(admin.data),
                          form=form, error=exc.text(admin.lang), first_db=FIRST_DB)
    return admin.done(f"/services/{name}", admin._(
        "Service {name} created, disabled: its series letters wait until you enable it; "
        "sign-ups and newsletters do not wait.", name=name))


def _service(admin: Admin, name: str) -> svc.Service:
    try:
        return svc.find_service(admin.data, name)
    except BadInput:
        raise NotFound(admin._("No such service.")) from None


def _series_notes(service: svc.Service, letters: list[svc.Letter]) -> dict[int, int]:
    """For each position, how many subscribers are already past it (they skip
    a letter inserted there)."""
    counts: dict[int, int] = {}
    for sub in subs.subscribers(service.subscribers_path):
        counts[sub.sent] = counts.get(sub.sent, 0) + 1
    past = {}
    for position in range(1, len(letters) + 2):
        past[position] = sum(c for sent, c in counts.items() if sent >= position)
    return past


def service_page(admin: Admin, args: dict, error: str = "", status: int = 200,
                 form: dict | None = None) -> Response:
    service = _service(admin, args["name"])
    try:
        letters = svc.load_letters(service)
        letters_error = ""
    except BadInput as exc:
        letters, letters_error = [], exc.text(admin.lang)
    snippet = form_snippet(admin.settings, service, admin.data.root)

    moment = now()
    try:
        due_now, due_today = forecast.series_due(admin.settings, service, moment)
        clears = forecast.describe(forecast.backlog_clears(admin.data, admin.settings, due_now,
                                                           moment),
                                   moment, admin.lang, admin.settings["timezone"])
        backlog = {"now": due_now, "today": due_today, "clears": clears}
    except BadInput:  # the letters cannot be read: said above, with the reason
        backlog = None

    return admin.page("service.html", status, service=service, letters=letters,
                      archive_url=archive.index_url(admin.settings, service.name),
                      archive_count=len(archive.entries(admin.data, service.name)),
                      letters_error=letters_error, counts=subs.counts(service.subscribers_path),
                      past=_series_notes(service, letters), snippet=snippet, error=error,
                      form=form or {}, duration=lambda seconds: duration(admin.lang, seconds),
                      backlog=backlog, **feed_context(admin, service))


def form_snippet(settings: settings_mod.Settings, service: svc.Service,
                 root: Path | None = None) -> str:
    """The subscribe form to paste into a site, with the inputs of the fields
    it asks for (docs/using/fields.md#fields-forms; ``root``: the data directory
    that defines them). Escaped although settings
    refuse a site_url with quotes: a hand-edited settings.ini is not checked
    until it is loaded, and the snippet goes into the owner's own pages."""
    from html import escape

    from vykhukhol.web import field_inputs

    lang = settings["language"]  # the words a visitor of the owner's site reads
    action = escape(f"{settings['site_url']}/cgi/subscribe.py")
    # The stamp and the puzzle come from our script when a visitor starts to
    # use the page (docs/using/subscriber-pages.md#subscriber-bots); without
    # JavaScript the form still posts, judged by the honeypot and the caps.
    return (f'<script src="{action}?part=widget.js" defer></script>\n'
            f'<form method="post" action="{action}">\n'
            f'  <input type="hidden" name="service" value="{escape(service.name)}">\n'
            f'  <input type="email" name="email" required placeholder="{escape(tr(lang, "e-mail"))}">\n'
            f'  <input type="text" name="name" placeholder="{escape(tr(lang, "name"))}">\n'
            + (field_inputs.snippet(root, service.form_fields, lang)
               if root is not None and service.form_fields else "")
            + '  <input type="text" name="website" value="" tabindex="-1" autocomplete="off" '
            'style="position:absolute;left:-10000px" aria-hidden="true">\n'
            '  <input type="hidden" name="ts" value="">\n'
            '  <input type="hidden" name="altcha" value="">\n'
            f'{_language_choice(lang) if service.form_language else ""}'
            f'  <button type="submit">{escape(tr(lang, "Subscribe"))}</button>\n</form>')


def _language_choice(lang: str) -> str:
    """The snippet's choice of the reader's language, the site's chosen
    (docs/using/languages.md#reader-language)."""
    from html import escape

    from vykhukhol.i18n import LANGUAGES, t

    options = "".join(f'<option value="{code}"{" selected" if code == lang else ""}>'
                      f'{escape(t(code, "language.name"))}</option>' for code in LANGUAGES)
    return (f'  <select name="language" aria-label="{escape(t(lang, "subscribe.language"))}">'
            f'{options}</select>\n')


def service_edit(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    form = admin.request.form()
    # The switches have buttons of their own, not fields of this form.
    fields = {k: form.get(k, "") for k in svc.SERVICE_FIELDS
              if k not in ("enabled", "archive", "closed")}
    try:
        svc.edit_service(admin.data, service.name, fields)
    except BadInput as exc:
        return service_page(admin, args, exc.text(admin.lang), 400, form)
    return admin.done(f"/services/{service.name}", admin._("Saved."))


def service_toggle(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    enable = args["action"] == "enable"
    svc.edit_service(admin.data, service.name, {"enabled": "yes" if enable else "no"})
    return admin.done(f"/services/{service.name}", admin._("Enabled.") if enable else admin._(
        "Disabled: its series letters wait until you enable it; sign-ups and newsletters "
        "do not wait."))


def service_signups(admin: Admin, args: dict) -> Response:
    """Closed to newcomers, or open again (docs/using/services.md#service-switches);
    the back is to the page the button was on."""
    service = _service(admin, args["name"])
    close = args["action"] == "close"
    svc.edit_service(admin.data, service.name, {"closed": "yes" if close else "no"})
    back = "/services" if admin.request.form().get("back") == "list" else f"/services/{service.name}"
    return admin.done(back, admin._(
        "Service {name} is closed: it takes no sign-ups; those on it still get its letters.",
        name=service.name) if close else admin._("Service {name} is open to sign-ups.",
                                                  name=service.name))


def service_resume(admin: Admin, args: dict) -> Response:
    """A braked service goes on (docs/deliverability/reputation.md#brakes)."""
    name = _service(admin, args["name"]).name
    return resume(admin, "service", name, "/services",
                  admin._("Service {name} resumed: it sends again with the next run.", name=name))


def service_archive(admin: Admin, args: dict) -> Response:
    """The public archive's switch: on writes its pages, off removes them."""
    service = _service(admin, args["name"])
    on = args["action"] == "on"
    publish.switch(admin.data, admin.settings, service.name, on)
    return admin.done(f"/services/{service.name}",
                      admin._("The public archive is on.") if on else
                      admin._("The public archive is off; its pages are removed."))


def service_delete_form(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    return admin.page("confirm_delete.html", service=service,
                      counts=subs.counts(service.subscribers_path))


def service_delete(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    if admin.request.form().get("confirm_name") != service.name:
        return admin.page("confirm_delete.html", 400, service=service,
                          counts=subs.counts(service.subscribers_path),
                          error=admin._("Type the service's name to confirm."))
    svc.remove_service(admin.data, service.name)
    return admin.done("/services", admin._("Service {name} deleted.", name=service.name))
