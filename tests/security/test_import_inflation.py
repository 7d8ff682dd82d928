"""The admin's import caps what an upload comes to, and a zip comes to what
it inflates to: a Mailchimp export of a few hundred KiB that unpacks past
the page's size cap is refused (413, "Split the list"), as the same list
unzipped is, and nothing is imported (docs/using/import.md#import-from).
Through a real ``vykhukhol serve``, as the owner's browser posts the form."""

from __future__ import annotations

import io
import zipfile

from support import webkit
from support.webkit import Browser
from vykhukhol.web.admin.uploads import MAX_IMPORT_BYTES, MAX_IMPORT_LINES

served = webkit.served  # the fixture: a real `vykhukhol serve`

HEADER = (b'"Email Address","First Name",MEMBER_RATING,OPTIN_TIME,CONFIRM_TIME,LEID,EUID,'
          b"NOTES\n")


def swelling_zip() -> bytes:
    """A Mailchimp export whose CSV, a few thousand people with long notes, is
    past the upload cap once inflated and a small fraction of it zipped."""
    row = b'p%d@example.org,P,2,"2024-03-01 09:05:00","2024-03-01 09:06:00",%d,e%d,' \
          + b"n" * 1000 + b"\n"
    people = MAX_IMPORT_BYTES // len(row) + 100
    assert people < MAX_IMPORT_LINES  # the line cap alone would let it in
    csv = HEADER + b"".join(row % (n, n, n) for n in range(people))
    assert len(csv) > MAX_IMPORT_BYTES
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("subscribed_members_export_1.csv", csv)
    return buffer.getvalue()


def post_import_from(browser: Browser, service: str, content: bytes) -> webkit.Answer:
    return browser.import_from(service, [("tool", "mailchimp")], "export.zip", "application/zip",
                               content)


def test_a_zip_that_inflates_past_the_upload_cap_is_refused_and_imports_nothing(site, served):
    site.service("news")
    browser = Browser(served.port)
    assert browser.log_in().status == 303
    content = swelling_zip()
    assert len(content) < MAX_IMPORT_BYTES // 10
    answer = post_import_from(browser, "news", content)
    assert answer.status == 413, answer
    assert "nothing was imported" in answer.body and "Split the list" in answer.body, answer
    assert site.subscribers("news") == {}
