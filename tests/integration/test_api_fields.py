"""The API carries the site's fields and the reader's language
(docs/using/api.md#api-fields): a subscriber's JSON has ``fields`` and
``language``; adding and changing one takes them, each value checked as a
form checks it (400 naming the field and why, nothing changed) — through a
real ``vykhukhol serve``."""

from __future__ import annotations

import http.client
import json

import pytest

from support.benchkit import free_port
from support.servetools import ServeProcess
from vykhukhol.settings import fields as site_fields
from vykhukhol.settings.fields import Field


@pytest.fixture
def api(site, tmp_path):
    site.service("news")
    site_fields.add(site.data.root, Field("city", "text", labels={"ru": "Город", "en": "City"}))
    site_fields.add(site.data.root, Field("age", "number", labels={"en": "Age"}))
    site_fields.add(site.data.root, Field("plan", "choice", True, {"en": "Plan"}, ("Free", "Pro")))
    port = free_port()
    served = ServeProcess(site, port, tmp_path / "serve")
    served.start()

    def request(method: str, path: str, key: str, body: object = None) -> tuple[int, dict]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {key}", **(
            {"Content-Type": "application/json"} if data else {})}
        conn.request(method, "/api/v1" + path, body=data, headers=headers)
        response = conn.getresponse()
        answer = response.status, json.loads(response.read())
        conn.close()
        return answer

    yield request
    assert served.stop()[0] == 0


def token(site, *args: str) -> str:
    return site.ok("token", "add", *args).splitlines()[-1].strip()


def test_fields_and_language_go_in_and_come_out(site, api):
    key = token(site, "crm", "--scopes", "subscribe,read,manage")
    status, body = api("POST", "/subscribers", key, {
        "service": "news", "email": "anna@example.org", "name": "Anna",
        "fields": {"city": "Тверь", "age": "1 000", "plan": "pro"}, "language": "ru"})
    assert status == 202, body
    status, body = api("GET", "/subscribers/news/anna@example.org", key)
    assert status == 200 and body["fields"] == {"city": "Тверь", "age": "1000", "plan": "Pro"}
    assert body["language"] == "ru"
    letter = site.outbox()[0]
    assert letter["To"].addresses[0].addr_spec == "anna@example.org"
    status, body = api("PATCH", "/subscribers/news/anna@example.org", key,
                       {"fields": {"city": None, "age": "-2,50"}, "language": "en"})
    assert status == 200, body
    assert body["fields"] == {"age": "-2.5", "plan": "Pro"} and body["language"] == "en"
    assert body["name"] == "Anna", "a change that does not name the name keeps it"
    assert site.subscribers("news")["anna@example.org"].fields == {"age": "-2.5", "plan": "Pro"}


@pytest.mark.parametrize(("method", "path", "body", "said"), [
    ("POST", "/subscribers", {"service": "news", "email": "b@example.org",
                              "fields": {"age": "old", "plan": "Free"}},
     "fields.age: a number such as 42 or 12.5"),
    ("POST", "/subscribers", {"service": "news", "email": "b@example.org"},
     "fields.plan is required"),
    ("POST", "/subscribers", {"service": "news", "email": "b@example.org",
                              "fields": {"plan": "Gold"}}, "fields.plan: one of Free, Pro"),
    ("POST", "/subscribers", {"service": "news", "email": "b@example.org",
                              "fields": {"plan": "Free", "town": "x"}}, "fields.town: no such field"),
    ("PATCH", "/subscribers/news/anna@example.org", {"fields": {"plan": None}},
     "fields.plan is required"),
    ("PATCH", "/subscribers/news/anna@example.org", {"language": "de"}, "language: one of ru, en"),
])
def test_a_value_that_does_not_fit_is_400_naming_the_field(site, api, method, path, body, said):
    key = token(site, "crm", "--scopes", "subscribe,read,manage")
    assert api("POST", "/subscribers", key, {"service": "news", "email": "anna@example.org",
                                             "fields": {"plan": "Free"}})[0] == 202
    before = (site.data.root / "services").rglob("subscribers.txt")
    kept = {p: p.read_bytes() for p in before}
    status, answer = api(method, path, key, body)
    assert status == 400 and said in answer["error"]["message"], answer
    assert {p: p.read_bytes() for p in kept} == kept, "a refused call changes nothing"
    assert "b@example.org" not in site.subscribers("news")


def test_a_subscribe_token_does_not_change_a_known_readers_values(site, api):
    writer = token(site, "shop", "--scopes", "subscribe")
    reader = token(site, "crm", "--scopes", "read")
    first = {"service": "news", "email": "anna@example.org", "fields": {"plan": "Pro"}}
    assert api("POST", "/subscribers", writer, first)[0] == 202
    again = {**first, "fields": {"plan": "Free", "city": "Omsk"}, "language": "en"}
    assert api("POST", "/subscribers", writer, again)[0] == 202
    status, body = api("GET", "/subscribers/news/anna@example.org", reader)
    assert body["fields"] == {"plan": "Pro"} and body["language"] is None


def test_a_newsletter_through_the_api_may_go_to_part_of_a_list(site, api):
    key = token(site, "crm", "--scopes", "subscribe,read,manage,send")
    for email, city in (("anna@example.org", "Тверь"), ("boris@example.org", "Ржев")):
        assert api("POST", "/subscribers", key, {
            "service": "news", "email": email, "confirmed": True,
            "fields": {"city": city, "plan": "Free"}})[0] in (201, 202)
    status, body = api("POST", "/newsletters", key, {
        "services": ["news"], "subject": "Hi", "text": "Hello", "where": 'cty = "тверь"'})
    assert status == 422 and "where: column 1" in body["error"]["message"], body
    status, body = api("POST", "/newsletters", key, {
        "services": ["news"], "subject": "Hi", "text": "Hello", "where": 'city = "москва"'})
    assert status == 422 and "no subscriber matches" in body["error"]["message"], body
    status, body = api("POST", "/newsletters", key, {
        "services": ["news"], "subject": "Hi", "text": "Hello", "where": 'city = "тверь"'})
    assert status == 201, body
    assert body["recipients"] == 1 and body["where"] == 'city = "тверь"'
