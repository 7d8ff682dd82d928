"""Suppressed: the addresses Vykhukhol never writes to again
(docs/deliverability/suppression.md#suppression-list) — a
search with pages (100,000 entries are one reading of the file), adding,
taking off, import and CSV export. The file is written only by
:mod:`vykhukhol.members.suppression`; every POST carries the session's CSRF token
(:func:`.core.serve`)."""

from __future__ import annotations

import vykhukhol.web.admin.downloads as downloads
import vykhukhol.web.admin.uploads as uploads
from vykhukhol.addresses import check_email
from vykhukhol.errors import BadInput
from vykhukhol.members import importing, suppression
from vykhukhol.timeutil import format_time, now
from vykhukhol.web.admin.bounces import source_label
from vykhukhol.web.admin.core import Admin, local_time
from vykhukhol.web.http import Response

PAGE_SIZE = 50          # entries a page


def _secret(admin: Admin) -> bytes:
    return suppression.secret_of(admin.settings)


def suppressed_page(admin: Admin, args: dict, result: dict | None = None,
                    error: str = "", status: int = 200) -> Response:
    query = admin.request.query.get("q", "").strip()[:100]
    try:
        page = int(admin.request.query.get("page", "1"))
    except ValueError:
        page = 1
    found = suppression.search(admin.data, query, page, PAGE_SIZE)
    rows = [{"address": entry.address, "erased": entry.erased,
             "when": local_time(admin.settings, format_time(entry.when)) if entry.when else "—",
             "why": suppression.label(entry.why, admin.lang), "source": _source(admin, entry.source)} for entry in found.entries]
    return admin.page("suppressed.html", status, rows=rows, total=found.total, page=found.page,
                      pages=found.pages, q=query, result=result, error=error,
                      export_choices=downloads.choices(admin), export_dialect=downloads.chosen(admin),
                      export_url=admin.url("/suppressed.csv"))


def _source(admin: Admin, source: str) -> str:
    """Where an entry came from, in the admin's language; a name the code does
    not write (a provider's, a mailbox's) is shown as the Bounces page shows it."""
    words = {"admin": admin._("the admin pages"), "cli": admin._("the command line"),
             "smtp": admin._("the mail server, at hand-over"),
             "subscriber": admin._("the subscriber (erased at their request)")}
    return words.get(source) or source_label(admin, source)


def suppressed_add(admin: Admin, args: dict) -> Response:
    given = admin.request.form().get("email", "")
    try:
        email = check_email(given)
    except BadInput as exc:
        return suppressed_page(admin, args, error=exc.text(admin.lang), status=400)
    if suppression.add(admin.data, _secret(admin), email, suppression.Why.ADMIN, "admin", now()):
        message = admin._("{email} is suppressed: nothing will be sent to it.", email=email)
    else:
        message = admin._("{email} was on the list already; nothing changed.", email=email)
    return admin.done("/suppressed", message)


def suppressed_remove(admin: Admin, args: dict) -> Response:
    email = admin.request.form().get("email", "")
    if admin.request.form().get("confirm") != "yes":  # the list's button: ask first
        return admin.page(
            "confirm.html", title=admin._("Take {email} off the suppression list?", email=email),
            warning=admin._("Letters may go to {email} again, and it may subscribe again. Do this "
                            "only if its owner asked to be written to.", email=email),
            action=admin.url("/suppressed/remove"), hidden={"email": email},
            cancel=admin.url("/suppressed"))
    if not suppression.remove(admin.data, _secret(admin), email):
        return suppressed_page(admin, args, status=404, error=admin._(
            "{email} is not on the suppression list; nothing changed.", email=email))
    return admin.done("/suppressed", admin._("{email} taken off the suppression list.", email=email))


def suppressed_import(admin: Admin, args: dict) -> Response:
    import csv

    try:  # the Subscribers page's caps and words
        content, _ = uploads.read_upload(admin)
        try:
            result = importing.suppress_addresses(admin.data, _secret(admin), content, "admin",
                                                  now())
        except csv.Error:
            raise uploads.not_csv(admin) from None
    except uploads.UploadRefused as refused:
        return suppressed_page(admin, args, error=refused.message, status=refused.status)
    admin.outcome = ("/suppressed", admin._(  # for the form's one-time token
        "Import: {added}, {already}, {invalid}.",
        added=admin._n("{n} address suppressed", "{n} addresses suppressed", result["added"]),
        already=admin._n("{n} was on the list already", "{n} were on the list already",
                         result["already"]),
        invalid=admin._n("{n} line refused", "{n} lines refused", len(result["invalid"]))))
    return suppressed_page(admin, args, result=result)


def suppressed_export(admin: Admin, args: dict) -> Response:
    return downloads.csv_download(admin, "suppressed.csv", lambda out, dialect: suppression.write_csv(
        admin.data, out, dialect=dialect))
