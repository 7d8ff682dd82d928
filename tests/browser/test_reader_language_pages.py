"""A reader's own language in a real Chromium (its Accept-Language is English)
on a Russian site (docs/using/languages.md#reader-language): the form that
asks is drawn in the browser's language with it chosen; a reader who picks
Russian there gets the answer and the letter in Russian; the own page's
choice turns every page after it to the language chosen (screenshots in
tests/artifacts/)."""

from __future__ import annotations

import re
import time

from support.webkit import wait_for
from vykhukhol import services as svc

ANNA = "anna@example.org"


def test_the_form_asks_and_the_own_page_changes_the_language(site, server, browser):
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")], form_language="yes")
    site.set(language="ru")
    b = browser
    b.open("/cgi/subscribe.py?service=news")
    assert b.text("h1") == "Subscribe: News", b.text("h1")  # the browser's language
    assert b.find("#language").get_attribute("value") == "en"
    b.screenshot("subscribe-language-choice-en")
    b.fill("#email", ANNA)
    b.fill("#language", "ru")
    time.sleep(2.1)  # a person's pace: a form posted faster than 2 s is a bot's
    b.press("form button[type=submit]")
    assert "Проверьте почту" in b.text(), b.text()
    # The line and the letter are written after the answer: waited for, not read at once.
    [request] = wait_for(lambda: [m for m in site.outbox() if ANNA in str(m["To"])])
    assert site.subscribers("news")[ANNA].language == "ru"
    assert request["Subject"] == "Подтвердите подписку: News"

    svc.edit_service(site.data, "news", {"form_language": "no"})
    link = re.findall(r"https?://\S+/cgi/confirm\.py\?\S+",
                      request.get_body(("plain",)).get_content())[0]
    b.open(link[len(server.url):])  # hl=ru over the browser's English
    assert b.text("h1") == "Подтверждение подписки", b.text("h1")
    b.press("form button[type=submit]")
    assert site.subscribers("news")[ANNA].state.value == "active"

    from vykhukhol import tokens

    own = tokens.manage_link(server.url, site.settings().secret, ANNA)
    b.open(own[len(server.url):])  # no hl: the language the line keeps
    assert b.text("h1") == "Ваши подписки", b.text("h1")
    b.fill("#language", "en")
    b.press("input[name=action][value=language] ~ button")
    assert b.text("h1") == "Your subscriptions", b.text("h1")
    assert "in English from now on" in b.text()
    assert site.subscribers("news")[ANNA].language == "en"
    b.screenshot("own-page-language-en")
