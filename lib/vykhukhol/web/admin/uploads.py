"""An uploaded list (a file, or text pasted in the form) read for an import.

The Subscribers and Suppressed pages take the same kind of upload with the
same caps: one upload must not hold the request's thread for minutes (an
import costs ~70 µs a line), and a real list fits in them. What the pages
do with the text is theirs; reading it, and refusing it in the same words,
is here.
"""

from __future__ import annotations

from vykhukhol.web.admin.core import Admin

MAX_IMPORT_BYTES = 8 * 1024 * 1024  # 100 000 addresses with long names fit
MAX_IMPORT_LINES = 100_000  # ~7 s of the request's thread (70 µs a line)
FORM_BYTES = 20 * 1024 * 1024  # what the form parser takes before the caps are checked


class UploadRefused(Exception):
    """The upload cannot be imported: ``message`` for the page, HTTP ``status``."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message, self.status = message, status


def too_large(admin: Admin) -> UploadRefused:
    """Over a cap: the upload's bytes or lines, or what a zip inflates to."""
    return UploadRefused(admin._(
        "The import is larger than {size} MiB or {lines} lines; nothing was imported. "
        "Split the list into parts.", size=MAX_IMPORT_BYTES // (1024 * 1024),
        lines=MAX_IMPORT_LINES), 413)


def read_upload(admin: Admin) -> tuple[str, dict[str, str]]:
    """The upload's text and the rest of the form; :class:`UploadRefused` when it is
    not UTF-8, empty or over the caps."""
    form = admin.request.form(FORM_BYTES)
    raw = admin.request.upload("file")
    content = form.get("text", "")
    if raw:
        try:
            content = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise UploadRefused(admin._("The file is not UTF-8 text."), 400) from None
    if not content.strip():
        raise UploadRefused(admin._("Nothing to import."), 400)
    if len(raw or content.encode()) > MAX_IMPORT_BYTES or content.count("\n") > MAX_IMPORT_LINES:
        raise too_large(admin)
    return content, form


def not_csv(admin: Admin) -> UploadRefused:
    """A field over the csv module's limit (128 KiB: a quote never closed) or a
    broken quote: nothing has been stored yet."""
    return UploadRefused(admin._(
        "The file cannot be read as CSV: a field is far too long, or a quote is not closed; "
        "nothing was imported."), 400)


def read_file_upload(admin: Admin) -> tuple[bytes, dict[str, str]]:
    """The uploaded file's bytes as they are (another tool's export, maybe a
    zip) and the rest of the form; :class:`UploadRefused` when there is
    none or it is over the size cap."""
    form = admin.request.form(FORM_BYTES)
    raw = admin.request.upload("file") or form.get("text", "").encode()
    if not raw.strip():
        raise UploadRefused(admin._("Nothing to import."), 400)
    if len(raw) > MAX_IMPORT_BYTES:
        raise too_large(admin)
    return raw, form
