"""A fresh ``vykhukhol serve``: a data directory without settings.ini made
ready to serve, with the demo list (:mod:`vykhukhol.services.demo`) in the
language of the person starting it.

Only ``serve`` on a data directory without settings.ini calls
:func:`first_start`; ``init`` (the shared-hosting path) leaves the data
directory empty. settings.ini is written last, after the demo list: a first
start that fails half-way leaves no settings.ini, so the next start makes
the directory again and prints a password.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from vykhukhol import newsletters
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import DataDir
from vykhukhol.files import RenameLock
from vykhukhol.services import demo
from vykhukhol.settings import password as auth


def locale_language(environ: Mapping[str, str] = os.environ) -> str:
    """``ru`` when the first of LC_ALL, LC_MESSAGES, LANG that is set names a
    Russian locale (``ru_RU.UTF-8``), else ``en``: the language the person
    starting ``serve`` reads their terminal in."""
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(name, "")
        if value:
            return "ru" if value.lower().startswith("ru") else "en"
    return "en"


def first_start(data: DataDir, site_url: str, language: str) -> str | None:
    """Make a data directory without settings.ini ready to serve: the defaults
    (``site_url``, ``language``), a new admin password (returned, to be printed
    once) and the demo list. None when settings.ini is there already."""
    import secrets

    if data.settings.exists():
        return None
    password = secrets.token_urlsafe(9)
    raw = settings_mod.initial(site_url=site_url)
    raw["language"] = language
    raw["security.admin_password"] = auth.hash_password(password)
    data.make_skeleton()
    RenameLock(data.newsletters, newsletters.LOCK_STEM).ensure()
    demo.create(data, language)
    settings_mod.write_initial(data.settings, raw)  # last: its presence means "made"
    return password
