"""Run one of the apps as a CGI script (what the files in cgi/ and admin/ call).

The data directory is found as SPEC 3 says, with ``vykhukhol.path`` looked for
beside the calling script. Work a page hands to ``Request.after`` (a
confirmation letter) runs once the whole answer is written and flushed to the
web server, so the visitor's page does not wait for the mail server.
"""

from __future__ import annotations

import sys
from pathlib import Path


def run(app_name: str, script: str) -> None:
    if app_name == "cron":
        import os

        from vykhukhol import idle  # an idle tick answers before the rest is imported

        if idle.serve_cgi(idle.data_root(os.path.dirname(os.path.realpath(script)))):
            return
    from wsgiref.handlers import CGIHandler

    from vykhukhol.datadir import DataDir, locate
    from vykhukhol.web.http import AFTER

    data = DataDir(locate(None, Path(script).resolve().parent))
    app = make_app(app_name, data)
    later: list = []

    def with_after(environ: dict, start_response):
        environ[AFTER] = later.extend
        return app(environ, start_response)

    CGIHandler().run(with_after)
    sys.stdout.flush()
    for action in later:
        action()


APPS = {  # app name → (module, factory); only the one asked for is imported
    "subscribe": ("public", "subscribe"), "confirm": ("public", "confirm"),
    "unsubscribe": ("public", "unsubscribe"), "cron": ("cron", "app"), "admin": ("admin", "app"),
    "view": ("archive", "view"), "archive": ("archive", "static"),
    "hook": ("vykhukhol.hooks.app", "app"),  # a full name: the callbacks live in their package
}


def make_app(app_name: str, data, cgi_dir=None):
    """The WSGI app ``app_name``; importing only its module keeps a CGI process
    small, and a fault in one page's module from taking down the others."""
    import importlib

    if app_name not in APPS:
        sys.exit(f"unknown app {app_name!r}")
    module, factory = APPS[app_name]
    name = module if "." in module else f"vykhukhol.web.{module}"
    make = getattr(importlib.import_module(name), factory)
    return make(data, cgi_dir) if app_name == "admin" else make(data)
