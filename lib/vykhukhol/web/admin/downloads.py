"""The admin's CSV downloads (a service's subscribers, the suppression list)
in the dialect the admin chose: a comma or a semicolon (what a spreadsheet of
their language splits on, :data:`vykhukhol.members.export.DIALECTS`). The choice is
asked beside the download button, starts as the site language's
(:func:`vykhukhol.members.export.dialect_for`) and is remembered in a cookie of this
browser: a preference of the person at the keyboard, not of the site, so no
data file is written by a download."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from vykhukhol.members.export import DIALECTS, dialect_for
from vykhukhol.web.admin.core import Admin
from vykhukhol.web.http import Response

COOKIE = "vykhukhol_csv"
REMEMBERED = 365 * 24 * 3600  # seconds the choice is kept


def chosen(admin: Admin) -> str:
    """The dialect of this download: the one asked for, else the remembered one,
    else the site language's."""
    for value in (admin.request.query.get("dialect", ""), admin.request.cookies.get(COOKIE, "")):
        if value in DIALECTS:
            return value
    return dialect_for(admin.lang)


def choices(admin: Admin) -> list[tuple[str, str]]:
    """(value, label) of each dialect, for the page's select."""
    return [("comma", admin._("comma (Excel in English, LibreOffice, Google Sheets)")),
            ("semicolon", admin._("semicolon (Excel in Russian and most European languages)"))]


def csv_download(admin: Admin, filename: str, write: Callable[[TextIO, str], object]) -> Response:
    """``write(out, dialect)`` as a download named ``filename``; the dialect asked
    for is remembered for the next one."""
    import io

    dialect = chosen(admin)
    out = io.StringIO()
    write(out, dialect)
    response = Response(out.getvalue(), content_type="text/csv; charset=utf-8")
    response.headers.append(("Content-Disposition", f'attachment; filename="{filename}"'))
    if admin.request.query.get("dialect", "") == dialect:
        response.set_cookie(COOKIE, dialect, max_age=REMEMBERED, secure=admin.request.https,
                            path=admin.base or "/")
    return response
