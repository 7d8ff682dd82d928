"""The archive on the web: its static files, and a recipient's own copy.

* :func:`static` serves ``/archive/<service>/<file>`` for ``serve`` and
  Passenger (Apache serves the folder itself, ``archive/.htaccess``): only a
  service name and a file name of the shapes the archive writes
  (:data:`vykhukhol.archive.FILE_NAME`), only a regular file inside the
  archive's folder, only GET and HEAD. Anything else is a 404.
* :func:`view` is ``cgi/view.py``, ``{{ web_url }}`` of a letter that is not
  in a public archive: the letter rendered for the one recipient its signed
  link names (:func:`own_copy`). A link that is not valid shows nothing of
  anyone. GET only: it changes nothing.

The copy's page is templates/archive/copy.html, drawn as the archive's
pages are (:func:`vykhukhol.archive.pages.draw`); the letter is rendered with
Jinja2's sandbox anyway, so the template engine costs this page little more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from vykhukhol import archive, tokens
from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol.archive import pages
from vykhukhol.archive.pages import neutral
from vykhukhol.datadir import DataDir, check_name
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.i18n import known_language, t
from vykhukhol.services import subscribers as subs
from vykhukhol.timeutil import now
from vykhukhol.web.http import HttpError, Request, Response, redirect, wsgi_app

if TYPE_CHECKING:
    from vykhukhol.settings import Settings

TYPES = {".html": "text/html; charset=utf-8", ".atom": "application/atom+xml; charset=utf-8"}


class Copy(NamedTuple):
    """A recipient's own copy of a letter, as its page shows it."""

    subject: str
    text: str
    public_url: str | None  # its page in the public archive, once there is one
    language: str  # the one it is written in


def _settings(data: DataDir):
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
        if request.method not in ("GET", "HEAD"):
            raise HttpError(405, allow=("GET", "HEAD"))
        settings = _settings(data)
        # The link's hl (unsigned): the letter's version to show and the page's words.
        wanted = known_language(request.query.get("hl"))
        lang = wanted or settings["language"]
        if settings.secret_problem:
            raise HttpError(503, t(lang, "error.no_secret"))
        service, item = request.query.get("s", ""), request.query.get("l", "")[:60]
        email, token = request.query.get("e", "")[:254], request.query.get("t", "")[:100]
        copy = None
        if tokens.check(settings.secret, f"{service}:{item}", email, "view", token):
            copy = own_copy(data, settings, service, item, email, wanted)
        if copy is None:
            return page(lang, t(lang, "link.invalid_title"), None, None, 400)
        return page(copy.language, copy.subject, copy.text, copy.public_url)

    return wsgi_app(handle, lambda: _lang(data))


def page(lang: str, title: str, text: str | None, public_url: str | None,
         status: int = 200) -> Response:
    """The copy's page (``text`` None: the link shows nothing)."""
    response = Response(pages.draw("copy.html", lang, title=title, text=text,
                                   public_url=public_url), status)
    response.headers.append(("X-Robots-Tag", "noindex"))  # a personal copy: no search engine
    return response


def own_copy(data: DataDir, settings: Settings, service_name: str, item: str,
             email: str, language: str | None = None) -> Copy | None:
    """Letter ``item`` of the service as ``email`` received it (with the name the
    subscriber has now, and the personal links that act — unsubscribe, own
    page — as the archive's neutral text): its version in ``language`` when
    it has one, else the letter in the site's language; None when the letter
    is not kept any more. The caller has checked the link's signature."""
    from vykhukhol import render, tokens  # Jinja2: only when a page is drawn

    try:
        service = svc.find_service(data, service_name)
    except (NotFound, BadInput):
        return None
    public, written_in = None, None
    if item.isdigit() and len(item) <= 3:
        try:
            letters = svc.load_letters(service)
        except BadInput:
            return None
        if not 1 <= int(item) <= len(letters):
            return None
        letter, written_in = letters[int(item) - 1].for_reader(language or settings["language"])
        try:
            subject, text = letter.subject, letter.parts()[0]
        except BadInput:  # a Markdown letter made too long by FTP: no copy until it is fixed
            return None
        if service.archive and letter.public and any(
                e.kind == "letter" and e.ref == item for e in archive.entries(data, service.name)):
            public = archive.page_url(settings, service.name, "letter", item, written_in)
    else:
        kept = archive.kept_newsletter(data, item)
        if kept is None or service.name not in kept.services:
            return None
        subject, text = kept.subject, kept.text
        version = archive.kept_versions(data, item).get(language) if language else None
        if version is not None:
            (subject, text, _), written_in = version, language
        if service.archive and kept.public and any(
                e.kind == "news" and e.ref == item for e in archive.entries(data, service.name)):
            public = archive.page_url(settings, service.name, "news", item, written_in)
    lang = written_in or settings["language"]
    sub = subs.find(service.subscribers_path, email)
    # A web link is forwarded and shared: like the archive's pages, the copy
    # holds no personal link that acts (the letter in the mailbox has them).
    context = render.one_line_values({
        "name": sub.name if sub else "", "email": email, "service": service.title,
        "unsubscribe_url": neutral(lang), "manage_url": neutral(lang),
        "web_url": tokens.view_link(settings["site_url"], settings.secret, service.name, email,
                                    item, language=written_in),
        "date": now().strftime("%Y-%m-%d"),
    })
    budget = render.Budget()
    try:
        return Copy(" ".join(render.render(subject, context, "subject", budget).split()),
                    render.render(text, context, "text", budget), public, lang)
    except BadInput:
        return None
