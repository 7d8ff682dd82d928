"""Login (the only page open without a session), logout, and the admin password."""

from __future__ import annotations

import vykhukhol.web.admin.twofactor as twofactor
from vykhukhol import settings as settings_mod
from vykhukhol.errors import BadInput
from vykhukhol.settings import password as auth
from vykhukhol.web import session
from vykhukhol.web.admin.core import Admin
from vykhukhol.web.http import Response, redirect


def login_form(admin: Admin, args: dict) -> Response:
    return login_page(admin)


def login_page(admin: Admin, status: int = 200, error: str = "") -> Response:
    return admin.page("login.html", status, error=error)


def login(admin: Admin, args: dict) -> Response:
    request = admin.request
    if session.cross_site(request.environ):
        # Another site's page made the browser post this: refused before the
        # password is looked at, and not counted.
        return login_page(admin, 403, admin._("Log in from this site's own login page."))
    form = request.form()
    stored = admin.settings["security.admin_password"]
    client = request.client(admin.settings["trusted_proxies"])
    browser = session.known_browser(stored, request.cookies.get(session.BROWSER_COOKIE))
    wait = session.begin_attempt(admin.data, client, browser)
    if wait:
        return login_page(admin, 429, too_many(admin))
    right = bool(stored) and auth.verify_password(form.get("password", ""), stored)
    if stored and twofactor.is_on(admin):
        return twofactor.ask_code(admin, right)  # right or wrong, the code comes next
    if not right:
        return login_page(admin, 403, admin._(
            "Wrong password." if stored else "No admin password is set: run `vykhukhol password`."))
    session.attempt_succeeded(admin.data, client, browser)
    return logged_in(admin)


def login_code(admin: Admin, args: dict) -> Response:
    """The code step, with two factors on (docs/using/admin.md#admin-two-factor)."""
    return twofactor.code_refused(admin, login_page) or logged_in(admin)


def logged_in(admin: Admin) -> Response:
    """A new session, and on to the status page."""
    request = admin.request
    response = redirect(admin.url("/"))
    response.set_cookie(session.COOKIE, session.create(admin.data), secure=request.https,
                        path=admin.base or "/")
    return response


def remember_browser(admin: Admin, response: Response) -> Response:
    """A logged-in browser without a valid known-browser cookie gets one. Done
    on the status page the login leads to, not on the login's own answer, so
    that answer sets one cookie only (simple clients keep one)."""
    stored = admin.settings["security.admin_password"]
    if stored and not session.known_browser(stored, admin.request.cookies.get(session.BROWSER_COOKIE)):
        response.set_cookie(session.BROWSER_COOKIE, session.known_browser_cookie(stored),
                            secure=admin.request.https, path=admin.base or "/",
                            max_age=session.BROWSER_SECONDS)
    return response


def logout(admin: Admin, args: dict) -> Response:
    session.end(admin.data, admin.sid)
    response = redirect(admin.url("/login"))
    response.set_cookie(session.COOKIE, "", max_age=0, secure=admin.request.https,
                        path=admin.base or "/")
    return response


# --- the admin password -------------------------------------------------------------


def password_form(admin: Admin, args: dict) -> Response:
    return admin.page("password.html")


def password_change(admin: Admin, args: dict) -> Response:
    """Asks the current password (counted like a login, per session); the new
    one ends every other session and every other known browser."""
    form = admin.request.form()
    current, new, again = (form.get(k, "") for k in ("current", "new", "again"))
    stored = admin.settings["security.admin_password"]

    def refuse(status: int, message: str) -> Response:
        return admin.page("password.html", status, error=message)

    if session.begin_password_check(admin.data, admin.sid or ""):
        return refuse(429, too_many(admin))
    if not stored or not auth.verify_password(current, stored):
        return refuse(403, admin._("The current password is wrong; nothing changed."))
    if new != again:
        return refuse(400, admin._("The new passwords differ; nothing changed."))
    try:
        hashed = auth.hash_password(new)
    except BadInput:
        return refuse(400, admin._("The new password must be one line of at least {count} characters; nothing changed.",
                                   count=auth.MIN_PASSWORD))
    settings_mod.update(admin.data.settings, {"security.admin_password": hashed})
    session.end_all(admin.data, keep=admin.sid)
    # This browser's known-browser cookie is renewed on its next status page.
    return admin.done("/password", admin._("Password changed. Every other session has ended."))


def too_many(admin: Admin) -> str:
    """The lock-out's message, its minutes in the language's plural form."""
    return admin._n("Too many wrong passwords. Try again in {n} minute.",
                    "Too many wrong passwords. Try again in {n} minutes.", session.LOCKOUT // 60)
