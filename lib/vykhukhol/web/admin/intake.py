"""What comes in from elsewhere, on the admin pages: the Subscribers page's
"Import from another tool" (the same reading and writing as ``vykhukhol
import-from``, :mod:`vykhukhol.members.importers`, with the upload caps of
every import, :mod:`.uploads`) and the service page's feed (``vykhukhol
service feed``, :mod:`vykhukhol.newsletters.feeds`)."""

from __future__ import annotations

import vykhukhol.web.admin.uploads as uploads
from vykhukhol.errors import BadInput
from vykhukhol.members import importers
from vykhukhol.members.fieldmap import Columns
from vykhukhol.members.importers import outcome
from vykhukhol.members.importing import SeriesStart
from vykhukhol.newsletters import feed_settings
from vykhukhol.settings import fields as site_fields
from vykhukhol.web.admin.core import Admin
from vykhukhol.web.admin.services import _service, service_page
from vykhukhol.web.admin.subscribers import subscribers_page
from vykhukhol.web.http import Response


def import_from(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    try:
        raw, form = uploads.read_file_upload(admin)
        tool = form.get("tool", "")
        if tool not in importers.TOOLS:
            raise uploads.UploadRefused(admin._("Choose the tool the file comes from."), 400)
        try:
            series = SeriesStart.parse(form.get("series") or "end")
            choices = Columns.parse_map(form.get("map", "").splitlines())
            columns = Columns(site_fields.load(admin.data.root), choices, admin.lang)
            # the upload's cap holds for what a zip inflates to, not only for the zip
            reading = importers.read(tool, raw, max_bytes=uploads.MAX_IMPORT_BYTES,
                                     columns=columns)
        except importers.TooLarge:
            raise uploads.too_large(admin) from None
        except BadInput as exc:
            raise uploads.UploadRefused(exc.text(admin.lang), 400) from None
        if len(reading.people) + len(reading.refused) > uploads.MAX_IMPORT_LINES:
            raise uploads.too_large(admin)
        try:
            result = outcome.apply(admin.data, admin.settings, service.name, reading,
                                   dry_run=form.get("dry_run") == "yes", series=series)
        except BadInput as exc:  # a letter the series does not have
            raise uploads.UploadRefused(exc.text(admin.lang), 400) from None
    except uploads.UploadRefused as refused:
        return subscribers_page(admin, args, error=refused.message, status=refused.status)
    return subscribers_page(admin, args, intake={
        "lines": outcome.summary(result, admin.lang), "dry_run": result.dry_run,
        "refused": result.refused[:importers.SHOWN_REFUSED], "more": max(
            0, len(result.refused) - importers.SHOWN_REFUSED)})


def feed_save(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    form = admin.request.form()
    try:
        feed_settings.follow(admin.data, service.name, form.get("feed_url", ""),
                             form.get("feed_every", "1h") or "1h", form.get("feed_letter") or None)
    except BadInput as exc:
        return service_page(admin, args, error=exc.text(admin.lang), status=400)
    return admin.done(f"/services/{service.name}", admin._(
        "The service follows the feed; its first read marks what is there as seen."))


def feed_off(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    feed_settings.stop(admin.data, service.name)
    return admin.done(f"/services/{service.name}", admin._("The service follows no feed."))
