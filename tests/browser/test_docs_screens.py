"""The screenshots of the manual: the admin's pages and the subscriber's pages,
in Russian and in English, taken in headless Chromium against a real
``vykhukhol serve``.

Run as a test, the pictures go to tests/artifacts/ like every browser test's.
With ``VYKHUKHOL_SCREENS=1`` they replace the manual's, in docs/_static/screens/:

    VYKHUKHOL_SCREENS=1 .venv/bin/python -m pytest tests/browser/test_docs_screens.py
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

ANNA = "anna@example.org"
SCREENS = Path(__file__).resolve().parents[2] / "docs" / "_static" / "screens"
LESSON = "Hello, {{ name }}.\n\nYour lists: {{ manage_url }}\nUnsubscribe: {{ unsubscribe_url }}\n"

#: The admin's pages shown in the manual: (picture, path, what the page must say in en / ru).
ADMIN_PAGES = (
    ("admin-status", "/admin/", None),
    ("admin-services", "/admin/services", None),
    ("admin-service", "/admin/services/news", None),
    ("admin-settings", "/admin/settings", "site_url"),
)


def _keep(browser: Any, name: str) -> None:
    """A full-page picture in tests/artifacts/, and in the manual when asked for."""
    taken = browser.screenshot(f"screens-{name}")
    if os.environ.get("VYKHUKHOL_SCREENS") == "1":
        SCREENS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(taken, SCREENS / f"{name}.png")


def _link(site: Any, to: str, script: str) -> str:
    """The last link to ``cgi/<script>.py`` in a letter to ``to`` in the outbox."""
    letters = [m for m in site.outbox() if to in str(m["To"])]
    assert letters, f"no letter to {to} in the outbox"
    text = letters[-1].get_body(("plain",)).get_content()
    found = re.findall(rf"https?://\S+/cgi/{script}\.py\?\S+", text)
    assert found, f"no {script} link in the letter to {to}:\n{text}"
    return found[-1]


def test_the_manuals_screenshots_of_every_page_in_both_languages(site: Any, server: Any,
                                                                 browser: Any) -> None:
    site.service("news", title="Our news", letters=[("Lesson 1", "0s", LESSON)])
    site.service("offers", title="Offers")
    site.subscriber("news", ANNA, name="Anna", ago=60)
    site.run_at()
    manage, unsubscribe = _link(site, ANNA, "manage"), _link(site, ANNA, "unsubscribe")
    b = browser
    for lang, check_title in (("ru", "Проверьте почту"), ("en", "Check your mailbox")):
        site.set(language=lang)
        reader = f"reader-{lang}@example.net"
        b.driver.execute_cdp_cmd("Network.clearBrowserCookies", {})

        b.open("/cgi/subscribe.py?service=news")
        b.fill("#email", reader)
        _keep(b, f"subscribe-{lang}")
        time.sleep(2.1)  # a person's pace: a form posted faster than 2 s is a bot's
        b.press("form button[type=submit]")
        assert check_title in b.text(), b.text()
        _keep(b, f"subscribe-check-{lang}")

        b.open(_link(site, reader, "confirm")[len(server.url):])
        assert b.all("form button[type=submit]"), b.text()
        _keep(b, f"confirm-{lang}")

        b.open(manage[len(server.url):])
        assert "Our news" in b.text(), b.text()
        _keep(b, f"own-page-{lang}")

        b.open(unsubscribe[len(server.url):])
        assert b.all("form button[type=submit]"), b.text()
        _keep(b, f"unsubscribe-{lang}")

        b.log_in()
        for name, path, said in ADMIN_PAGES:
            b.open(path)
            assert b.path == path.rstrip("/") or b.path == path, b.path
            assert "Traceback" not in b.text()
            if said:
                assert said in b.text(), b.text()
            _keep(b, f"{name}-{lang}")
