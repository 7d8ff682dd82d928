"""Admin login: sessions, CSRF tokens and the lock-out after wrong passwords.

Sessions are random ids kept server-side in ``data/state/sessions`` (id →
expiry), so logging out really ends one; the cookie is HttpOnly,
SameSite=Strict and Secure under https. The CSRF token of a session is an HMAC
of its id with the installation's secret. Wrong passwords are counted per
client address in ``data/state/logins`` (so the count survives restarts and
every CGI process sees it): after ``MAX_FAILURES`` the address is locked out
for ``LOCKOUT`` seconds, right password or not.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

from vykhukhol import state
from vykhukhol.datadir import DataDir

COOKIE = "vykhukhol_session"
SESSION_SECONDS = 12 * 3600
MAX_FAILURES = 5
LOCKOUT = 15 * 60  # seconds


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

    state.change_kv(_path(data, "sessions"), change)
    return sid


def valid(data: DataDir, sid: str | None) -> bool:
    if not sid or len(sid) > 64:
        return False
    expires = state.read_kv(_path(data, "sessions")).get(sid, "")
    return expires.isdigit() and int(expires) > time.time()


def end(data: DataDir, sid: str | None) -> None:
    if sid:
        state.change_kv(_path(data, "sessions"), lambda values: values.pop(sid, None))


def end_all(data: DataDir) -> None:
    state.write_kv(_path(data, "sessions"), {})


def csrf_token(secret: bytes, sid: str) -> str:
    return hmac.new(secret, f"csrf|{sid}".encode(), hashlib.sha256).hexdigest()


def csrf_ok(secret: bytes, sid: str | None, token: str | None) -> bool:
    if not sid or not token or not token.isascii():
        return False
    return hmac.compare_digest(csrf_token(secret, sid), token)


def _client_key(remote: str) -> str:
    return "ip " + (remote or "unknown").replace("\t", " ")[:64]


def locked_out(data: DataDir, remote: str) -> bool:
    values = state.read_kv(_path(data, "logins"))
    count, _, since = values.get(_client_key(remote), "0 0").partition(" ")
    if not count.isdigit() or int(count) < MAX_FAILURES:
        return False
    return time.time() - float(since or 0) < LOCKOUT


def note_failure(data: DataDir, remote: str) -> None:
    key = _client_key(remote)

    def change(values: dict[str, str]) -> None:
        count, _, since = values.get(key, "0 0").partition(" ")
        count = int(count) if count.isdigit() else 0
        if count >= MAX_FAILURES and time.time() - float(since or 0) >= LOCKOUT:
            count = 0  # an old lock-out has run out: start counting again
        values[key] = f"{count + 1} {time.time():.0f}"

    state.change_kv(_path(data, "logins"), change)


def note_success(data: DataDir, remote: str) -> None:
    key = _client_key(remote)
    path = _path(data, "logins")
    if key in state.read_kv(path):
        state.change_kv(path, lambda values: values.pop(key, None))
