"""The counted link of a letter (cgi/go.py): a 302 to the letter's own link.

``GET go.py?l=<letter>&n=<number>&t=<token>`` answers 302 to link ``n`` of
the letter's stored links (``data/clicks/<letter>.links``) — the target comes
from there, never from the URL, so there is no open redirect — when ``t``
signs (letter, number) (:func:`vykhukhol.tokens.check_click`, constant time).
Anything else (a bad or missing token, a number the letter has not, a letter
with no stored links, junk) is the same 400 page in the site's language.

Each GET counts one click: its link's counter for the hour raised in
``<letter>.counts`` under its record lock, after the answer is out. Both
files' format is :mod:`vykhukhol.files.clicklinks`'s, shared with
:mod:`vykhukhol.newsletters.clicks`, which is not imported here: that
package's face is the newsletter jobs, whose imports would double this
page's start-up. A HEAD is answered alike and not counted. A mail scanner
that opens links with GET counts: docs/using/clicks.md#clicks says so. Nothing about the
visitor is kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from vykhukhol.datadir import LETTER_RE, DataDir
from vykhukhol.files import clicklinks
from vykhukhol.web.http import HttpError, Request, Response, wsgi_app
from vykhukhol.web.subscription import Site

NUMBER_RE = re.compile(r"[1-9][0-9]{0,2}")  # one way to write each: clicklinks.MAX_LINKS is 300


def app(data: DataDir) -> Callable:
    def handle(request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            raise HttpError(405, allow=("GET", "HEAD"))
        site = Site(data)
        settings = site.settings  # a 503 page while there is no secret to check with
        letter, number = request.value("l")[:80], request.value("n")[:8]
        target = None
        if LETTER_RE.fullmatch(letter) and NUMBER_RE.fullmatch(number):
            from vykhukhol import tokens

            if tokens.check_click(settings.secret, letter, int(number), request.value("t")[:80]):
                target = clicklinks.link(data, letter, int(number))
        if target is None:
            return site.message("link.invalid_title", "click.invalid_text", None, 400)
        if request.method == "GET":
            request.after(lambda: _count(data, letter, int(number)))
        return Response("", 302, headers=[("Location", target)])

    return wsgi_app(handle, lambda: Site(data).lang)


def _count(data: DataDir, letter: str, number: int) -> None:
    """One click of link ``number``, in the hour it is now."""
    from datetime import datetime, timezone

    clicklinks.add_click(data, letter, number, datetime.now(timezone.utc))
