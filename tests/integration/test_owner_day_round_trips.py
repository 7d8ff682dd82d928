"""The owner's day, through the admin app
in-process and the command line: an export read back in keeps its names and
stores no formula sign it did not have; exports in the separator a
spreadsheet of the site's language opens, the admin's choice remembered; a
preview names a field as the save does; no blank "web" row in Recent runs;
a GET on a form's address is an admin page; the archive, the snippet, the
suppression list's sources and the durations follow the language; the demo
list is private. (The Chromium side: tests/browser/test_owner_day_*.py.)"""

from __future__ import annotations

import html
import io
import re
from typing import Any
from urllib.parse import urlencode

import pytest

from support.servetools import call, environ, log_in
from vykhukhol import archive
from vykhukhol import services as svc
from vykhukhol.archive import publish
from vykhukhol.files.runlog import Entry
from vykhukhol.members import export, importing, suppression
from vykhukhol.members.suppression import Why
from vykhukhol.services import demo
from vykhukhol.timeutil import now
from vykhukhol.web import admin as admin_mod

FORMULAS = ['=HYPERLINK("http://x.example","x")', "+1", "-2 dash", "@SUM(A1)", "'=quoted",
            "a,=b;+c", "Ann"]


class Admin:
    def __init__(self, site: Any) -> None:
        self.app = admin_mod.app(site.data, site.cgi_dir)
        self.cookie, self.csrf = log_in(self.app)

    def get(self, path: str, query: str = "", cookie: str = "") -> tuple[int, dict, str]:
        status, headers, page, _ = call(self.app, environ(
            "GET", path, query, b"", "", "missing", script="/admin",
            HTTP_COOKIE="; ".join(c for c in (self.cookie, cookie) if c)))
        return status, headers, page

    def post(self, path: str, fields: dict[str, str]) -> tuple[int, dict, str]:
        body = urlencode({"csrf": self.csrf, **fields}).encode()
        status, headers, page, _ = call(self.app, environ(
            "POST", path, "", body, "application/x-www-form-urlencoded", str(len(body)),
            script="/admin", HTTP_COOKIE=self.cookie))
        return status, headers, page


def _names(site: Any, service: str) -> dict[str, str]:
    return {email: sub.name for email, sub in site.subscribers(service).items()}


# --- item 11: round trips ----------------------------------------------------------

@pytest.mark.parametrize("dialect", ["comma", "semicolon"])
def test_an_export_imported_again_keeps_every_name_as_it_was_stored(site, dialect):
    site.service("news")
    site.service("copy")
    for i, name in enumerate(FORMULAS):
        site.subscriber("news", f"u{i}@example.org", name)
    out = io.StringIO()
    export.write_csv(svc.find_service(site.data, "news").subscribers_path, out, dialect=dialect)
    assert "'=HYPERLINK" in out.getvalue()  # the file itself stays defused
    result = importing.import_addresses(site.data, site.settings(), "copy", out.getvalue(), True)
    assert result["added"] == len(FORMULAS) and not result["invalid"]
    assert _names(site, "copy") == _names(site, "news")
    assert _names(site, "copy")["u0@example.org"] == FORMULAS[0]


def test_a_defused_cell_reads_back_and_a_plain_apostrophe_stays():
    for cell in FORMULAS + ["'", "it's", "-", "''=x", " =x"]:
        assert export.undefused(export.defused(cell)) == cell, cell
    assert export.undefused("'plain") == "'plain"


def test_a_sep_line_names_the_separator_and_is_no_record():
    valid, invalid = importing.parse_import("sep=;\nemail;name\na@example.org;Ann, B.\n")
    assert valid == [("a@example.org", "Ann, B.")] and invalid == []


# --- item 14: the spreadsheet's dialect --------------------------------------------

def test_exports_follow_the_site_language_and_then_the_admins_choice(site):
    site.service("news")
    site.subscriber("news", "a@example.org", "Ann")
    suppression.add(site.data, site.settings().secret, "s@example.org", Why.ADMIN, "cli", now())
    site.set(language="ru")
    admin = Admin(site)
    for path in ("/services/news/export.csv", "/suppressed.csv"):
        status, headers, body = admin.get(path)
        assert status == 200 and re.match("\ufeff[a-z]+;[a-z]+;", body), (path, body[:40])
    status, headers, body = admin.get("/services/news/export.csv", "dialect=comma")
    assert body.startswith("\ufeffemail,name,")
    cookie = headers["Set-Cookie"]
    assert cookie.startswith("vykhukhol_csv=comma;") and "Max-Age=" in cookie
    status, _, body = admin.get("/suppressed.csv", cookie=cookie.split(";")[0])
    assert re.match("\ufeff[a-z]+,[a-z]+,", body), "the choice is remembered"
    status, _, page = admin.get("/services/news/subscribers", cookie=cookie.split(";")[0])
    assert '<option value="comma" selected>' in page


# --- item 11: labels, pages, runs --------------------------------------------------

def test_a_preview_and_a_save_name_the_letters_text_alike(site):
    site.service("course")
    site.set(language="en")
    admin = Admin(site)
    fields = {"subject": "S", "delay": "0s", "body": "{% if x %}open", "html": ""}
    _, _, preview = admin.post("/services/course/letters", {**fields, "action": "preview"})
    _, _, save = admin.post("/services/course/letters", {**fields, "action": "save"})
    for page in (preview, save):
        page = html.unescape(page)
        assert "text: line 1:" in page and "body:" not in page, page[-1500:]


def test_a_get_on_a_forms_address_is_an_admin_page_in_the_admins_language(site):
    site.set(language="ru")
    admin = Admin(site)
    status, headers, page = admin.get("/settings/test")
    assert status == 405 and "POST" in headers["Allow"]
    assert 'class="brand"' in page and 'id="error-text"' in page
    assert "принимает кнопку формы" in html.unescape(page)


def test_recent_runs_show_no_row_for_the_web_pages():
    lines = [Entry("2026-12-01T10:00:00Z", "web", "info", "manage: an address was erased"),
             Entry("2026-12-01T10:00:01Z", "web-1a2b", "info", "sent a confirmation"),
             Entry("2026-12-01T10:00:02Z", "r1", "info", "run ended after 1.0s: nothing left to send; letters 0")]
    assert [run["lease"] for run in admin_mod.recent_runs(lines)] == ["r1"]


# --- items 10, 12: languages and the demo ------------------------------------------

def test_the_archive_follows_a_language_change_without_archive_build(site):
    site.service("news", letters=[("Hello", "0s", "Text.")])
    site.set(language="en")
    publish.switch(site.data, site.settings(), "news", True)
    index = archive.folder(site.settings()) / "news" / "index.html"
    assert '<html lang="en">' in index.read_text(encoding="utf-8")
    site.ok("settings", "set", "language", "ru")
    assert '<html lang="ru">' in index.read_text(encoding="utf-8")
    admin = Admin(site)
    form = {key: str(site.settings().raw.get(key, "")) for key in admin_mod.SETTINGS_SHOWN
            if not key.startswith(("hooks.", "mail.smtp_password"))}
    status, _, page = admin.post("/settings", {**form, "language": "en"})
    assert status == 303, html.unescape(page)[-800:]
    assert '<html lang="en">' in index.read_text(encoding="utf-8")


def test_the_snippet_the_sources_and_the_durations_speak_russian(site):
    site.service("news", letters=[("One", "3d", "x"), ("Two", "5d", "y"), ("Three", "45s", "z")])
    suppression.add(site.data, site.settings().secret, "s@example.org", Why.ADMIN, "cli", now())
    site.set(language="ru")
    admin = Admin(site)
    page = html.unescape(admin.get("/services/news")[2])
    assert 'placeholder="имя"' in page and ">Подписаться</button>" in page
    assert "<td>3 дня</td>" in page and "<td>5 дней</td>" in page and "<td>45 с</td>" in page
    assert ">Выхухоль</span>" in page
    page = html.unescape(admin.get("/suppressed")[2])
    assert "<td>командная строка</td>" in page and "<td>cli</td>" not in page


@pytest.mark.parametrize(("seconds", "ru", "en"), [
    (30, "30 с", "30 s"), (60, "1 мин", "1 min"), (3600, "1 час", "1 hour"),
    (2 * 3600, "2 часа", "2 hours"), (5 * 3600, "5 часов", "5 hours"), (86400, "1 день", "1 day"),
    (3 * 86400, "3 дня", "3 days"), (21 * 86400, "21 день", "21 days"),
    (86400 + 2 * 3600 + 5, "1 день 2 часа", "1 day 2 hours")])
def test_durations_are_words_with_the_languages_plurals(seconds, ru, en):
    from vykhukhol.i18n import duration

    assert (duration("ru", seconds), duration("en", seconds)) == (ru, en)


def test_english_admin_pages_quote_with_curly_quotes_not_guillemets(site):
    site.service("news", letters=[("One", "0s", "x")])
    site.set(language="en")
    admin = Admin(site)
    _, _, page = admin.post("/services/news/letters/1/delete", {})
    page = html.unescape(page)
    assert "“One”" in page and "«" not in page


def test_the_demo_list_is_private(fresh_site):
    service = demo.create(fresh_site.data, "en")
    assert service.enabled and not service.public
