"""The admin's Suppressed page through the admin app (docs/using/admin.md#admin-suppressed): CSRF on every
POST, hostile hand-edited lines shown escaped, pages over a long list, the
export through the project's CSV, and the Subscribers page's refusals and
skip counts. (tests/browser/test_suppressed_page.py drives it in Chromium.)"""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest

from support.servetools import call, environ, log_in
from vykhukhol.members import suppression
from vykhukhol.members.suppression import Why
from vykhukhol.timeutil import now
from vykhukhol.web import admin as admin_mod

FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def admin(site):
    site.set(language="en")
    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, csrf = log_in(app)

    def request(method: str, path: str, fields: dict | None = None, query: str = "",
                token: bool = True) -> tuple[int, dict, str]:
        body = urlencode({**({"csrf": csrf} if token else {}), **(fields or {})}).encode() \
            if method == "POST" else b""
        status, headers, page, _ = call(app, environ(
            method, path, query, body, FORM if method == "POST" else "",
            str(len(body)) if method == "POST" else "missing", script="/admin", HTTP_COOKIE=cookie))
        return status, headers, page

    return request


def listed(site) -> list[str]:
    return [entry.address for entry in suppression.entries(site.data)]


def test_every_post_needs_the_csrf_token_and_changes_nothing_without_it(site, admin):
    suppression.add(site.data, site.settings().secret, "kept@example.org", Why.ADMIN, "cli", now())
    for path, fields in (("/suppressed", {"email": "x@example.org"}),
                         ("/suppressed/remove", {"email": "kept@example.org", "confirm": "yes"}),
                         ("/suppressed/import", {"text": "y@example.org"})):
        status, _, _ = admin("POST", path, fields, token=False)
        assert status == 403, path
    assert listed(site) == ["kept@example.org"]


def test_add_take_off_and_import_through_the_page(site, admin):
    status, headers, _ = admin("POST", "/suppressed", {"email": "New@Example.org"})
    assert status == 303 and "/admin/suppressed?" in headers["Location"]
    status, _, page = admin("POST", "/suppressed", {"email": "not an address"})
    assert status == 400 and "not valid" in page
    status, _, page = admin("POST", "/suppressed/import",
                            {"text": "email\nnew@example.org\nb@example.org\nnope\n"})
    assert status == 200
    assert "Import: 1 address suppressed, 1 was on the list already, 1 line refused." in page
    status, _, page = admin("POST", "/suppressed/remove", {"email": "b@example.org"})
    assert status == 200 and "Take b@example.org off the suppression list?" in page
    assert listed(site) == ["new@example.org", "b@example.org"]  # asked first, nothing changed
    status, _, _ = admin("POST", "/suppressed/remove", {"email": "b@example.org", "confirm": "yes"})
    assert status == 303 and listed(site) == ["new@example.org"]
    status, _, page = admin("POST", "/suppressed/remove", {"email": "b@example.org", "confirm": "yes"})
    assert status == 404 and "b@example.org is not on the suppression list" in page


def test_a_hand_edited_line_is_shown_escaped_and_exported_defused(site, admin):
    (site.data.root / "suppressed.txt").write_text(
        "#address\twhen\twhy\tfrom\n"
        "evil@example.org\t2026-01-02T03:04:05Z\t<script>alert(1)</script>\t=cmd|' /C calc'!A0\n",
        encoding="utf-8")
    status, _, page = admin("GET", "/suppressed")
    assert status == 200
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    status, headers, text = admin("GET", "/suppressed.csv")
    assert status == 200 and headers["Content-Type"].startswith("text/csv")
    assert 'filename="suppressed.csv"' in headers["Content-Disposition"]
    assert text.startswith("\ufeffaddress,when,why,from\r\n")
    assert "evil@example.org,2026-01-02T03:04:05Z,<script>alert(1)</script>,'=cmd|' /C calc'!A0" \
        in text


def test_a_long_list_is_searched_and_paged_newest_first(site, admin):
    secret = site.settings().secret
    suppression.add_many(site.data, secret, [f"user{i:03}@example.org" for i in range(120)],
                         Why.COMPLAINT, "imap", now())
    status, _, page = admin("GET", "/suppressed")
    assert status == 200
    assert re.search(r'id="total">120<', page) and "Page 1 / 3" in page
    shown = re.findall(r"user\d{3}@example.org", page)
    assert shown[0] == "user119@example.org" and len(set(shown)) == 50
    assert "spam complaint" in page  # the reason in words
    _, _, page = admin("GET", "/suppressed", query="page=3")
    assert "Page 3 / 3" in page and "user000@example.org" in page
    _, _, page = admin("GET", "/suppressed", query="q=USER11")
    assert re.search(r'id="total">10<', page)  # user110 … user119
    _, _, page = admin("GET", "/suppressed", query="page=99")
    assert "Page 3 / 3" in page


def test_an_erased_address_shows_as_such_without_its_hash_and_cannot_be_taken_off(site, admin):
    suppression.erase(site.data, site.settings().secret, "erased@example.org", now())
    _, _, page = admin("GET", "/suppressed")
    assert "an erased address" in page
    assert "hmac:" not in page
    _, _, text = admin("GET", "/suppressed.csv")
    assert text == "\ufeffaddress,when,why,from\r\n"


def test_the_subscribers_page_refuses_a_suppressed_address_and_counts_skipped_imports(site, admin):
    site.service("news")
    suppression.add(site.data, site.settings().secret, "gone@example.org", Why.COMPLAINT, "imap", now())
    status, _, page = admin("POST", "/services/news/subscribers",
                            {"email": "Gone@example.org", "confirmed": "yes"})
    assert status == 400
    assert "Gone@example.org is on the suppression list, so it is not added" in page
    status, _, page = admin("POST", "/services/news/import",
                            {"text": "gone@example.org\nnew@example.org\n"})
    assert status == 200
    assert "1 address is on the suppression list and was skipped." in page
    assert list(site.subscribers("news")) == ["new@example.org"]


def test_an_import_over_the_caps_is_refused_whole(site, admin):
    from vykhukhol.web.admin.uploads import MAX_IMPORT_LINES

    text = "a@example.org\n" * (MAX_IMPORT_LINES + 1)
    status, _, page = admin("POST", "/suppressed/import", {"text": text})
    assert status == 413 and "nothing was imported" in page
    assert listed(site) == []
