"""One-time tokens of the admin forms that create or send (a newsletter, a
test letter, an import, a subscriber, a service, a letter): Back and the
button again, or a double click, must not make a second newsletter.

Every admin page gets a fresh token (``once`` in its templates); the forms
that create or send carry it in a hidden field. The first POST with a token
*claims* it (a line in ``data/state/admin_once.txt``, taken under the file's
record lock, so two POSTs of one token at the same moment cannot both pass);
when the page has done its work (:meth:`.core.Admin.done`, or a page that
answers in place and says what it did), the line gets where it led and what
it said. A second POST of the same token does nothing and leads there, with
what the first one did. A POST whose page did nothing (a refused form, a
preview) gives its token back, so the corrected form can be sent.

A POST without a token (a script, a page from before this existed) is served
as before: the token guards against a person's second press, not against an
attacker (CSRF does that), so it is not required. Only the last
:data:`KEEP` tokens are remembered: a form older than that many submissions
is served again.

Deliberately not here: which pages are guarded (the route table,
:mod:`.routes`, wraps them with :func:`once_only`).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from typing import NamedTuple

from vykhukhol import files
from vykhukhol.datadir import DataDir
from vykhukhol.timeutil import format_time, now
from vykhukhol.web.http import HttpError, Response

KEEP = 500  # tokens remembered (a line each, some 150 bytes)
PENDING = "-"  # the place of a claimed token whose page is still at work
_TOKEN = re.compile(r"[0-9a-f]{32}\Z")


def new_token() -> str:
    return secrets.token_hex(16)


class Used(NamedTuple):
    """What the first POST of a token did: the admin path it led to and its
    message (``place`` is :data:`PENDING` while it is still at work)."""

    place: str
    message: str


def _path(data: DataDir):
    return data.state / "admin_once.txt"


def _clean(text: str) -> str:
    return " ".join(text.replace("\t", " ").split()) or "-"


def _lines(data: DataDir) -> list[str]:
    return [line for line in files.read_lines(_path(data)) if line.count("\t") >= 3]


def claim(data: DataDir, token: str) -> Used | None:
    """Take ``token`` for this POST: None when it is new (now claimed), else
    what its first POST did."""
    path = _path(data)
    files.make_folder(path.parent)
    with files.record_lock(path):
        lines = _lines(data)
        for line in lines:
            found, _stamp, place, message = line.split("\t", 3)
            if found == token:
                return Used(place, "" if message == "-" else message)
        lines.append(f"{token}\t{format_time(now())}\t{PENDING}\t-")
        files.atomic_write(path, [line + "\n" for line in lines[-KEEP:]])
    return None


def _settle(data: DataDir, token: str, result: Used | None) -> None:
    """Write what the token's POST did, or (``result`` None) give the token back."""
    path = _path(data)
    with files.record_lock(path):
        kept = []
        for line in _lines(data):
            if line.split("\t", 1)[0] != token:
                kept.append(line)
            elif result is not None:
                stamp = line.split("\t", 2)[1]
                kept.append(f"{token}\t{stamp}\t{_clean(result.place)}\t{_clean(result.message)}")
        files.atomic_write(path, [line + "\n" for line in kept])


Page = Callable  # (Admin, dict) -> Response: core.Page, not imported, as core imports this module


def once_only(page: Page) -> Page:
    """``page`` served at most once per form token (see the module's text)."""

    def guarded(admin, args: dict) -> Response:
        token = admin.request.form().get("once", "")
        if not _TOKEN.match(token):
            return page(admin, args)
        used = claim(admin.data, token)
        if used is not None:
            if used.place == PENDING:
                raise HttpError(409, admin._(
                    "This form is being handled right now; it was not sent a second time."))
            return admin.done(used.place, admin._(
                "This form was sent already; nothing was done again. It said: {message}",
                message=used.message))
        admin.outcome = None
        try:
            response = page(admin, args)
        except BaseException:
            _settle(admin.data, token, None)
            raise
        _settle(admin.data, token, None if admin.outcome is None else Used(*admin.outcome))
        return response

    guarded.__name__ = getattr(page, "__name__", "guarded")
    guarded.__doc__ = page.__doc__
    return guarded
