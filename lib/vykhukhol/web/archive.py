"""The archive on the web: its static files, and a recipient's own copy.

* :func:`static` serves ``/archive/<service>/<file>`` for ``serve`` and
  Passenger (Apache serves the folder itself, ``archive/.htaccess``): only a
  service name and a file name of the shapes the archive writes
  (:data:`vykhukhol.archive.FILE_NAME`), only a regular file inside the
  archive's folder, only GET and HEAD. Anything else is a 404.
* :func:`view` is ``cgi/view.py``, ``{{ web_url }}`` of a letter that is not
  in a public archive: the letter rendered for the one recipient its signed
  link names. A link that is not valid shows nothing of anyone. GET only:
  it changes nothing.

Both answer in plain HTML made here (no template engine to load for a page
that is a letter and a title).
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from vykhukhol import archive
from vykhukhol.datadir import DataDir, check_name
from vykhukhol.errors import BadInput
from vykhukhol.web.http import HttpError, Request, Response, redirect, wsgi_app

TYPES = {".html": "text/html; charset=utf-8", ".atom": "application/atom+xml; charset=utf-8"}


def _settings(data: DataDir):
    from vykhukhol import settings as settings_mod

    if not data.settings.exists():
        raise HttpError(503, "this installation is not initialised yet")
    return settings_mod.load(data.settings)


def _lang(data: DataDir) -> str:
    try:
        return _settings(data)["language"]
    except Exception:  # noqa: BLE001 - an unreadable setting must not break the error page
        return "en"


def static(data: DataDir) -> Callable:
    def handle(request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            raise HttpError(405, allow=("GET", "HEAD"))
        parts = request.path.split("/")[1:]  # PATH_INFO below /archive
        if len(parts) == 1 and parts[0]:
            try:  # checked before it goes into a Location header
                check_name(parts[0])
            except BadInput:
                raise HttpError(404) from None
            return redirect(f"{request.script}/{parts[0]}/")
        if len(parts) != 2:
            raise HttpError(404)
        service, name = parts[0], parts[1] or "index.html"
        try:
            check_name(service)
        except BadInput:
            raise HttpError(404) from None
        if not archive.FILE_NAME.fullmatch(name):
            raise HttpError(404)
        root = archive.folder(_settings(data)).resolve()
        path = (root / service / name).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            raise HttpError(404)
        try:
            body = path.read_bytes()
        except OSError:
            raise HttpError(404) from None
        return Response(body, 200, TYPES[path.suffix])

    return wsgi_app(handle, lambda: _lang(data))


def view(data: DataDir) -> Callable:
    def handle(request: Request) -> Response:
        from vykhukhol import tokens
        from vykhukhol.i18n import t, tr

        if request.method not in ("GET", "HEAD"):
            raise HttpError(405, allow=("GET", "HEAD"))
        settings = _settings(data)
        lang = settings["language"]
        if settings.secret_problem:
            raise HttpError(503, t(lang, "error.no_secret"))
        service, item = request.query.get("s", ""), request.query.get("l", "")[:60]
        email, token = request.query.get("e", "")[:254], request.query.get("t", "")[:100]
        copy = None
        if tokens.check(settings.secret, f"{service}:{item}", email, "view", token):
            copy = archive.own_copy(data, settings, service, item, email)
        if copy is None:
            gone = tr(lang, "This link is not valid, or the letter it showed is no longer kept.")
            return page(lang, t(lang, "link.invalid_title"), f"<p>{escape(gone)}</p>", 400)
        subject, text, public_url = copy
        more = ""
        if public_url:
            more = (f'<p><a href="{escape(public_url)}">'
                    f"{escape(tr(lang, 'This letter in the public archive'))}</a></p>\n")
        return page(lang, subject, f"<h1>{escape(subject)}</h1>\n{more}"
                                   f"<pre>{archive.text_html(text)}</pre>")

    return wsgi_app(handle, lambda: _lang(data))


def page(lang: str, title: str, body: str, status: int = 200) -> Response:
    response = Response(
        f'<!doctype html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{archive.STYLE}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n", status)
    response.headers.append(("X-Robots-Tag", "noindex"))  # a personal copy: no search engine
    return response
