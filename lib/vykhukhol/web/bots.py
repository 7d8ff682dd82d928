"""What keeps bots from bombing the public forms
(docs/using/subscriber-pages.md#subscriber-bots): the subscribe form, the
form an owner pastes on his site, and the own page's link request.

A post is taken for a bot's when

- it filled the honeypot (``website``, a field people never see);
- its form stamp (``ts``: the time the form was drawn, signed with the site's
  secret, checked in constant time) is forged, younger than
  :data:`MIN_FILL_SECONDS` or older than :data:`STAMP_LIFE`;
- ``subscribe_challenge`` is on and it carries no solved proof-of-work
  puzzle (:mod:`vykhukhol.web.challenge`, imported only then).

A form without a stamp (one pasted on a site before the stamp existed, or
drawn without JavaScript from a pasted snippet) is not refused for that: the
honeypot, the caps and the alarm judge it. A bot's post gets the person's
answer, stores nothing and sends nothing; it counts against its client's
hourly cap as any post does (which also costs it the time a person's post
takes) and leaves one line of ``log/pages.log``.

A confirmation request then passes :class:`Gate` after the answer, before
it is mailed: at most ``subscribe_address_daily_limit`` requests to one
address a day, whoever asks (counted by the address's keyed hash, so the
counter names nobody; over it the line stays unconfirmed and unasked), and,
over all lists, past ``subscribe_alarm`` sign-ups in an hour the requests
are held (:mod:`vykhukhol.members.held`) and the owner is told once.

This module runs on the subscribe page's fast path
(docs/design/startup.md#startup-boundary): the standard library's light
parts only, the rest imported where used.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # typing is not imported: a public page pays for every import
if TYPE_CHECKING:
    from vykhukhol.datadir import DataDir
    from vykhukhol.settings import Settings
    from vykhukhol.web.response import Response

HONEYPOT = "website"         # the hidden field a person leaves empty
STAMP = "ts"                 # the signed time the form was drawn
SOLUTION = "altcha"          # the solved puzzle, when subscribe_challenge is on
MIN_FILL_SECONDS = 2         # a person takes longer to type an address
STAMP_LIFE = 7 * 86400       # seconds a drawn form stays good
ADDRESS_WINDOW = 86400       # seconds: subscribe_address_daily_limit counts within this
ALARM_WINDOW = 3600          # seconds: subscribe_alarm counts within this


def stamp(secret: bytes, moment: float | None = None) -> str:
    """The form stamp: ``<unix time>.<its HMAC>``."""
    from vykhukhol import tokens

    drawn = int(time.time() if moment is None else moment)
    return f"{drawn}.{tokens.sign(secret, f'form:{drawn}'.encode())}"


def stamp_problem(secret: bytes, value: str, moment: float | None = None) -> str:
    """Why ``value`` is not the stamp of a form a person filled ("" when it is)."""
    from vykhukhol import tokens

    drawn, _, signature = value.partition(".")
    if not (drawn.isascii() and drawn.isdigit()) or len(drawn) > 12 or len(signature) != tokens.TOKEN_LENGTH \
            or not signature.isascii():
        return "a forged form stamp"
    from _operator import _compare_digest

    if not _compare_digest(tokens.sign(secret, f"form:{drawn}".encode()), signature):
        return "a forged form stamp"
    age = (time.time() if moment is None else moment) - int(drawn)
    if age < MIN_FILL_SECONDS:
        return f"filled in {max(age, 0):.0f} s"
    if age > STAMP_LIFE:
        return "a form stamp too old"
    return ""


def caught(data: DataDir, settings: Settings, form: dict[str, str]) -> str:
    """Why the post is a bot's, or "" (see the module's docstring)."""
    if form.get(HONEYPOT):
        return "the honeypot filled"
    if form.get(STAMP):
        problem = stamp_problem(settings.secret, form[STAMP][:100])
        if problem:
            return problem
    if settings["subscribe_challenge"] == "on":
        from vykhukhol.web import challenge

        return challenge.problem(data, settings.secret, form.get(SOLUTION, "")[:4000])
    return ""


def log_caught(data: DataDir, page: str, client: str, reason: str) -> None:
    """The one trace a bot's post leaves."""
    from vykhukhol.files.runlog import page_log

    page_log(data).write(f"{page}: a post from {client or '?'} taken for a bot's ({reason}): "
                         "nothing stored, nothing sent")


class Gate:
    """``hold`` for membership.subscribe, asked after the answer, just before
    a confirmation request would be mailed: the per-address daily cap, then
    the alarm. Both are counted here, after the answer, so neither costs the
    visitor's wait nor makes a new address's answer slower than a known one's."""

    def __init__(self, data: DataDir, settings: Settings) -> None:
        self.data, self.settings = data, settings

    def hold(self, service: str, address: str) -> bool:
        """True: the request does not go now (over the cap: not at all; in a
        wave: kept for the owner). A state file the disk refuses lets it go."""
        from vykhukhol.errors import VykhukholError

        try:
            if self._over_cap(address):
                self._log(f"subscribe: {address} is over subscribe_address_daily_limit "
                          f"({self.settings['subscribe_address_daily_limit']} a day): no "
                          f"confirmation was sent for {service}")
                return True
            if not self._in_a_wave():
                return False
            from vykhukhol.members import held
            from vykhukhol.timeutil import now

            held.note_held(self.data, service, address, now())
            return True
        except (VykhukholError, OSError):
            return False

    def _over_cap(self, address: str) -> bool:
        from vykhukhol.addresses import email_key
        from vykhukhol.members.suppression import hashed
        from vykhukhol.web.clients import Counter

        counter = Counter(self.data.state / "confirm-requests", ADDRESS_WINDOW, synced=False)
        # The key is the address's keyed hash: the file names nobody.
        return bool(counter.take(hashed(self.settings.secret, email_key(address)),
                                 self.settings["subscribe_address_daily_limit"]))

    def _in_a_wave(self) -> bool:
        """Count one sign-up; whether its request is to be held."""
        from vykhukhol.members import held

        if held.holding(self.data):
            return True
        alarm = self.settings["subscribe_alarm"]
        if not alarm:
            return False
        from vykhukhol.web.clients import Counter

        if not Counter(self.data.state / "signups", ALARM_WINDOW, synced=False).take("all", alarm):
            return False
        from vykhukhol.timeutil import now

        if held.start_hold(self.data, now()):
            self._tell_owner()
        return True

    def _tell_owner(self) -> None:
        from vykhukhol.files.runlog import page_log
        from vykhukhol.timeutil import now
        from vykhukhol.watch import alerts

        # The alert's line goes to log/pages.log: a page never writes the run log.
        alerts.raise_alert(self.data, self.settings, page_log(self.data), alerts.SIGNUP_WAVE,
                           now(), alarm=str(self.settings["subscribe_alarm"]))

    def _log(self, line: str) -> None:
        from vykhukhol.files.runlog import page_log

        page_log(self.data).write(line)


# --- what the pages draw ---------------------------------------------------------------

WIDGET_CSP = ("default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
              "script-src 'self'; connect-src 'self'; "
              "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def fields(settings: Settings) -> dict[str, str]:
    """What a form's template draws: a fresh stamp, and whether the puzzle's
    script and field are on."""
    return {"stamp": stamp(settings.secret),
            "challenge": "on" if settings["subscribe_challenge"] == "on" else ""}


def allow_widget(response: Response, settings: Settings) -> Response:
    """The page's script may run (and ask for its puzzle) while the puzzle is on."""
    if settings["subscribe_challenge"] == "on":
        response.headers.append(("Content-Security-Policy", WIDGET_CSP))
    return response


def part(settings: Settings, name: str) -> Response:
    """``subscribe.py?part=``: ``widget.js``, the forms' script, or ``start``,
    a stamp and (when on) a puzzle for it. Any site may ask for them: the form
    pasted on the owner's site does."""
    from vykhukhol.web.response import Response

    shared = [("Access-Control-Allow-Origin", "*")]
    if name == "widget.js":
        from pathlib import Path

        script = (Path(__file__).parent.parent / "templates" / "widget.js").read_bytes()
        return Response(script, 200, "text/javascript; charset=utf-8",
                        headers=shared + [("Cache-Control", "public, max-age=86400")])
    if name != "start":
        from vykhukhol.errors import NotFound

        raise NotFound("no such part")
    import json

    puzzle = None
    if settings["subscribe_challenge"] == "on":
        from vykhukhol.web import challenge

        puzzle = challenge.new(settings.secret)
    body = json.dumps({"stamp": stamp(settings.secret), "challenge": puzzle})
    return Response(body, 200, "application/json", headers=shared)
