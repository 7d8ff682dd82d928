"""Our form script in a real browser (docs/using/subscriber-pages.md#subscriber-challenge):
with subscribe_challenge on, a person who types an address and presses the
button is subscribed, on our own page and through the form pasted on
another site; the script solves the puzzle itself, from our files only."""

from __future__ import annotations

from support.webkit import wait_for
from vykhukhol import services as svc
from vykhukhol.web.admin.services import form_snippet


def test_a_person_subscribes_on_our_page_with_the_puzzle_on(browser, site):
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])
    site.set(subscribe_challenge="on")
    b = browser
    b.open("/cgi/subscribe.py?service=news")
    b.fill("#email", "puzzled@example.net")
    b.press("form button[type=submit]")
    assert "Check your mailbox" in b.text()
    assert wait_for(lambda: "puzzled@example.net" in site.subscribers("news"))  # stored after the answer
    assert "taken for a bot's" not in site.pages_log()


def test_a_person_subscribes_through_the_form_pasted_on_another_site(browser, site, tmp_path):
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])
    site.set(subscribe_challenge="on")
    owner_page = tmp_path / "owner.html"
    snippet = form_snippet(site.settings(), svc.find_service(site.data, "news"))
    owner_page.write_text(f"<!doctype html><html><body><h1>My blog</h1>{snippet}</body></html>",
                          encoding="utf-8")
    b = browser
    b.open(owner_page.as_uri())
    b.find('input[name="email"]').send_keys("pasted@example.net")
    b.press("form button[type=submit]")
    assert "Check your mailbox" in b.text()
    assert wait_for(lambda: "pasted@example.net" in site.subscribers("news"))  # stored after the answer
    assert "taken for a bot's" not in site.pages_log()
