"""The demo list a fresh ``vykhukhol serve`` creates, so a newcomer can
subscribe within a minute (DB ``main``, service ``demo`` enabled and
private, a two-letter welcome series, in the installation's language, whose
links come from the footer every list letter carries), and what makes a
served data directory "local".

The data directory around it (settings, password) is made by
:func:`vykhukhol.web.fresh_site.first_start`; ``init`` (the shared-hosting
path) leaves the data directory empty.

A data directory is *local* (a trial on this computer, not a site) while its
``site_url`` is plain http on a loopback address — as ``serve`` writes it
on a fresh directory. Its ``site_url`` follows the port it is served on
(:func:`follow_port`), and the status warnings about hosting (health.py)
leave it alone.
"""

from __future__ import annotations

from typing import TypedDict
from urllib.parse import urlsplit

from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import DataDir
from vykhukhol.errors import NotFound

NAME = "demo"
DB = "main"

class _Texts(TypedDict):
    title: str
    letters: list[tuple[str, str, str]]  # (subject, delay, body)


_TEXTS: dict[str, _Texts] = {
    "ru": {
        "title": "Демо-рассылка",
        "letters": [
            ("Добро пожаловать, {{ name or \"друг\" }}!", "0s",
             "Здравствуйте, {{ name or \"друг\" }}!\n\n"
             "Это первое письмо демо-рассылки «{{ service }}». Оно ушло сразу после\n"
             "подтверждения подписки; следующее придёт через день.\n"),
            ("Второе письмо серии", "1d",
             "Здравствуйте, {{ name or \"друг\" }}!\n\n"
             "Это второе и последнее письмо демо-рассылки. Свои письма, подписчиков и\n"
             "выпуски для всех подписчиков настраивают в админке.\n"),
        ],
    },
    "en": {
        "title": "Demo list",
        "letters": [
            ("Welcome, {{ name or \"friend\" }}!", "0s",
             "Hello {{ name or \"friend\" }},\n\n"
             "This is the first letter of the demo list \"{{ service }}\". It left right\n"
             "after you confirmed; the next one follows a day later.\n"),
            ("The second letter of the series", "1d",
             "Hello {{ name or \"friend\" }},\n\n"
             "This is the second and last letter of the demo list. Your own letters,\n"
             "subscribers and letters to all subscribers are set up in the admin.\n"),
        ],
    },
}


def create(data: DataDir, language: str) -> svc.Service:
    """DB ``main``, the enabled service ``demo`` and its welcome series; what an
    earlier, interrupted first start made of them is kept and completed."""
    texts = _TEXTS.get(language, _TEXTS["en"])
    if not data.db(DB).is_dir():
        svc.add_db(data, DB)
    try:
        service = svc.find_service(data, NAME)
    except NotFound:
        # Private: a trial list is not offered ("Join") on every subscriber's own page.
        service = svc.add_service(data, NAME, DB, {"title": texts["title"], "public": "no"})
    for subject, delay, body in texts["letters"][svc.letter_count(service):]:
        svc.add_letter(service, subject, delay, body)
    return svc.edit_service(data, NAME, {"enabled": "yes"})


_LOOPBACK = ("localhost", "::1")


def is_local(site_url: str) -> bool:
    """``site_url`` is plain http on this computer (a local ``serve``)."""
    try:
        parts = urlsplit(site_url)
        host = parts.hostname or ""
    except ValueError:
        return False
    return parts.scheme == "http" and (host in _LOOPBACK or host.startswith("127."))


def current_url(data: DataDir) -> str:
    """The data directory's ``site_url`` as it is now."""
    return settings_mod.load(data.settings)["site_url"]


def follow_port(data: DataDir, served_at: str) -> str | None:
    """A local data directory's ``site_url`` becomes ``served_at`` (the links in
    its letters must reach this server); returns the new value, or None when
    nothing changed (a site's own site_url is never touched)."""
    current = settings_mod.load(data.settings)["site_url"]
    if current.rstrip("/") == served_at or not is_local(current) or not is_local(served_at):
        return None
    settings_mod.update(data.settings, {"site_url": served_at})
    return served_at
