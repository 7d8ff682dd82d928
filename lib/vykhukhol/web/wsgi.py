"""The whole site as one WSGI application, for Passenger and any WSGI server.

``passenger_wsgi.py`` at the top of the checkout (the startup file cPanel's
and Plesk's "Setup Python App" run through Phusion Passenger) imports
:data:`application` from here; any other server names it directly::

    gunicorn vykhukhol.web.wsgi:application
    waitress-serve vykhukhol.web.wsgi:application

It is ``vykhukhol serve``'s dispatcher (:func:`vykhukhol.web.server.dispatcher`):
``/cgi/subscribe.py``, ``/cgi/confirm.py``, ``/cgi/unsubscribe.py``, ``/cgi/manage.py``, ``/cgi/go.py``,
``/cgi/hook.py/{provider}``, the API (``/api/`` and ``/cgi/api.py/``), the renamed cron script under its secret name only, and ``/admin/``; nothing
else, so ``/data/`` and ``/lib/`` are 404 here whatever the folder layout.
Mounted below a prefix (``SCRIPT_NAME`` ``/lists``), every link stays below
it. What it deliberately lacks is ``serve``'s ticker: a server may run
several copies of this app, or none between requests, so sender runs are
started by the cron ``wget`` of the cron URL, exactly as under mod_cgi.

The data directory is found as docs/reference/data-files.md#data-files-where
says (``VYKHUKHOL_DATA``, else
``vykhukhol.path`` in the checkout's ``cgi/``, else its ``data/``) at the
first request, not at import: a broken settings.ini or a missing package
shows an error page (the traceback goes to the server's error log) instead
of stopping the server from loading the app, and nothing is kept from a
failed attempt, so the next request after the fix just works.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

# The page when the site cannot even be built (a package missing, a file
# unreadable): no template, no settings, so no language either — both.
NOT_BUILT = ("<!doctype html><meta charset=\"utf-8\"><title>500</title>"
             "<p>Сайт временно не работает: ошибка установки. Подробности — в журнале ошибок сервера.</p>"
             "<p>The site is not working: an installation error. The server's error log says more.</p>")


def make_application(cgi_dir: Path | None = None) -> Callable:
    """A WSGI app for the whole site, built at its first request; ``cgi_dir``
    holds the cron script and ``vykhukhol.path`` (default: the checkout's ``cgi/``)."""
    built: list[Callable] = []
    building = threading.Lock()

    def site() -> Callable:
        with building:
            if not built:
                from vykhukhol.datadir import CHECKOUT, DataDir, locate
                from vykhukhol.web.server import dispatcher  # in the guard below

                scripts = cgi_dir or CHECKOUT / "cgi"
                built.append(dispatcher(DataDir(locate(None, scripts)), scripts))
            return built[0]

    def application(environ: dict, start_response: Callable) -> Iterable[bytes]:
        try:
            app = site()
        except Exception:  # noqa: BLE001 - a page of its own, never a dead server
            from vykhukhol.web.http import Response, respond

            print(traceback.format_exc(), file=environ.get("wsgi.errors", sys.stderr))
            return respond(Response(NOT_BUILT, 500), start_response,
                           environ.get("REQUEST_METHOD") == "HEAD")
        return app(environ, start_response)

    return application


application = make_application()
