"""The admin's Suppressed page in Chromium (docs/deliverability/suppression.md#suppression-list): reached
from Bounces, an address suppressed, an import with a refused line, a search,
the pages of a long list, an address taken off after the confirmation page,
and the page in Russian; screenshots in tests/artifacts/."""

from __future__ import annotations

from vykhukhol.members import suppression
from vykhukhol.members.suppression import Why
from vykhukhol.timeutil import now


def test_the_suppressed_page_in_both_languages(site, server, browser):
    suppression.add_many(site.data, site.settings().secret,
                         [f"old{i:03}@example.org" for i in range(60)], Why.COMPLAINT, "imap", now())
    b = browser
    b.log_in()
    b.open("/admin/bounces")
    b.press("#suppressed-link")
    assert b.path == "/admin/suppressed"
    assert b.text("#total") == "60"

    b.fill("#add-email", "Someone@Example.org")
    b.press("#add-suppressed")
    assert "Someone@example.org is suppressed" in b.flash()
    assert b.text("#total") == "61"
    assert "someone@example.org" in b.text("#suppressed")  # newest first: on page 1

    b.fill("#import-text", "a@example.org\nsomeone@example.org\nnot an address\n")
    b.press("#import")
    box = b.find("#import-result")
    assert box.get_attribute("class") == "error"  # a refused line: red
    assert "1 address suppressed" in box.text and "1 was on the list already" in box.text
    assert "1 line refused" in box.text
    b.screenshot("suppressed-import-en")

    b.open("/admin/suppressed")
    b.press("#older")
    assert "Page 2 / 2" in b.text()
    b.fill("input[name=q]", "old00")
    b.press("form.box button.plain")
    assert b.text("#total") == "10"

    b.open("/admin/suppressed?q=a%40example.org")
    b.press("#suppressed button.danger")
    assert "Take a@example.org off the suppression list?" in b.text("h1")
    b.press("#confirm-delete")
    assert "a@example.org taken off the suppression list." in b.flash()
    assert "a@example.org" not in suppression.Checker(site.data, site.settings().secret).keys
    b.screenshot("suppressed-en")

    site.set(language="ru")
    b.open("/admin/suppressed")
    assert b.text("h1") == "Стоп-лист"
    assert "жалоба на спам" in b.text("#suppressed")
    assert "Внести адрес в стоп-лист" in b.text()
    b.screenshot("suppressed-ru")
