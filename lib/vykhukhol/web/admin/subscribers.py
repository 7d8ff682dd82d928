"""A service's subscribers: the list with search, adding, deleting, import and CSV export."""

from __future__ import annotations

import vykhukhol.web.admin.downloads as downloads
import vykhukhol.web.admin.uploads as uploads
from vykhukhol import services as svc
from vykhukhol import tokens
from vykhukhol.errors import BadInput
from vykhukhol.members import importing, membership, suppression
from vykhukhol.members.export import write_csv
from vykhukhol.services import subscribers as subs
from vykhukhol.settings import fields as site_fields
from vykhukhol.states import SubscriberState
from vykhukhol.web.admin.core import Admin, local_time
from vykhukhol.web.admin.services import _service
from vykhukhol.web.http import Response

PAGE_SIZE = 50          # subscribers per page


def subscribers_page(admin: Admin, args: dict, result: dict | None = None,
                     error: str = "", status: int = 200, intake: dict | None = None) -> Response:
    service = _service(admin, args["name"])
    query = admin.request.query.get("q", "").strip().lower()[:100]
    try:
        page = max(1, int(admin.request.query.get("page", "1")))
    except ValueError:
        page = 1
    found, total = [], 0
    start = (page - 1) * PAGE_SIZE
    for item in subs.read(service.subscribers_path):
        if isinstance(item, subs.Malformed):
            continue
        if query and query not in item.email.lower() and query not in item.name.lower():
            continue
        if start <= total < start + PAGE_SIZE:
            found.append(item)
        total += 1
    pages = max(1, (total + PAGE_SIZE - 1) // PAGE_SIZE)
    # A line whose address is suppressed gets no letter: the row says so (an
    # import brings such lines when people left the other tool while here).
    checker = suppression.Checker(admin.data, suppression.secret_of(admin.settings))

    def manage_link(email: str) -> str:
        """The subscriber's own page, for the admin to send when asked for help."""
        return tokens.manage_link(admin.settings["site_url"], admin.settings.secret, email)

    return admin.page("subscribers.html", status, service=service, found=found, total=total,
                      manage_link=manage_link, suppressed=lambda email: email in checker,
                      export_choices=downloads.choices(admin),
                      export_dialect=downloads.chosen(admin),
                      export_url=admin.url(f"/services/{service.name}/export.csv"),
                      page=page, pages=pages, q=query, result=result, error=error, intake=intake,
                      states=SubscriberState, local=lambda t: local_time(admin.settings, t),
                      import_size=uploads.MAX_IMPORT_BYTES // (1024 * 1024),
                      import_lines=uploads.MAX_IMPORT_LINES,
                      series_letters=svc.letter_count(service),
                      field_names=[f.name for f in site_fields.load(admin.data.root)])


def subscriber_add(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    form = admin.request.form()
    confirmed = form.get("confirmed") == "yes"
    language = form.get("language", "") or None  # the reader's own: docs/using/languages.md#reader-language-source
    try:
        if language not in (None, *svc.LANGUAGES):
            raise BadInput("language {language}: use one of {languages}", language=language[:20],
                           languages=", ".join(svc.LANGUAGES))
        outcome = membership.subscribe(admin.data, admin.settings, service.name,
                                       form.get("email", ""), form.get("name", ""), ip="admin",
                                       confirmed=confirmed, language=language)
    except BadInput as exc:
        return subscribers_page(admin, args, error=exc.text(admin.lang), status=400)
    if outcome == "suppressed":
        error = BadInput(suppression.REFUSAL, email=form.get("email", "").strip())
        return subscribers_page(admin, args, error=error.text(admin.lang), status=400)
    messages = {"added": admin._("Added."), "known": admin._("Already subscribed; nothing changed."),
                "confirmed": admin._("Confirmed."), "too soon": admin._("Asked to confirm less than 10 minutes ago."),
                "asked again": admin._("Asked to confirm again.")}
    return admin.done(f"/services/{service.name}/subscribers", messages[outcome])


def subscriber_delete(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    email = admin.request.form().get("email", "")
    if admin.request.form().get("confirm") != "yes":  # the list's button: ask first
        return admin.page(
            "confirm.html", title=admin._("Delete {email}?", email=email),
            warning=admin._("{email} is deleted from {service} with its progress; its pending letters to all users are skipped. It cannot be undone.",
                            email=email, service=service.name),
            action=admin.url(f"/services/{service.name}/subscribers/delete"),
            hidden={"email": email}, cancel=admin.url(f"/services/{service.name}/subscribers"))
    membership.remove(admin.data, service.name, email)
    return admin.done(f"/services/{service.name}/subscribers", admin._("{email} deleted.", email=email))


def subscribers_import(admin: Admin, args: dict) -> Response:
    import csv

    service = _service(admin, args["name"])
    try:
        content, form = uploads.read_upload(admin)
        try:
            result = importing.import_addresses(admin.data, admin.settings, service.name, content,
                                                form.get("confirmed") == "yes", lang=admin.lang)
        except csv.Error:
            raise uploads.not_csv(admin) from None
    except uploads.UploadRefused as refused:
        return subscribers_page(admin, args, error=refused.message, status=refused.status)
    admin.outcome = (f"/services/{service.name}/subscribers", admin._(  # for the form's token
        "Import: {added}, {duplicates}, {invalid}.",
        added=admin._n("{n} address added", "{n} addresses added", result["added"]),
        duplicates=admin._n("{n} was already there", "{n} were already there", result["duplicates"]),
        invalid=admin._n("{n} line refused", "{n} lines refused", len(result["invalid"]))))
    return subscribers_page(admin, args, result=result)


def subscribers_export(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    names = [f.name for f in site_fields.load(admin.data.root)]
    return downloads.csv_download(admin, f"{service.name}.csv", lambda out, dialect: write_csv(
        service.subscribers_path, out, dialect=dialect, fields=names))
