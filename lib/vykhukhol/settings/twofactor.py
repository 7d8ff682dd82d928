"""The admin's second factor: a TOTP secret (RFC 6238, the six digits of an
authenticator app) and ten one-time recovery codes (docs/using/admin.md#admin-two-factor).

Both live in settings.ini's ``[security]`` beside the password hash: the
secret as ``admin_totp`` (base32), the recovery codes only as hashes, comma
separated, in ``admin_recovery``; every change goes through
:func:`vykhukhol.settings.update` (one atomic write under the file's lock).

A code is checked against the steps of 30 seconds just before, at and just
after now (a phone's clock a little off still works), and only a step later
than the last one accepted counts: ``data/state/twofactor`` keeps that step,
so a code seen over a shoulder or replayed from a log is refused even within
its minute. A recovery code counts once: it is struck from the list in the
same locked step that finds it.

pyotp and segno are imported where they are used: every admin page loads
this module (the login's route), and a CGI process pays for each import.

What it does not do: count wrong codes (the login's counter does, with the
passwords, :mod:`vykhukhol.web.session`) or know of pages and prompts.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from vykhukhol import files
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.files import kv

SECRET_KEY = "security.admin_totp"
RECOVERY_KEY = "security.admin_recovery"
ISSUER = "Vykhukhol"
STEP = 30             # seconds a code lives (what every authenticator app uses)
DRIFT = 1             # steps before and after now also accepted: a clock 30 s off
RECOVERY_CODES = 10
RECOVERY_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i to misread
RECOVERY_LENGTH = 10  # characters, about 50 bits each
LAST_STEP = "last step"


class Accepted(enum.Enum):
    """What a code given at the login was."""

    CODE = "code"          # the app's code, for a step not used before
    RECOVERY = "recovery"  # a recovery code, now spent
    NO = "no"              # wrong, replayed, or a recovery code spent already


def is_on(values: settings_mod.Settings) -> bool:
    return bool(values[SECRET_KEY])


def new_secret() -> str:
    """A fresh TOTP secret: 32 base32 characters, 160 bits (RFC 4226's length)."""
    import pyotp

    return pyotp.random_base32(32)


def valid_secret(secret: str) -> bool:
    """Whether ``secret`` is a secret :func:`new_secret` could have made (a
    form's hidden field sends it back)."""
    return len(secret) == 32 and all(ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567" for ch in secret)


def uri(secret: str, account: str) -> str:
    """The otpauth:// URI an authenticator app reads from the QR code."""
    import pyotp

    return pyotp.TOTP(secret).provisioning_uri(name=account or "admin", issuer_name=ISSUER)


def qr_svg(text: str) -> str:
    """``text`` as a QR code: an inline <svg> element, black on white."""
    import segno

    return segno.make(text, error="m").svg_inline(scale=4, light="#fff")


def qr_text(text: str, blocks: bool = True) -> str:
    """``text`` as a QR code for a terminal: drawn with block characters, two
    rows to a line, or (``blocks`` false, for a terminal that cannot show
    them) with ``##``, a row to a line."""
    import io

    import segno

    code = segno.make(text, error="m")
    if blocks:
        out = io.StringIO()
        code.terminal(out=out, compact=True)
        return out.getvalue()
    # Dark modules as spaces on a light border, as the block drawing does:
    # most terminals are light on dark.
    return "\n".join("".join("  " if dark else "##" for dark in row)
                     for row in code.matrix_iter(border=2)) + "\n"


def _digits(code: str) -> str:
    return "".join(code.split())


def code_matches(secret: str, code: str, clock: Callable[[], float] = time.time) -> int | None:
    """The step whose code ``code`` is (now or one step either side), else None.
    Every candidate is compared, in constant time, whatever matched first."""
    code = _digits(code)
    if not (secret and len(code) == 6 and code.isascii() and code.isdigit()):
        return None
    import pyotp

    totp = pyotp.TOTP(secret)
    now = int(clock()) // STEP
    found = None
    for step in range(now - DRIFT, now + DRIFT + 1):
        if hmac.compare_digest(totp.at(step * STEP), code):
            found = step
    return found


def _state(data: DataDir) -> Path:
    return data.state / "twofactor"


def take_code(data: DataDir, secret: str, code: str, clock: Callable[[], float] = time.time) -> bool:
    """Whether ``code`` is right and newer than the last code accepted; an
    accepted one becomes the last, in one locked step (two logins racing
    with one code: one of them wins)."""
    step = code_matches(secret, code, clock)
    if step is None:
        return False
    taken = False

    def change(values: dict[str, str]) -> None:
        nonlocal taken
        last = values.get(LAST_STEP, "")
        if not last.isdigit() or step > int(last):
            values[LAST_STEP] = str(step)
            taken = True

    data.state.mkdir(parents=True, exist_ok=True)
    kv.change_kv(_state(data), change)
    return taken


# --- recovery codes -----------------------------------------------------------


def new_recovery_codes() -> list[str]:
    """Ten fresh recovery codes, shown as ``abcde-fghjk``."""
    codes = []
    for _ in range(RECOVERY_CODES):
        raw = "".join(secrets.choice(RECOVERY_ALPHABET) for _ in range(RECOVERY_LENGTH))
        codes.append(f"{raw[:5]}-{raw[5:]}")
    return codes


def recovery_hash(code: str) -> str:
    """What is kept of a recovery code. A plain hash is enough: the codes are
    random (50 bits), and the file that holds the hashes holds the TOTP secret
    too, so cracking them would gain nothing."""
    normal = "".join(ch for ch in code.lower() if ch.isalnum())
    return hashlib.sha256(f"vykhukhol-recovery|{normal}".encode()).hexdigest()[:32]


def _hashes(values: settings_mod.Settings) -> list[str]:
    return [h for h in values[RECOVERY_KEY].split(",") if h]


def recovery_left(values: settings_mod.Settings) -> int:
    return len(_hashes(values))


def spend_recovery_code(data: DataDir, code: str) -> bool:
    """Whether ``code`` is one of the recovery codes not spent yet; a found one
    is struck from the list under settings.ini's lock before this returns."""
    wanted = recovery_hash(code)
    with files.record_lock(data.settings):
        hashes = _hashes(settings_mod.load(data.settings))
        found = [h for h in hashes if hmac.compare_digest(h, wanted)]
        if not found:
            return False
        settings_mod.update(data.settings, {RECOVERY_KEY: ",".join(h for h in hashes if h != wanted)})
    return True


def accept(data: DataDir, values: settings_mod.Settings, code: str,
           clock: Callable[[], float] = time.time) -> Accepted:
    """A code given at the login: the app's six digits, or a recovery code."""
    secret = values[SECRET_KEY]
    if not secret or not code.strip():
        return Accepted.NO
    if _digits(code).isdigit():
        return Accepted.CODE if take_code(data, secret, code, clock) else Accepted.NO
    return Accepted.RECOVERY if spend_recovery_code(data, code) else Accepted.NO


# --- on and off ---------------------------------------------------------------


def turn_on(data: DataDir, secret: str, code: str, clock: Callable[[], float] = time.time) -> list[str]:
    """Keep ``secret`` once ``code`` shows the app has it; returns the ten new
    recovery codes (the only time they exist outside their hashes). The code
    that confirms counts as used: it cannot log in as well."""
    if not valid_secret(secret):
        raise BadInput("the two-factor secret is not one this program made; start again")
    if not take_code(data, secret, code, clock):
        raise BadInput("the code does not match; check the phone's time and type the code it shows now")
    codes = new_recovery_codes()
    settings_mod.update(data.settings, {SECRET_KEY: secret,
                                        RECOVERY_KEY: ",".join(recovery_hash(c) for c in codes)})
    return codes


def turn_off(data: DataDir) -> None:
    settings_mod.update(data.settings, {SECRET_KEY: "", RECOVERY_KEY: ""})
    files.remove(_state(data))
