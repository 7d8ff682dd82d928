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
