"""Admin login: sessions, CSRF tokens and the lock-out after wrong passwords.

Sessions are random ids kept server-side in ``data/state/sessions`` (id →
expiry), so logging out really ends one; the cookie is HttpOnly,
SameSite=Strict and Secure under https. The CSRF token of a session is an HMAC
of its id with the installation's secret.

A login POST that the browser says another site's page sent (Sec-Fetch-Site,
else Origin against Host) is refused before any password is looked at, and
counts nothing: another site cannot make the owner's browser lock the owner
out.

Password checks are counted in ``data/state/logins`` (so the count survives
restarts and every CGI process sees it), each counted *before* the check in
one locked step: at most ``MAX_FAILURES`` checks per client address per
``LOCKOUT`` seconds, however many arrive at once. A logged-in browser gets a
long-lived "known browser" cookie (on the status page the login leads to),
signed with the password hash; a browser that shows one is counted by itself (``BROWSER_FAILURES``), not by
address, so a stranger's failures from the owner's address (or a shared
proxy) do not lock the owner out. A stranger cannot make one without the
stored hash, and a password change invalidates them all.

With two factors on (docs/using/admin.md#admin-two-factor) the password's
answer is not a session but a ticket to the code step, the same whether the
password was right or wrong: ``data/state/second-steps`` keeps, for a few
minutes, what the password was, and the code step spends the ticket. So one
counted try is one password with one code, and nobody learns whether a
password was right without a right code.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import secrets
import time

from vykhukhol.datadir import DataDir
from vykhukhol.files import kv
from vykhukhol.web.clients import Counter, client_key

COOKIE = "vykhukhol_session"
BROWSER_COOKIE = "vykhukhol_browser"  # "this browser logged in before"
SESSION_SECONDS = 12 * 3600
BROWSER_SECONDS = 180 * 86400  # how long a browser stays known
MAX_FAILURES = 5      # password checks per client address per LOCKOUT
BROWSER_FAILURES = 3  # password checks per known browser per LOCKOUT
LOCKOUT = 15 * 60  # seconds
SECOND_STEP_SECONDS = 5 * 60  # how long the code step waits for its code
MAX_SECOND_STEPS = 2000       # tickets kept at most (the newest); each was a counted try


def _path(data: DataDir, name: str):
    return data.state / name


def create(data: DataDir) -> str:
    sid = secrets.token_urlsafe(24)
    expires = int(time.time()) + SESSION_SECONDS

    def change(values: dict[str, str]) -> None:
        now = time.time()
        for key in [k for k, v in values.items() if not v.isdigit() or int(v) < now]:
            del values[key]  # forget expired sessions while we are here
        values[sid] = str(expires)

    kv.change_kv(_path(data, "sessions"), change)
    return sid


def valid(data: DataDir, sid: str | None) -> bool:
    if not sid or len(sid) > 64:
        return False
    expires = kv.read_kv(_path(data, "sessions")).get(sid, "")
    return expires.isdigit() and int(expires) > time.time()


def end(data: DataDir, sid: str | None) -> None:
    if sid:
        kv.change_kv(_path(data, "sessions"), lambda values: values.pop(sid, None))


def end_all(data: DataDir, keep: str | None = None) -> None:
    """End every session (but ``keep``, the one changing the password)."""
    def change(values: dict[str, str]) -> None:
        for key in [k for k in values if k != keep]:
            del values[key]
    kv.change_kv(_path(data, "sessions"), change)


def csrf_token(secret: bytes, sid: str) -> str:
    return hmac.new(secret, f"csrf|{sid}".encode(), hashlib.sha256).hexdigest()


def csrf_ok(secret: bytes, sid: str | None, token: str | None) -> bool:
    if not sid or not token or not token.isascii():
        return False
    return hmac.compare_digest(csrf_token(secret, sid), token)


# --- the login form and its counters ---------------------------------------------

def cross_site(environ: dict) -> bool:
    """Whether the browser says this request was sent by another site's page.

    ``Sec-Fetch-Site`` decides when it is there (every current browser sends
    it): anything but ``same-origin`` or ``none`` (typed, bookmarked) is
    another site. Without it, an ``Origin`` that names another host than the
    request's ``Host`` is. A request with neither is no browser's cross-site
    form: a script can send it, but only from its own address, where it is
    counted like any other."""
    fetch = environ.get("HTTP_SEC_FETCH_SITE", "").strip().lower()
    if fetch:
        return fetch not in ("same-origin", "none")
    origin = environ.get("HTTP_ORIGIN", "").strip().lower()
    if not origin:
        return False
    from urllib.parse import urlsplit

    return urlsplit(origin).netloc != environ.get("HTTP_HOST", "").strip().lower()


def _browser_sig(stored_hash: str, browser: str) -> str:
    # Keyed by the stored password hash: only settings.ini holds it, and a new
    # password makes every earlier cookie worthless. (Not by security.secret,
    # so the owner's browser stays known while the secret is being repaired.)
    return hmac.new(stored_hash.encode(), f"browser|{browser}".encode(), hashlib.sha256).hexdigest()[:32]


def known_browser_cookie(stored_hash: str) -> str:
    """A new "this browser logged in before" cookie value, bound to the password."""
    browser = secrets.token_urlsafe(12)
    return f"{browser}.{_browser_sig(stored_hash, browser)}"


def known_browser(stored_hash: str, cookie: str | None) -> str | None:
    """The browser id of a valid known-browser cookie, else None."""
    browser, _, sig = (cookie or "").partition(".")
    if not browser or len(cookie or "") > 100 or not sig.isascii() or not stored_hash:
        return None
    return browser if hmac.compare_digest(_browser_sig(stored_hash, browser), sig) else None


def _logins(data: DataDir) -> Counter:
    return Counter(_path(data, "logins"), LOCKOUT)


def begin_attempt(data: DataDir, client: str, browser: str | None) -> float:
    """Count a password check before it is made, as one locked step with the
    look at the count: 0 if the check may go ahead, else the seconds to wait.
    A known browser is counted by itself (``BROWSER_FAILURES``), anyone else
    by address (``MAX_FAILURES``)."""
    if browser:
        return _logins(data).take(f"browser {browser}", BROWSER_FAILURES)
    return _logins(data).take(f"ip {client_key(client)}", MAX_FAILURES)


def attempt_succeeded(data: DataDir, client: str, browser: str | None) -> None:
    """The right password: the try counted by begin_attempt is forgiven."""
    _logins(data).forget(f"browser {browser}" if browser else f"ip {client_key(client)}")


def begin_password_check(data: DataDir, sid: str) -> float:
    """The "change password" page's check of the current one, counted like a
    login but per session (a stolen session cannot guess the password): 0 if
    it may go ahead, else the seconds to wait."""
    key = hashlib.sha256(sid.encode()).hexdigest()[:24]
    return _logins(data).take(f"session {key}", MAX_FAILURES)


# --- the second step (two factors) ---------------------------------------------


class Ticket(enum.Enum):
    """What a code step's ticket says of the password that came before it."""

    PASSWORD_RIGHT = "right"
    PASSWORD_WRONG = "wrong"
    GONE = "gone"  # unknown, spent or expired: the login starts again


def begin_second_step(data: DataDir, password_right: bool) -> str:
    """A ticket to the code step, after a counted password check."""
    ticket = secrets.token_urlsafe(24)
    now = int(time.time())

    def change(values: dict[str, str]) -> None:
        for key in [k for k, v in values.items() if not _still(v.partition(" ")[0], now)]:
            del values[key]
        for key in list(values)[:max(0, len(values) - MAX_SECOND_STEPS + 1)]:
            del values[key]
        right = Ticket.PASSWORD_RIGHT if password_right else Ticket.PASSWORD_WRONG
        values[ticket] = f"{now + SECOND_STEP_SECONDS} {right.value}"

    kv.change_kv(_path(data, "second-steps"), change)
    return ticket


def end_second_step(data: DataDir, ticket: str) -> Ticket:
    """Spend ``ticket`` (it serves one code only) and say what it held."""
    if not ticket or len(ticket) > 64:
        return Ticket.GONE
    held = ""

    def change(values: dict[str, str]) -> None:
        nonlocal held
        held = values.pop(ticket, "")

    kv.change_kv(_path(data, "second-steps"), change)
    expires, _, right = held.partition(" ")
    if not _still(expires, time.time()):
        return Ticket.GONE
    return Ticket.PASSWORD_RIGHT if right == Ticket.PASSWORD_RIGHT.value else Ticket.PASSWORD_WRONG


def _still(expires: str, now: float) -> bool:
    return expires.isdigit() and int(expires) >= now
