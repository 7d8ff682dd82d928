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
#: A letter's page in another language than the site's is ``letter-001.en.html``.
FILE_NAME = re.compile(r"index\.html|feed\.atom|letter-[0-9]{3}(?:\.ru|\.en)?\.html"
                       r"|news-[a-z0-9][a-z0-9_-]{0,39}(?:\.ru|\.en)?\.html")
PREVIEW = "preview"  # the item of the admin's test letter: no copy to show


def folder(settings: Settings) -> Path:
    """Where the archive is written: ``archive_dir``, else ``archive/`` of the checkout."""
    return Path(settings["archive_dir"] or CHECKOUT / "archive")


def index_url(settings: Settings, service: str) -> str:
    """The address of the service's archive (its index page)."""
    return f"{settings['site_url'].rstrip('/')}/archive/{service}/"


def page_name(kind: str, ref: str, language: str | None = None) -> str:
    """The page of a published letter; ``language``: of its version in that
    language (None: the letter in the site's)."""
    stem = f"letter-{int(ref):03d}" if kind == "letter" else f"news-{ref}"
    return f"{stem}.{language}.html" if language else f"{stem}.html"


def page_url(settings: Settings, service: str, kind: str, ref: str,
             language: str | None = None) -> str:
    return index_url(settings, service) + page_name(kind, ref, language)


def web_url(settings: Settings, service: svc.Service, item: str, email: str, public: bool,
            language: str | None = None) -> str:
    """``{{ web_url }}`` of a letter: its archive page when it is public there,
    else a signed link to the recipient's own copy. ``language``: the one the
    letter is written in, when it is a version in another language than the
    site's: the page of that version, or the copy with ``hl``
    (docs/using/archive.md#archive-languages)."""
    if public and service.archive:
        return page_url(settings, service.name, "letter", item, language)
    return tokens.view_link(settings["site_url"], settings.secret, service.name, email, item,
                            language=language)
