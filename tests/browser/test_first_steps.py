"""A site owner's first steps in a real Chromium (docs/using/admin.md#admin-first-steps):
the Status page's list of what a new site lacks, the services page's order, the
first letter's delay, where a test letter went and what its link does, the way
back to the site from a result page, the login page's word on the password,
and a re-join from the own page. Screenshots land in ``tests/artifacts/``.
"""

from __future__ import annotations

import re

from selenium.webdriver.common.by import By

from support.adminkit import outbox_letters, text_of
from vykhukhol import services as svc
from vykhukhol import tokens

ANNA = "anna@example.org"


def test_a_new_site_shows_its_first_steps_as_links_each_gone_once_done(site, server, browser):
    """On a site as init leaves it (debug, no service), the Status page lists three
    steps, each a link; creating a service (no DB made first: the first one comes
    with it), a first subscriber and the working mode each take its step away."""
    site.ok("mode", "debug")
    b = browser
    b.log_in()
    steps = [a.get_attribute("id") for a in b.all("#first-steps li a")]
    assert steps == ["step-service", "step-form", "step-working"], steps
    b.screenshot("first-steps-en")

    b.press("#step-service")
    assert b.path == "/admin/services"
    boxes = [h.text for h in b.all(".grid form h2")]
    assert boxes == ["New service", "New DB"], boxes  # the service first, wherever both appear
    b.fill("#svc-name", "news")
    b.fill("#svc-title", "News")
    b.press("#create-service")
    assert "Service news created" in b.flash()
    assert svc.find_service(site.data, "news").db == "main"

    b.open("/admin/services/news/letters/new")
    assert b.find("#delay").get_attribute("value") == "0s"  # letter 1 goes at the confirmation

    b.open("/admin/")
    assert [a.get_attribute("id") for a in b.all("#first-steps li a")] == ["step-form", "step-working"]
    b.press("#step-form")
    assert b.path == "/admin/services/news" and "cgi/subscribe.py" in b.find("#snippet").get_attribute("value")

    site.subscriber("news", ANNA)
    b.open("/admin/")
    assert [a.get_attribute("id") for a in b.all("#first-steps li a")] == ["step-working"]
    b.press("#mode-switch")
    assert b.all("#first-steps") == []


def test_a_test_letter_says_it_is_in_the_outbox_and_its_unsubscribe_link_changes_nothing(
        site, server, browser):
    """With the outbox transport the message names the Outbox page, not a sending to
    the typed address; the letter's unsubscribe link opens a page that says it is a
    test's, with no button, and every subscriber stays."""
    site.service("course")
    site.subscriber("course", "ivan@example.org", name="Ivan")
    b = browser
    b.log_in()
    b.open("/admin/services/course/letters/new")
    b.fill("#subject", "Lesson")
    b.fill("#body", "Hello {{ name }}. Leave: {{ unsubscribe_url }}")
    b.fill("#test_to", "tester@example.com")
    b.press("#test-letter")
    said = b.flash()
    assert "Outbox page" in said and "not sent" in said, said
    assert "went to" not in said

    [letter] = outbox_letters(site, "tester@example.com")
    link = re.findall(r"https?://\S+/cgi/unsubscribe\.py\?\S+", text_of(letter))[0]
    b.open(link[len(server.url):])
    assert "test letter" in b.text("h1"), b.text()
    assert "changes nothing" in b.text()
    assert b.all("button") == []
    assert "ivan@example.org" in site.subscribers("course")
    b.screenshot("test-letter-link-en")


def test_a_result_page_leads_back_to_the_site(site, server, browser):
    """After subscribing, the page that says "check your mail" links to site_url."""
    site.service("news")
    b = browser
    b.open("/cgi/subscribe.py?service=news")
    b.fill("#email", ANNA)
    b.press("button[type=submit]")
    home = b.find("a#home")
    assert home.get_attribute("href").rstrip("/") == server.url.rstrip("/")
    assert home.text == "Back to the site"


def test_the_login_page_says_where_the_password_comes_from_and_how_to_reset_it(
        site, server, browser):
    """The login page names `vykhukhol password` on the host, in both languages."""
    b = browser
    b.open("/admin/login")
    assert "vykhukhol password" in b.text("#password-help")
    assert "Forgotten" in b.text("#password-help")
    site.set(language="ru")
    b.open("/admin/login")
    assert "vykhukhol password" in b.text("#password-help") and "Забыли" in b.text("#password-help")


def test_leaving_and_joining_again_from_the_own_page_keeps_the_name(site, server, browser):
    """Anna leaves her only list on her own page, then presses Join: the new line
    has her name, not an empty one."""
    site.service("news")
    site.subscriber("news", ANNA, name="Anna")
    settings = site.settings()
    link = tokens.manage_link(settings["site_url"], settings.secret, ANNA)
    b = browser
    b.open(link[len(server.url):])
    b.press("input[name=action][value=leave] ~ button")
    assert ANNA not in site.subscribers("news")
    [join] = [f for f in b.all("form")
              if f.find_element(By.CSS_SELECTOR, "input[name=action]").get_attribute("value") == "join"]
    b.press(join.find_element(By.CSS_SELECTOR, "button"))
    assert "confirmation link is on its way" in b.text(), b.text()
    assert site.subscribers("news")[ANNA].name == "Anna"
