"""The admin's Webhooks page through the admin app (docs/using/webhooks.md#webhooks-admin):
CSRF on every POST, the secret shown once and never again, a test event to
a real receiver on loopback, switching off and on, removing after a question,
and a URL that must not be used refused with its reason."""

from __future__ import annotations

import re

import pytest

from support.servetools import admin_client
from support.webhookkit import Receiver, verify
from vykhukhol.webhooks import endpoints


@pytest.fixture
def admin(fresh_site):
    fresh_site.set(language="en")
    return admin_client(fresh_site)


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def test_add_test_switch_and_remove(fresh_site, admin, receiver) -> None:
    status, _, page = admin("POST", "/webhooks", {"name": "shop", "url": receiver.url,
                                                  "event-subscriber.confirmed": "on"}, token=False)
    assert status == 403 and not endpoints.load(fresh_site.data)
    status, _, page = admin("POST", "/webhooks", {"name": "shop", "url": receiver.url,
                                                  "event-subscriber.confirmed": "on"})
    assert status == 200, page
    secret = re.search(r"<code>(whsec_[A-Za-z0-9+/=]+)</code>", page).group(1)
    (shop,) = endpoints.load(fresh_site.data)
    assert shop.secret == secret and shop.events == {"subscriber.confirmed"}
    status, _, page = admin("GET", "/webhooks")
    assert status == 200 and "shop" in page and secret not in page, "the secret is shown once"
    status, headers, _ = admin("POST", "/webhooks/test", {"name": "shop", "once": "t1"})
    assert status == 303 and "delivered" in headers["Location"]
    (got,) = receiver.wait(1)
    assert verify(secret, got.headers, got.body) and got.json["type"] == "webhook.test"
    status, _, page = admin("GET", "/webhooks")
    assert "webhook.test" in page and "200" in page, "the delivery is listed"
    admin("POST", "/webhooks/switch", {"name": "shop", "on": "no"})
    assert not endpoints.load(fresh_site.data)[0].enabled
    admin("POST", "/webhooks/switch", {"name": "shop", "on": "yes"})
    assert endpoints.load(fresh_site.data)[0].enabled
    status, _, page = admin("POST", "/webhooks/remove", {"name": "shop"})
    assert status == 200 and "Remove webhook shop?" in page and endpoints.load(fresh_site.data)
    status, _, _ = admin("POST", "/webhooks/remove", {"name": "shop", "confirm": "yes"})
    assert status == 303 and not endpoints.load(fresh_site.data)


def test_a_url_that_must_not_be_used_is_refused_with_its_reason(fresh_site, admin) -> None:
    status, _, page = admin("POST", "/webhooks", {"name": "x", "url": "http://hooks.example.org/in"})
    assert status == 400 and "https://" in page and not endpoints.load(fresh_site.data)
    status, _, page = admin("POST", "/webhooks", {"name": "x", "url": "https://h.example.org/<script>"})
    assert "<script>" not in page


def test_the_page_speaks_russian(fresh_site, admin) -> None:
    fresh_site.set(language="ru")
    status, _, page = admin("GET", "/webhooks")
    assert status == 200 and "Добавить вебхук" in page
