"""Run one of the apps as a CGI script (what the files in cgi/ and admin/ call).

The data directory is found as SPEC 3 says, with ``vykhukhol.path`` looked for
beside the calling script.
"""

from __future__ import annotations

import sys
from pathlib import Path


def run(app_name: str, script: str) -> None:
    from wsgiref.handlers import CGIHandler

    from vykhukhol.datadir import DataDir, locate

    data = DataDir(locate(None, Path(script).resolve().parent))
    CGIHandler().run(make_app(app_name, data))


def make_app(app_name: str, data):
    from vykhukhol.web import admin, cron, public

    factories = {
        "subscribe": public.subscribe, "confirm": public.confirm,
        "unsubscribe": public.unsubscribe, "cron": cron.app, "admin": admin.app,
    }
    if app_name not in factories:
        sys.exit(f"unknown app {app_name!r}")
    return factories[app_name](data)
