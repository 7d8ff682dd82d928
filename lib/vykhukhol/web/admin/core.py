"""What every admin page shares: the request's view of the installation
(:class:`Admin`), the :class:`Rule` of a route table, and :func:`serve`, the
WSGI app that checks the session and the CSRF token before any page runs.

It knows no page: the pages import it, never the other way round; the table
that names them is :mod:`.routes`.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from vykhukhol import settings as settings_mod
from vykhukhol.datadir import CHECKOUT, DataDir
from vykhukhol.errors import NoSecret, NotFound, VykhukholError
from vykhukhol.i18n import MESSAGES, ntr, t, tr
from vykhukhol.timeutil import UTC
from vykhukhol.watch.health import NO_SECRET
from vykhukhol.web import session
from vykhukhol.web.admin.once import new_token
from vykhukhol.web.http import HttpError, Request, Response, redirect, wsgi_app
from vykhukhol.web.templating import render as render_page


class Admin:
    """One request's view of the installation: data, settings, session."""

    def __init__(self, data: DataDir, request: Request, cgi_dir: Path) -> None:
        self.data = data
        self.cgi_dir = cgi_dir
        self.request = request
        if not data.settings.exists():
            raise NotFound("this installation is not initialised: run `vykhukhol init`")
        self.settings = settings_mod.load(data.settings)
        self.lang = self.settings["language"]
        self.sid = request.cookies.get(session.COOKIE)
        self.base = request.script.rstrip("/")
        self.flash: list[str] = []
        # (path, message) of what a POST did, for the form's one-time token (.once)
        self.outcome: tuple[str, str] | None = None

    def _(self, text_: str, /, **values: object) -> str:
        return tr(self.lang, text_, **values)

    def _n(self, singular: str, plural: str, n: int, /, **values: object) -> str:
        """A count with its noun (``{n}``), in the language's plural form."""
        return ntr(self.lang, singular, plural, n, **values)

    @property
    def key(self) -> bytes:
        """What signs this admin's CSRF tokens and messages: the secret; while
        there is none (the status page says why), the stored password hash,
        which only the owner's settings.ini holds, so the owner can still log
        in and read why links, pages and runs refuse."""
        if self.settings.secret_problem:
            return ("admin|" + self.settings["security.admin_password"]).encode()
        return self.settings.secret

    def url(self, path: str = "/", **query: object) -> str:
        return self.base + path + (("?" + urlencode(query)) if query else "")

    @property
    def logged_in(self) -> bool:
        return session.valid(self.data, self.sid)

    def page(self, template: str, status: int = 200, **context: object) -> Response:
        response = render_page(
            f"admin/{template}", self.lang, status, override=None, _=self._, _n=self._n, url=self.url,
            csrf=session.csrf_token(self.key, self.sid or ""),
            flash=self.flash + self._flash_from_query(), nav=NAV, path=self.request.path or "/",
            once=new_token(), **context)
        return response

    def done(self, path: str, message: str) -> Response:
        """After a POST: back to a page, with a message to show there. The message
        is signed, so nobody can craft a link that shows the admin a text of theirs."""
        self.outcome = (path, message)
        return redirect(self.url(path, msg=message, sig=self._sign(message)))

    def _sign(self, message: str) -> str:
        return session.csrf_token(self.key, f"flash|{self.sid}|{message}")[:32]

    def _flash_from_query(self) -> list[str]:
        message, sig = self.request.query.get("msg", ""), self.request.query.get("sig", "")
        if message and sig.isascii() and hmac.compare_digest(self._sign(message), sig):
            return [message]
        return []


NAV = [("/", "Status"), ("/settings", "Settings"), ("/services", "Services"), ("/fields", "Fields"),
       ("/newsletters/new", "Letter to all users"), ("/newsletters", "Newsletters"),
       ("/outbox", "Outbox"), ("/bounces", "Bounces"), ("/deliverability", "Deliverability"),
       ("/password", "Password")]


Page = Callable[[Admin, dict], Response]


class Rule:
    """One line of the route table: ``method`` and ``pattern`` (a regular
    expression the whole path must match; named groups become the page's
    arguments) lead to ``page``; ``public`` pages open without a session."""

    __slots__ = ("method", "pattern", "page", "public", "_regex")

    def __init__(self, method: str, pattern: str, page: Page, public: bool = False) -> None:
        self.method, self.pattern, self.page, self.public = method, pattern, page, public
        self._regex = re.compile(pattern + r"\Z")

    def match(self, path: str) -> re.Match | None:
        return self._regex.match(path)


def find_page(rules: list[Rule], method: str, path: str) -> tuple[Rule, re.Match]:
    """The first rule, read top to bottom, for ``method`` and ``path``; 405
    with the methods the path allows, or 404."""
    for rule in rules:
        match = rule.match(path)
        if match and rule.method == method:
            return rule, match
    allowed = tuple(sorted({rule.method for rule in rules if rule.match(path)}))
    if allowed:
        raise HttpError(405, allow=allowed + (("HEAD",) if "GET" in allowed else ()))
    raise HttpError(404)


def serve(data: DataDir, rules: list[Rule], cgi_dir: Path | None = None) -> Callable:
    """The WSGI app over a route table; ``cgi_dir`` is where the cron script
    lives (for its URL). The session and the CSRF token are checked here,
    before any page runs."""
    cgi_dir = cgi_dir or CHECKOUT / "cgi"

    def handle(request: Request) -> Response:
        admin = Admin(data, request, cgi_dir)
        try:
            return served(admin, request)
        except NoSecret:
            raise
        except VykhukholError as exc:  # the admin's own page, in its layout, says what happened
            if exc.status >= 500:
                raise
            return error_page(admin, exc)

    def served(admin: Admin, request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        rule, match = find_page(rules, method, request.path or "/")
        if not rule.public and not admin.logged_in:
            if method == "POST":
                raise HttpError(403, admin._("Your session has ended; log in again."))
            return redirect(admin.url("/login"))
        if method == "POST" and not rule.public:
            token = request.form(20 * 1024 * 1024).get("csrf")
            if not session.csrf_ok(admin.key, admin.sid, token):
                raise HttpError(403, admin._("The form has expired; open the page again."))
        try:
            return rule.page(admin, match.groupdict())
        except NoSecret:  # a page that makes links (a preview, a test letter) says why
            raise HttpError(503, admin._(NO_SECRET)) from None

    def lang() -> str:
        try:
            return settings_mod.load(data.settings)["language"]
        except VykhukholError:
            return "en"

    return wsgi_app(handle, lang)


def error_page(admin: Admin, exc: VykhukholError) -> Response:
    """A refused request (no such page, a link to a form's address, an expired
    form) as an admin page, in the admin's layout and language."""
    key = f"error.{exc.status}"
    if exc.status == 405:  # a GET on a form's address: a bookmark, a link, Reload
        detail = admin._("This address takes a form's button, not a link: open the page the form is on.")
    else:
        detail = "" if isinstance(exc, HttpError) and not exc.particular else exc.text(admin.lang)
    general = ""
    if key in MESSAGES:
        general = t(admin.lang, key, detail=detail)
        if "{detail}" in MESSAGES[key]:
            detail = ""
    response = admin.page("error.html", exc.status, title=t(admin.lang, "error.title"),
                          general=general, detail=detail, nav_shown=admin.logged_in)
    if isinstance(exc, HttpError) and exc.allow:
        response.headers.append(("Allow", ", ".join(exc.allow)))
    return response


def local_time(settings: settings_mod.Settings, stamp: str) -> str:
    try:
        moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        return moment.astimezone(ZoneInfo(settings["timezone"])).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, ValueError):  # not a time, or one at the calendar's ends
        return stamp
