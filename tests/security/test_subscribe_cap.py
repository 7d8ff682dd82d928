"""The hourly subscribe cap told a stranger who is on a list.

A post counted against ``subscribe_hourly_limit`` only if it sent a letter,
so with a cap of 3, posting own1, own2, the target and own3 showed by whether
own3 got its letter whether the target was already subscribed (or
suppressed, or erased). Every accepted post now counts alike. (The other
half, the letter sent after the answer slowing the next request, is
test_after_answer.py.)

Run through a real ``vykhukhol serve``; letters land in the outbox.
"""

from __future__ import annotations

import time

import pytest

from support import webkit
from support.webkit import Browser, outbox_to, wait_for

served = webkit.served  # the fixture: a real `vykhukhol serve`


@pytest.fixture
def news(site):
    site.set(trusted_proxies="127.0.0.1", subscribe_hourly_limit=3)
    site.service("news", letters=[("Lesson 1", "1d", "Hello {{ name }}.\n")])
    site.subscriber("news", "member@example.net")
    site.ok("suppress", "add", "blocked@example.net")
    return "news"


def post(browser: Browser, email: str) -> str:
    answer = browser.post("/cgi/subscribe.py", {"service": "news", "email": email, "name": ""})
    assert answer.status == 200, answer
    return answer.body.replace(email, "ADDRESS")


@pytest.mark.parametrize("target", ["stranger@example.net", "member@example.net",
                                    "blocked@example.net"])
def test_the_fourth_post_says_nothing_of_the_third(site, news, served, target):
    client = Browser(served.port, {"X-Forwarded-For": "203.0.113.9"})
    pages = {post(client, address) for address in
             ("own1@example.org", "own2@example.org", target, "own3@example.org")}
    assert len(pages) == 1, pages
    wait_for(lambda: len(outbox_to(site, "own2@example.org")) == 1)
    time.sleep(0.3)  # a letter to own3 would have come by now
    assert not outbox_to(site, "own3@example.org")
    assert "own3@example.org" not in site.subscribers("news")
