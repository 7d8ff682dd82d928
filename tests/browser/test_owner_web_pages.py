"""The admin pages as the owner reads them, in headless
Chromium against a real ``vykhukhol serve``: "DB" in Russian, the confirmation
link in the Outbox clickable, and the import form that says its caps.
Screenshots land in ``tests/artifacts/``.
"""

from __future__ import annotations

import time
from typing import Any

from support.webkit import wait_for
from vykhukhol.web.admin.uploads import MAX_IMPORT_BYTES, MAX_IMPORT_LINES


def test_the_services_pages_say_db_in_russian(site: Any, server: Any, browser: Any) -> None:
    site.service("news")
    site.set(language="ru")
    b = browser
    b.log_in()
    b.open("/admin/services")
    header = b.text("table tr")
    assert "База" in header and "DB" not in header, header
    assert b.text("label[for=svc-db]") == "База"
    b.screenshot("services-db-ru")
    b.open("/admin/services/news")
    assert "база main" in b.text("h1").lower() and "DB" not in b.text("h1"), b.text("h1")


def test_the_confirmation_link_in_the_outbox_is_clickable_and_confirms(
        site: Any, server: Any, browser: Any) -> None:
    """The local demo: subscribe, open the letter in the Outbox, click its link."""
    site.service("news")
    reader = "reader@example.net"
    b = browser
    b.open("/cgi/subscribe.py?service=news")
    b.fill("#email", reader)
    time.sleep(2.1)  # a person's pace: a form posted faster than 2 s is a bot's
    b.press("form button[type=submit]")
    assert wait_for(lambda: reader in site.subscribers("news"))  # stored after the answer
    assert site.subscribers("news")[reader].state.value == "new"
    b.log_in()
    b.open("/admin/outbox")
    b.press(b.all("#outbox a")[0])
    links = b.all("#letter-text a")
    confirm = [a for a in links if "/cgi/confirm.py?" in (a.get_attribute("href") or "")]
    assert confirm, b.text("#letter-text")
    assert confirm[0].get_attribute("href").startswith(server.url + "/cgi/confirm.py?")
    assert confirm[0].text == confirm[0].get_attribute("href")  # the whole link, nothing cut
    b.screenshot("outbox-confirmation-link-en")
    b.press(confirm[0])
    assert "Confirm your subscription" in b.text()
    b.press("form button[type=submit]")
    assert site.subscribers("news")[reader].state.value == "active"


def test_a_link_to_another_site_in_a_letter_is_not_made_clickable(
        site: Any, server: Any, browser: Any) -> None:
    """A subscriber's name may carry an address: only the installation's own
    links become links."""
    site.service("news", letters=[("Hi", "0s", "Hello {{ name }}, see http://evil.example/x")])
    site.subscriber("news", "a@example.net", "http://evil.example/name", state="active")
    site.cli("cron")
    b = browser
    b.log_in()
    b.open("/admin/outbox")
    b.press(b.all("#outbox a")[0])
    assert "http://evil.example/x" in b.text("#letter-text")
    assert all("evil.example" not in (a.get_attribute("href") or "") for a in b.all("#letter-text a"))


def test_the_import_form_says_its_caps_in_both_languages(site: Any, server: Any, browser: Any) -> None:
    site.service("news")
    b = browser
    b.log_in()
    for lang, said in (("en", f"At most {MAX_IMPORT_BYTES // 1048576} MiB and {MAX_IMPORT_LINES} lines"),
                       ("ru", f"Не больше {MAX_IMPORT_BYTES // 1048576} МиБ и {MAX_IMPORT_LINES} строк")):
        site.set(language=lang)
        b.open("/admin/services/news/subscribers")
        assert said in b.text(), b.text()
        b.screenshot(f"subscribers-import-caps-{lang}")
