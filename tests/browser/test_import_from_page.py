"""The Subscribers page's "Import from another tool" in a real browser (issue
29 item 1): choose the tool, pick another tool's export as it wrote it, see
the counts by state (a dry run first, which changes nothing), then import;
a file from a tool we do not know says which columns were expected."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

from vykhukhol.members import suppression

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "imports"


def upload(b: Any, tool: str, path: Path, dry_run: bool) -> None:
    b.open("/admin/services/news/subscribers")
    b.fill("#import-from-tool", tool)
    b.find("#import-from-file").send_keys(str(path))
    box = b.find("input[name=dry_run]")
    if box.is_selected() != dry_run:
        box.click()
    b.press("#import-from")


def test_a_mailchimp_zip_is_tried_then_imported_from_the_subscribers_page(site, server, browser,
                                                                         tmp_path):
    """A dry run lists the counts and the refused line and changes nothing; the
    import then adds the subscribed and suppresses who left or bounced."""
    site.service("news")
    export = tmp_path / "export.zip"
    with zipfile.ZipFile(export, "w") as archive:
        for part in sorted((SAMPLES / "mailchimp").glob("*.csv")):
            archive.write(part, part.name)
    b = browser
    b.log_in()
    upload(b, "mailchimp", export, dry_run=True)
    said = b.text("#import-from-result")
    assert "confirmed: 3, unconfirmed: 0, to the suppression list: 3; refused: 1." in said
    assert "Dry run, nothing changed" in said and "not-an-address" in said
    assert site.subscribers("news") == {}
    b.screenshot("import-from-dry-run-en")
    upload(b, "mailchimp", export, dry_run=False)
    assert "Done: 3 subscribers added" in b.text("#import-from-result")
    assert len(site.subscribers("news")) == 3
    assert suppression.is_suppressed(site.data, b"", "gone@example.com")


def test_a_file_the_tool_did_not_write_names_the_columns_expected(site, server, browser):
    site.service("news")
    b = browser
    b.log_in()
    upload(b, "listmonk", SAMPLES / "sendinblue-contacts.csv", dry_run=False)
    error = b.text(".error")
    assert "expected the columns uuid,email,name" in error and "EMAIL_ADDR" in error
    assert site.subscribers("news") == {}


def test_a_non_latin_address_is_refused_in_the_pages_language(site, server, browser, tmp_path):
    """On a Russian site the refused line's reason is Russian from end to end."""
    site.service("news")
    site.set(language="ru")
    people = tmp_path / "people.csv"
    people.write_text("email,status\nиван@example.org,subscribed\n", encoding="utf-8")
    b = browser
    b.log_in()
    upload(b, "csv", people, dry_run=True)
    said = b.text("#import-from-result")
    assert "латиницей" in said and "Internationalized" not in said, said


def test_a_subscriber_who_left_the_other_tool_is_marked_on_the_subscribers_page(
        site, server, browser, tmp_path):
    """Tanya is subscribed here and unsubscribed in the old tool's file: after the
    import her row says no letter goes to her; Pavel's row says nothing of it."""
    site.service("news")
    site.subscriber("news", "tanya@example.com", state="new")
    people = tmp_path / "people.csv"
    people.write_text("email,status\ntanya@example.com,unsubscribed\npavel@example.com,subscribed\n")
    b = browser
    b.log_in()
    upload(b, "csv", people, dry_run=False)
    assert "left in the other tool (tanya@example.com)" in b.text("#import-from-result")
    b.open("/admin/services/news/subscribers")
    rows = {row.find_element("css selector", "td").text: row.text
            for row in b.all("#subscribers tr")[1:]}
    assert "on the suppression list" in rows["tanya@example.com"]
    assert "on the suppression list" not in rows["pavel@example.com"]
