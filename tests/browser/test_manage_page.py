"""The subscriber's own page in a real Chromium, in both languages (the
link's): the link from a real letter, a pause chosen in the date field, a join, and the admin's
subscriber list with the own-page link (screenshots in tests/artifacts/)."""

from __future__ import annotations

import re
from datetime import timedelta

from vykhukhol.timeutil import now

ANNA = "anna@example.org"


def _link_from_letter(site) -> str:
    site.run_at()
    letter = [m for m in site.outbox() if ANNA in str(m["To"])][-1]
    return re.findall(r"https?://\S+/cgi/manage\.py\?\S+", letter.get_body(("plain",)).get_content())[0]


def test_the_own_page_in_chromium(site, server, browser):
    site.service("news", letters=[("Lesson 1", "0s", "Hi.\n\nYour lists: {{ manage_url }}\n")])
    site.service("offers")
    site.service("staff", public="no")
    site.subscriber("news", ANNA, name="Anna", ago=60)
    link = _link_from_letter(site)
    b = browser
    # The page speaks the reader's language: the link's (hl), else the browser's
    # (headless Chromium's English), else the site's.
    for lang, heading in (("ru", "Ваши подписки"), ("en", "Your subscriptions")):
        site.set(language=lang)
        b.open(f"{link[len(server.url):]}&hl={lang}")
        assert b.text("h1") == heading, b.text("h1")
        assert "Staff" not in b.text()  # private, not subscribed
        b.screenshot(f"manage-page-{lang}")

    until = (now() + timedelta(days=7)).strftime("%Y-%m-%d")
    b.set_value("#until", until)
    b.press("input[name=action][value=pause] ~ button")
    assert f"No letters until {until}" in b.text(), b.text()
    assert site.subscribers("news")[ANNA].paused_until is not None

    join = [f for f in b.all("form") if f.find_element("css selector",
                                                       "input[name=action]").get_attribute("value") == "join"]
    assert len(join) == 1
    b.press(join[0].find_element("css selector", "button"))
    assert "confirmation link is on its way" in b.text(), b.text()
    b.screenshot("manage-page-after-join-en")

    b.log_in()
    b.open("/admin/services/news/subscribers")
    links = b.all("a.manage-link")
    assert len(links) == 1 and "/cgi/manage.py?" in links[0].get_attribute("href")
    assert "paused until" in b.text()
    b.screenshot("admin-subscribers-manage-link-en")
