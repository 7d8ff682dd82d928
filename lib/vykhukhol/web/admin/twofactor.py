"""Two factors in the admin (docs/using/admin.md#admin-two-factor): the login's
code step, and the page that turns them on (scan the QR code, type a code,
read the ten recovery codes once) and off.

The code step follows every password, right or wrong, when two factors are
on: the password's answer is the same page either way, and the session
comes only when the ticket says the password was right *and* the code is
(:func:`vykhukhol.web.session.begin_second_step`). The try was counted with
the password, so each wrong code costs one try of the login's lock-out. The
codes themselves are :mod:`vykhukhol.settings.twofactor`'s.
"""

from __future__ import annotations

from collections.abc import Callable

from markupsafe import Markup

from vykhukhol.errors import BadInput
from vykhukhol.settings import password as auth
from vykhukhol.settings import twofactor
from vykhukhol.web import session
from vykhukhol.web.admin.core import Admin
from vykhukhol.web.http import Response


def is_on(admin: Admin) -> bool:
    return twofactor.is_on(admin.settings)


def ask_code(admin: Admin, password_right: bool) -> Response:
    """The password's answer with two factors on: the code step, whatever the
    password was."""
    ticket = session.begin_second_step(admin.data, password_right)
    return admin.page("login_code.html", ticket=ticket)


def code_refused(admin: Admin, login_page: Callable[[Admin, int, str], Response]) -> Response | None:
    """The code step's refusal (``login_page(admin, status, error)`` draws
    it), or None when the ticket's password was right and the code is: then
    the try is forgiven and the caller opens the session."""
    request = admin.request
    if session.cross_site(request.environ):
        return login_page(admin, 403, admin._("Log in from this site's own login page."))
    form = request.form()
    ticket = session.end_second_step(admin.data, form.get("ticket", ""))
    if ticket is session.Ticket.GONE:
        return login_page(admin, 403, admin._("The login took too long; enter the password again."))
    code = form.get("code", "")
    accepted = twofactor.Accepted.NO
    if ticket is session.Ticket.PASSWORD_RIGHT:
        accepted = twofactor.accept(admin.data, admin.settings, code)
    else:  # the same work, so the answer's time tells nothing; a wrong password spends no code
        twofactor.code_matches(admin.settings[twofactor.SECRET_KEY], code)
    if accepted is twofactor.Accepted.NO:
        return login_page(admin, 403, admin._(
            "Wrong password or code. (A code counts once: after a refusal, wait for the next one.)"))
    stored = admin.settings["security.admin_password"]
    client = request.client(admin.settings["trusted_proxies"])
    browser = session.known_browser(stored, request.cookies.get(session.BROWSER_COOKIE))
    session.attempt_succeeded(admin.data, client, browser)
    return None


# --- the page that turns them on and off ----------------------------------------


def twofactor_page(admin: Admin, args: dict) -> Response:
    if is_on(admin):
        return admin.page("twofactor.html", on=True, left=twofactor.recovery_left(admin.settings))
    return _setup(admin, twofactor.new_secret())


def _setup(admin: Admin, secret: str, status: int = 200, error: str = "") -> Response:
    uri = twofactor.uri(secret, admin.settings["admin_email"])
    return admin.page("twofactor.html", status, on=False, secret=secret, uri=uri,
                      qr=Markup(twofactor.qr_svg(uri)), error=error)


def twofactor_on(admin: Admin, args: dict) -> Response:
    """The current password (counted like the password page's check: a
    stolen session alone cannot lock the owner out) and the code typed from
    the app turn two factors on, and the recovery codes are shown, this
    once. Every other session ends."""
    form = admin.request.form()
    secret = form.get("secret", "")
    if is_on(admin):
        return admin.done("/twofactor", admin._("Two factors are on already."))
    if not twofactor.valid_secret(secret):
        return _setup(admin, twofactor.new_secret(), 400,
                      admin._("The form was changed; scan this new code and start again."))
    if session.begin_password_check(admin.data, admin.sid or ""):
        return _setup(admin, secret, 429, admin._n(
            "Too many wrong passwords. Try again in {n} minute.",
            "Too many wrong passwords. Try again in {n} minutes.", session.LOCKOUT // 60))
    stored = admin.settings["security.admin_password"]
    if not stored or not auth.verify_password(form.get("password", ""), stored):
        return _setup(admin, secret, 403, admin._("The current password is wrong; nothing changed."))
    try:
        codes = twofactor.turn_on(admin.data, secret, form.get("code", ""))
    except BadInput:
        return _setup(admin, secret, 400, admin._(
            "The code does not match. Check that the phone's time is right and type the code it shows now."))
    session.end_all(admin.data, keep=admin.sid)
    return admin.page("twofactor_codes.html", codes=codes)


def twofactor_off(admin: Admin, args: dict) -> Response:
    """Off from the admin needs a code (or a recovery code), counted like the
    password page's check: a stolen session alone cannot turn them off."""
    if not is_on(admin):
        return admin.done("/twofactor", admin._("Two factors are off already."))
    if session.begin_password_check(admin.data, admin.sid or ""):
        return admin.page("twofactor.html", 429, on=True, left=twofactor.recovery_left(admin.settings),
                          error=admin._n("Too many wrong codes. Try again in {n} minute.",
                                         "Too many wrong codes. Try again in {n} minutes.",
                                         session.LOCKOUT // 60))
    code = admin.request.form().get("code", "")
    if twofactor.accept(admin.data, admin.settings, code) is twofactor.Accepted.NO:
        return admin.page("twofactor.html", 403, on=True, left=twofactor.recovery_left(admin.settings),
                          error=admin._("Wrong code; two factors stay on."))
    twofactor.turn_off(admin.data)
    return admin.done("/twofactor", admin._("Two factors are off: the password alone logs in."))
