"""Where the archive is: its folder, the addresses of its pages, the names
its files may have, and the ``{{ web_url }}`` a letter links to.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from vykhukhol import services as svc
from vykhukhol import tokens
from vykhukhol.datadir import CHECKOUT

if TYPE_CHECKING:
    from vykhukhol.settings import Settings

#: The names a file of a service's archive may have; the web routes serve no other.
FILE_NAME = re.compile(r"index\.html|feed\.atom|letter-[0-9]{3}\.html|news-[a-z0-9][a-z0-9_-]{0,39}\.html")
PREVIEW = "preview"  # the item of the admin's test letter: no copy to show


def folder(settings: Settings) -> Path:
    """Where the archive is written: ``archive_dir``, else ``archive/`` of the checkout."""
    return Path(settings["archive_dir"] or CHECKOUT / "archive")


def index_url(settings: Settings, service: str) -> str:
    """The address of the service's archive (its index page)."""
    return f"{settings['site_url'].rstrip('/')}/archive/{service}/"


def page_name(kind: str, ref: str) -> str:
    return f"letter-{int(ref):03d}.html" if kind == "letter" else f"news-{ref}.html"


def page_url(settings: Settings, service: str, kind: str, ref: str) -> str:
    return index_url(settings, service) + page_name(kind, ref)


def web_url(settings: Settings, service: svc.Service, item: str, email: str, public: bool) -> str:
    """``{{ web_url }}`` of a letter: its archive page when it is public there,
    else a signed link to the recipient's own copy."""
    if public and service.archive:
        return page_url(settings, service.name, "letter", item)
    return tokens.view_link(settings["site_url"], settings.secret, service.name, email, item)
