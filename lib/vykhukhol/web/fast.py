"""The subscribe form's fast path: ``GET cgi/subscribe.py?service=NAME`` answered
before the data directory's, the settings' and the services' machinery is
imported (docs/design/startup.md#startup-fastpath).

A CGI process pays for every module it imports, and most of a public page's
start-up went to pathlib, urllib, ipaddress, configparser, re and enum,
which the full readers need and the form does not. Here the form is drawn
from the same sources with plain ``os.path`` and the light ini reader
(:func:`vykhukhol.files.ini.read_ini`): the data directory found as
:func:`vykhukhol.datadir.locate` finds it, the language and the secret's
presence from settings.ini, the service's folder and title from its
service.ini, the page by :func:`vykhukhol.web.templating.render`, and the
answer written as :mod:`vykhukhol.web.http` and :func:`vykhukhol.web.cgi.serve`
write it. tests/unit/test_fast_path.py holds its answer to the full app's,
byte for byte.

It answers only the plain case and leaves everything else to the full app
(:func:`answer` returns None, having written nothing): another method, a
query with anything but plain names, https (the HSTS header) or a proxy's
``X-Forwarded-Proto``, a settings.ini or service.ini outside the light
reader's part, a language or secret the full reader would refuse or replace,
no such service (the 404 page), a service whose form asks the reader's
language (docs/using/languages.md#reader-language) or for fields.
"""

from __future__ import annotations

import os
import sys

from vykhukhol.files import read_text
from vykhukhol.files.ini import read_ini
from vykhukhol.i18n import LANGUAGES

NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
PLAIN_QUERY = NAME_CHARS | frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ.=&")
MIN_SECRET = 32  # settings.keys.MIN_SECRET
MAX_FIELDS = 200  # web.http.MAX_FIELDS


def is_name(name: str) -> bool:
    """:data:`vykhukhol.datadir.NAME_RE`, without ``re``."""
    return 0 < len(name) <= 40 and name[0] not in "_-" and all(c in NAME_CHARS for c in name)


def locate(scripts_dir: str) -> str | None:
    """The data directory as :func:`vykhukhol.datadir.locate` finds it for a CGI
    script, or None where that takes a turn this does not follow."""
    env = os.environ.get("VYKHUKHOL_DATA")
    if env:
        return os.path.realpath(env)
    pointer = os.path.join(scripts_dir, "vykhukhol.path")
    if not os.path.isfile(pointer):
        return None  # the checkout's cgi/ or data/: the full locator knows them
    text = (read_text(pointer, "") or "").strip()
    if not text:
        return None
    return os.path.realpath(os.path.join(os.path.dirname(pointer), text))


def site_values(root: str) -> tuple[str, str] | None:
    """(language, secret) of settings.ini as the settings would give them, or
    None when the full reader must say (no file, a value it would replace)."""
    path = os.path.join(root, "settings.ini")
    if not os.path.isfile(path):
        return None
    sections = read_ini(read_text(path, "") or "")
    if sections is None:
        return None
    lang = sections.get("main", {}).get("language", "ru")
    secret = sections.get("security", {}).get("secret", "")
    if lang not in LANGUAGES or len(secret) < MIN_SECRET or any(c.isspace() for c in secret):
        return None
    if sections.get("main", {}).get("subscribe_challenge", "off") != "off":
        return None  # the puzzle's script and its header: the full app draws them
    return lang, secret


class Service:
    """What the form shows of a service: its name and title."""

    __slots__ = ("name", "title", "folder")

    def __init__(self, name: str, title: str, folder: str) -> None:
        self.name, self.title, self.folder = name, title, folder


def find_service(root: str, name: str) -> Service | None:
    """The service as :func:`vykhukhol.services.find_service` finds it (the
    first DB, by name, whose folder holds it), or None."""
    services = os.path.join(root, "services")
    try:
        dbs = sorted(entry.name for entry in os.scandir(services)
                     if entry.is_dir() and is_name(entry.name))
    except OSError:
        return None
    for db in dbs:
        folder = os.path.join(services, db, name)
        ini = os.path.join(folder, "service.ini")
        if os.path.isfile(ini):
            sections = read_ini(read_text(ini, "") or "")
            if sections is None:
                return None
            if sections.get("service", {}).get("closed", "no") not in ("", "no"):
                return None  # closed to sign-ups (or a value to read): the full app says so
            if sections.get("service", {}).get("form_language", "no") not in ("", "no"):
                return None  # the form asks the reader's language: the full app draws it
            if sections.get("service", {}).get("form_fields", "").strip():
                return None  # a form asking for fields: the full app draws their inputs
            title = sections.get("service", {}).get("title", "") or name
            return Service(name, title, folder)
    return None


def answer(script: str) -> str | None:
    """Answer this CGI request, if it is the plain form: the data directory it
    read (the caller watches the cron after the answer); None, with nothing
    written, if not."""
    env = os.environ
    method = env.get("REQUEST_METHOD", "GET").upper()
    if method not in ("GET", "HEAD") or env.get("HTTP_X_FORWARDED_PROTO") \
            or env.get("HTTPS", "").lower() in ("on", "1", "yes"):
        return None
    query = env.get("QUERY_STRING", "")
    if not all(c in PLAIN_QUERY for c in query):
        return None
    if query.count("&") >= MAX_FIELDS:  # parse_qsl's count: the full app says 400
        return None
    names = [value for key, _, value in (part.partition("=") for part in query.split("&"))
             if key == "service"]
    if not names or not is_name(names[-1]):
        return None
    from vykhukhol.web import templating
    from vykhukhol.web.bots import stamp
    from vykhukhol.web.headers import SECURITY_HEADERS

    try:
        root = locate(os.path.dirname(os.path.realpath(script)))
        values = site_values(root) if root else None
        service = find_service(root, names[-1]) if root and values else None
        if not (root and values and service):
            return None
        page = templating.render("subscribe.html", values[0], 200,
                                 os.path.join(service.folder, "pages"),
                                 service=service, email="", name="",
                                 stamp=stamp(values[1].encode()), challenge="")
    except Exception:  # noqa: BLE001 - the full app reads it again, and says what is wrong
        return None
    body = page.body.encode("utf-8", errors="replace") if isinstance(page.body, str) else page.body
    own = {name.lower() for name, _ in page.headers}  # as http.respond: the page's header wins
    headers = [("Content-Type", page.content_type), ("Content-Length", str(len(body))),
               *(pair for pair in SECURITY_HEADERS if pair[0].lower() not in own), *page.headers]
    head = "".join(["Status: 200 OK\r\n", *(f"{n}: {v}\r\n" for n, v in headers), "\r\n"])
    out = sys.stdout.buffer
    out.write(head.encode("latin-1") + (b"" if method == "HEAD" else body))
    out.flush()
    return root

