"""Every sentence an admin or public page shows follows `language`, with Russian plurals.

The admin and public apps are driven in-process (tests/support/servetools.py), once
with language=ru and once with language=en: a page in Russian holds no
English sentence of ours, and the other way round.
"""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import urlencode

import pytest

from support.servetools import call, environ, log_in
from vykhukhol import settings as settings_mod
from vykhukhol.web import admin as admin_mod
from vykhukhol.web import subscription


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
    assert f"Будут удалены рассылка, её письма и {words}" in page


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


# --- errors: the page says them in its language --------------------------------

def _settings_form(site: Any, **changed: str) -> dict[str, str]:
    raw = site.settings().raw
    form = {key: str(raw.get(key, settings_mod.KEYS[key].default)) for key in admin_mod.SETTINGS_SHOWN
            if not settings_mod.KEYS[key].secret}
    return {**form, **changed}


@pytest.mark.parametrize(("lang", "shown", "english"), [
    ("ru", "mail.smtp_port: нужно число от 1 до 65535", None),
    ("en", "mail.smtp_port: must be from 1 to 65535", None),
])
def test_a_bad_settings_value_is_refused_in_the_pages_language(site, lang, shown, english):
    admin = _admin(site, lang)
    status, page = admin.post("/settings", _settings_form(site, **{"mail.smtp_port": "70000"}))
    assert status == 400, page
    assert shown in page


@pytest.mark.parametrize(("lang", "window", "shown"), [
    ("ru", "0 25 * * *", "час: 25 вне диапазона 0-23"),
    ("en", "0 25 * * *", "hour: 25 is out of range 0-23"),
    ("ru", "x 9 * * *", "минута: 'x' — не число"),
    ("ru", "0 9 * * 1 2", "в расписании пять полей (минута, час, день месяца, месяц, день недели), а указано 6"),
])
def test_a_bad_send_window_is_refused_in_the_pages_language(site, lang, window, shown):
    site.service("news")
    admin = _admin(site, lang)
    status, page = admin.post("/services/news", {"title": "News", "send_window": window})
    assert status == 400, page
    assert shown in page


@pytest.mark.parametrize(("lang", "shown"), [("ru", "тема: строка 1: "), ("en", "subject: line 1: ")])
def test_a_template_syntax_error_is_refused_in_the_pages_language(site, lang, shown):
    site.service("news")
    admin = _admin(site, lang)
    status, page = admin.post("/services/news/letters",
                              {"subject": "Hello {{ name", "delay": "1d", "body": "Hi"})
    assert status == 400, page
    error = re.search(r'role="alert"[^>]*>([^<]*)<', page).group(1)
    assert error.startswith(shown), error


@pytest.mark.parametrize(("lang", "shown"), [
    ("ru", "this is no address — этот адрес электронной почты неверен"),
    ("en", "this is no address — this e-mail address is not valid"),
])
def test_a_bad_import_line_is_explained_in_the_pages_language(site, lang, shown):
    site.service("news")
    admin = _admin(site, lang)
    status, page = admin.post("/services/news/import", {"text": "this is no address"})
    assert shown in " ".join(re.sub(r"<[^>]+>", "", page).split())


@pytest.mark.parametrize(("lang", "shown"), [
    ("ru", "Такой страницы или рассылки нет."), ("en", "There is no such page or list."),
])
def test_the_public_404_speaks_the_sites_language(site, lang, shown):
    site.set(language=lang)
    status, _, page, _ = call(subscription.subscribe(site.data), environ(
        "GET", "", "service=nosuch", b"", "", "missing", script="/cgi/subscribe.py"))
    page = html.unescape(page)
    assert status == 404
    assert shown in page
    detail = "рассылки 'nosuch' нет" if lang == "ru" else "no service 'nosuch'"
    assert detail in page, re.findall(r"<p>.*?</p>", page)


@pytest.mark.parametrize(("lang", "why"), [("ru", "база занята другим запуском"),
                                           ("en", "another run holds the lock")])
def test_the_runs_table_gives_the_stop_reason_in_the_pages_language(site, lang, why):
    from vykhukhol.files import runlog

    log = runlog.RunLog(site.data, "run-1")
    log.write("run started")
    log.write("run ended after 0.1s: another run holds the lock; letters 0")
    status, page = _admin(site, lang).get("/")
    assert re.search(rf"<td>{why}</td>", page), re.findall(r'<table id="runs">.*?</table>', page, re.S)


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_no_page_of_a_russian_site_shows_an_english_sentence_of_ours(site, lang):
    """The pages above in one language hold none of the other's words."""
    site.service("news")
    site.subscriber("news", "a@example.org")
    admin = _admin(site, lang)
    pages = [admin.get(path)[1] for path in ("/", "/settings", "/services", "/services/news",
                                             "/services/news/subscribers", "/newsletters")]
    text = " ".join(re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)[^>]*>.*?</\1>", "", p, flags=re.S))
                    for p in pages)
    if lang == "ru":
        for english in ("Delete", "Status", "Settings", "Subscribers", "Import", "No run yet"):
            assert f" {english} " not in f" {text} ", english
    else:
        assert not re.search(r"[а-яА-ЯёЁ]", text), re.findall(r"\S*[а-яА-ЯёЁ]+\S*", text)[:10]


@pytest.mark.parametrize(("lang", "progress"), [
    ("ru", "передано 0 / 1; 0 отказов, 0 писем пропущено, 0 под сомнением"),
    ("en", "handed over 0 / 1; 0 refused, 0 letters skipped, 0 in doubt"),
])
def test_newsletter_progress_counts_in_the_pages_language(site, lang, progress):
    from vykhukhol import newsletters

    site.service("news")
    site.subscriber("news", "a@example.org")
    newsletters.create(site.data, ["news"], "Big news", "Hello!")
    status, page = _admin(site, lang).get("/newsletters")
    cell = re.search(r'<td class="progress">([^<]*)<', page).group(1)
    assert " ".join(cell.split()) == progress


@pytest.mark.parametrize(("lang", "shown"), [
    ("ru", "timezone: неизвестный часовой пояс IANA (например, Europe/Moscow или UTC); "
           "используется значение по умолчанию 'UTC'"),
    ("en", "timezone: not a known IANA time zone (for example Europe/Moscow or UTC); "
           "the default 'UTC' is used"),
])
def test_a_bad_value_written_into_settings_ini_is_reported_in_the_pages_language(site, lang, shown):
    admin = _admin(site, lang)
    ini = site.data.settings
    ini.write_text(ini.read_text().replace("timezone = ", "timezone = Mars/Olympus\n#", 1))
    assert "Mars/Olympus" in ini.read_text()
    status, page = admin.get("/")
    assert shown in page


def test_the_bounces_page_shows_the_logged_reasons_in_the_page_language(site):
    """bounces.log keeps English, like every log; the page translates each known
    piece of a reason and shows a mail server's own words as written."""
    from vykhukhol.bounces import record

    record.write(site.data, [
        record.line("m1", "permanent", "service news", "a@example.org", "imap",
                    "permanent failure reported for a@example.org (5.1.1)"),
        record.line("m2", "unknown tag", "-", "-", "pipe",
                    "a tag that matches nobody (forged, altered, or the address left the list); "
                    "kept: not a bounce report"),
        record.line("m3", "temporary", "service news", "b@example.org", "imap",
                    "temporary failure reported for b@example.org; no tag"),
    ])
    status, page = _admin(site, "ru").get("/bounces")
    assert status == 200
    text = html.unescape(re.sub(r"<[^>]+>", "", page))  # the values are marked as data
    assert "сообщено о постоянной ошибке доставки для a@example.org (5.1.1)" in text
    assert ("метка не подходит ни к кому (подделана, изменена или адрес уже покинул список); "
            "сохранено для администратора: не отчёт о недоставке") in text
    assert "сообщено о временной ошибке доставки для b@example.org; без метки" in text
    assert "failure reported" not in text
    status, page = _admin(site, "en").get("/bounces")
    assert "permanent failure reported for a@example.org (5.1.1)" in html.unescape(
        re.sub(r"<[^>]+>", "", page))
