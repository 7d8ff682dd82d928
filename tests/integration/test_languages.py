"""Every sentence an admin or public page shows follows `language`, with Russian plurals.

The admin and public apps are driven in-process (tests/servetools.py), once
with language=ru and once with language=en: a page in Russian holds no
English sentence of ours, and the other way round.
"""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import urlencode

import pytest

from servetools import call, environ, log_in
from vykhukhol.web import admin as admin_mod


class Admin:
    def __init__(self, site: Any) -> None:
        self.app = admin_mod.app(site.data, site.cgi_dir)
        self.cookie, self.csrf = log_in(self.app)

    def get(self, path: str) -> tuple[int, str]:
        status, _, page, _ = call(self.app, environ("GET", path, "", b"", "", "missing",
                                                    script="/admin", HTTP_COOKIE=self.cookie))
        return status, html.unescape(page)

    def post(self, path: str, fields: dict[str, str]) -> tuple[int, str]:
        body = urlencode({"csrf": self.csrf, **fields}).encode()
        status, headers, page, _ = call(self.app, environ(
            "POST", path, "", body, "application/x-www-form-urlencoded", str(len(body)),
            script="/admin", HTTP_COOKIE=self.cookie))
        if status == 303:
            location = headers["Location"].removeprefix("/admin")
            path, _, query = location.partition("?")
            status, _, page, _ = call(self.app, environ("GET", path, query, b"", "", "missing",
                                                        script="/admin", HTTP_COOKIE=self.cookie))
        return status, html.unescape(page)


def _admin(site: Any, lang: str) -> Admin:
    site.set(language=lang)
    return Admin(site)


@pytest.mark.parametrize(("count", "words"), [(1, "1 подписчик."), (2, "2 подписчика."),
                                              (5, "5 подписчиков."), (21, "21 подписчик.")])
def test_deleting_a_service_counts_its_subscribers_in_russian_grammar(site, count, words):
    site.service("news")
    for i in range(count):
        site.subscriber("news", f"reader{i}@example.org")
    status, page = _admin(site, "ru").get("/services/news/delete")
    assert status == 200, page
    assert f"Будут удалены служба, её письма и {words}" in page


def test_deleting_a_service_counts_its_subscribers_in_english(site):
    site.service("news")
    site.subscriber("news", "one@example.org")
    status, page = _admin(site, "en").get("/services/news/delete")
    assert "This deletes the service, its letters and its 1 subscriber." in page


@pytest.mark.parametrize(("lang", "summary"), [
    ("ru", "Импорт: добавлено 2 адреса, 1 адрес уже был, 5 строк отклонено."),
    ("en", "Import: 2 addresses added, 1 was already there, 5 lines refused."),
])
def test_the_import_summary_counts_in_the_pages_language(site, lang, summary):
    site.service("news")
    site.subscriber("news", "old@example.org")
    lines = ["old@example.org", "new1@example.org", "new2@example.org"]
    lines += [f"not an address {i}" for i in range(5)]
    admin = _admin(site, lang)
    status, page = admin.post("/services/news/import",
                              {"text": "\n".join(lines), "confirmed": "yes"})
    assert summary in " ".join(page.split()), re.findall(r'id="import-result">([^<]*)', page)


@pytest.mark.parametrize(("lang", "warning"), [
    ("ru", "news: 1 испорченная строка подписчиков (первая — строка "),
    ("en", "news: 1 malformed subscriber line (line "),
])
def test_the_status_page_counts_malformed_lines_in_the_pages_language(site, lang, warning):
    service = site.service("news")
    with service.subscribers_path.open("a") as handle:
        handle.write("this line is not a subscriber\n")
    status, page = _admin(site, lang).get("/")
    assert warning in page
