"""The mod_cgi chapter's example under a real Apache (docs/deploying/apache.md#apache-step-6),
and what an uploaded checkout shows a stranger (docs/deploying/apache.md#apache-step-3).

Step 6's example block runs as the manual prints it (less the mail provider's
three lines), by bash in ``~/public_html/lists``: its letter file must land
outside the served folder, and the welcome letter it makes must reach a
subscriber with one unsubscribe link, in the site's language. The served
folder, with the top ``.htaccess`` the release ships, lists no folder.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator

import pytest

from support.apachekit import (
    APACHE,
    WGET,
    Site,
    fetch,
    plain_text,
    served,
    subscribe_and_confirm,
)

pytestmark = pytest.mark.skipif(
    not APACHE.exists(), reason="Apache is not installed (/usr/sbin/apache2 missing; apt-get install apache2)")

CYRILLIC = re.compile("[А-Яа-яЁё]")


@pytest.fixture(scope="module")
def example() -> Iterator[Site]:
    """An installation whose service and letter come from step 6's example."""
    with served(data_outside=False, example=True) as site:
        yield site


def test_the_examples_letter_file_is_not_in_the_served_folder(example: Site) -> None:
    """`welcome.txt` lies in the owner's home, and no URL of the site serves it."""
    assert (example.root / "home" / "welcome.txt").exists()
    assert not list(example.install.rglob("welcome.txt"))
    answer = fetch(f"{example.base}/welcome.txt")
    assert answer.status in (403, 404) and "subscribing" not in answer.body, answer


def test_the_examples_welcome_letter_has_one_unsubscribe_link_in_the_sites_language(
        example: Site, smtp_server) -> None:
    address = "reader@example.com"
    subscribe_and_confirm(example, smtp_server, address)
    run = subprocess.run([WGET, "-q", "-t", "1", "-O", "-", example.cron_url],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, (run, example.error_log())
    [welcome] = [m.message for m in smtp_server.handler.received
                 if m.message["Subject"] == "Welcome"]
    text = plain_text(welcome)
    assert "Hello Reader" in text, text
    assert len(re.findall(r"/cgi/unsubscribe\.py\?", text)) == 1, text
    assert not CYRILLIC.search(text), text


def test_an_uploaded_checkout_lists_no_folder(example: Site) -> None:
    """Apache here lists folders without an index (Debian's stock Options); the
    shipped top .htaccess turns that off for the whole upload, and keeps a
    stray text file private."""
    (example.install / "docs").mkdir()
    (example.install / "docs" / "notes.md").write_text("owner's notes\n", encoding="utf-8")
    (example.install / "docs" / "notes.md").chmod(0o644)
    (example.install / "docs").chmod(0o755)
    for path in ("/", "/docs/", "/data/", "/lib/"):
        answer = fetch(example.base + path)
        assert answer.status in (403, 404), (path, answer)
        assert "Index of" not in answer.body and "notes.md" not in answer.body, (path, answer)
    (example.install / "notes.txt").write_text("owner's notes\n", encoding="utf-8")
    (example.install / "notes.txt").chmod(0o644)
    for path in ("/docs/notes.md", "/notes.txt"):
        answer = fetch(example.base + path)
        assert answer.status == 403 and "owner's notes" not in answer.body, (path, answer)
    assert fetch(f"{example.base}/cgi/subscribe.py?service=news").status == 200
    assert "Traceback" not in example.error_log()
