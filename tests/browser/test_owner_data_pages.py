"""The owner's data in Chromium: the Status page of a local ``serve`` and the
import result with refused lines, with screenshots in tests/artifacts/.

The ``server`` fixture serves its site on http://127.0.0.1:PORT, which is what
makes a data directory local (docs/reference/decisions.md#decisions)."""

from __future__ import annotations


def test_a_local_status_page_shows_the_local_note_and_no_hosting_warnings(site, server, browser):
    b = browser
    b.log_in()
    b.open("/admin/")
    warnings = " ".join(element.text for element in b.all(".warn"))
    assert f"This is a local trial: site_url is {server.url}" in warnings
    assert "Mail is not configured" in warnings
    page = b.text()
    for hosting in ("not https", "Compiled bytecode", "inside the web folder", "Nothing reads the bounces",
                    "No renamed cron script"):
        assert hosting not in page, hosting
    b.screenshot("status-local-en")


def test_an_import_with_a_refused_line_is_shown_in_red(site, server, browser):
    site.service("news")
    b = browser
    b.log_in()
    b.open("/admin/services/news/subscribers")
    b.fill("#import-text", 'ok@example.org\n"Ann\nSmith"@\nnot an address\n')
    b.press("#import")
    box = b.find("#import-result")
    assert box.get_attribute("class") == "error"
    assert box.value_of_css_property("background-color") == "rgba(253, 236, 234, 1)"  # .error's red
    assert "1 address added" in box.text and "2 lines refused" in box.text
    b.screenshot("import-refused-en")
