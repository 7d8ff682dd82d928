"""``vykhukhol password --totp`` and ``--reset-totp``: two factors for the
admin from the host (docs/using/admin.md#admin-two-factor).

``--totp`` prints the otpauth:// URI and its QR code in block characters,
asks a code from the app (up to three tries, the same secret), keeps the
secret and prints the ten recovery codes, this once. ``--reset-totp`` is the
way back for an owner who lost the phone and the codes: whoever may run
commands on the host may read settings.ini anyway.
"""

from __future__ import annotations

import sys

from vykhukhol.cli.common import Context
from vykhukhol.errors import BadInput, Conflict
from vykhukhol.settings import twofactor

TRIES = 3  # codes asked before giving up (nothing changed)


def turn_on(ctx: Context) -> None:
    values = ctx.settings()
    if not values["security.admin_password"]:
        raise BadInput("set the admin password first: `vykhukhol password`")
    if twofactor.is_on(values):
        raise Conflict("two factors are on already; `vykhukhol password --reset-totp` first "
                       "to start again with a new secret")
    secret = twofactor.new_secret()
    uri = twofactor.uri(secret, values["admin_email"])
    print("Scan this QR code with an authenticator app (FreeOTP, Aegis, Google Authenticator, ...):")
    print(twofactor.qr_text(uri, blocks=_shows("\u2588\u2580\u2584")))
    print(f"or open this URI on the phone: {uri}")
    print(f"or type this key into the app by hand: {secret}")
    for attempt in range(1, TRIES + 1):
        code = _ask("code the app shows now: ")
        try:
            codes = twofactor.turn_on(ctx.data, secret, code)
            break
        except BadInput:
            if attempt == TRIES:
                raise
            print("that code does not match (is the phone's time right?); try again", file=sys.stderr)
    from vykhukhol.web import session  # two factors end every admin session

    session.end_all(ctx.data)
    print("two factors are on; every admin session has ended")
    print("recovery codes, each good for one login without the phone (shown only now: "
          "keep them safe):")
    for code in codes:
        print(f"  {code}")


def turn_off(ctx: Context) -> None:
    values = ctx.settings()
    if not twofactor.is_on(values):
        print("two factors were off; nothing changed")
        return
    twofactor.turn_off(ctx.data)
    print("two factors are off: the password alone logs in")


def _shows(characters: str) -> bool:
    """Whether standard output's encoding can write ``characters``."""
    try:
        characters.encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _ask(prompt: str) -> str:
    print(prompt, end="", flush=True)
    line = sys.stdin.readline()
    if not line:
        print()
        raise BadInput("no code on standard input; nothing changed")
    return line.strip()
