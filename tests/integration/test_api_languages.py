"""A newsletter's letter in another language made through the API
(docs/using/api.md#api-endpoints), over HTTP to a ``vykhukhol serve``
subprocess: the second body is kept beside the first and goes to the readers
of its language; one that the CLI would refuse is a 422 naming its field,
and no job is made."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from support.benchkit import free_port
from support.servetools import ServeProcess
from support.webtools import plain_text
from vykhukhol import services as svc
from vykhukhol.services import subscribers as subs
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now


@pytest.fixture
def served(site: Any, tmp_path: Path) -> Iterator[ServeProcess]:
    site.service("news")
    back = now() - timedelta(hours=1)
    for email, language in (("anna@example.org", "en"), ("boris@example.org", None)):
        sub = subs.Subscriber(email, "", SubscriberState.ACTIVE, back, back, ip="127.0.0.1")
        subs.add(svc.find_service(site.data, "news").subscribers_path, sub.with_language(language))
    process = ServeProcess(site, free_port(), tmp_path / "serve")
    process.start()
    yield process
    assert process.stop()[0] == 0


def post(served: ServeProcess, key: str, body: dict) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    conn.request("POST", "/api/v1/newsletters", json.dumps(body),
                 {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    response = conn.getresponse()
    answer = json.loads(response.read())
    conn.close()
    return response.status, answer


def test_a_newsletter_made_through_the_api_carries_its_letter_in_english(site, served) -> None:
    key = site.ok("token", "add", "cms", "--scopes", "send").splitlines()[-1].strip()
    base = {"services": ["news"], "subject": "Новости", "text": "Привет."}
    refusals = [
        ({"subject_en": "News"}, "text_en"),
        ({"text_en": "Hello."}, "subject_en"),
        ({"subject_en": "News", "text_en": "Hello {{ name"}, "text_en"),
        ({"subject_en": "News", "text_en": "   "}, "text_en"),
        ({"subject_en": "News", "text_en": "Hello.", "html_en": "<p>{% if %}</p>"}, "html_en"),
        ({"subject_en": "News", "text_en": "Hello.", "subject_xx": "?"}, "unknown field 'subject_xx'"),
    ]
    status, answer = post(served, key, {**base, "start": "2099-01-01T09:00:00Z"})
    assert status == 201 and answer["languages"] == [], answer
    assert post(served, key, {"services": ["news"], "subject": "x"})[0] == 422  # no text
    site.ok("newsletter", "cancel", answer["id"])
    for extra, field in refusals:
        status, answer = post(served, key, {**base, **extra})
        assert status == 422 and answer["error"]["message"].startswith(field), (extra, answer)
    assert not list(site.data.newsletters.glob("*.job")) and not list(site.data.letters.glob("*"))

    status, answer = post(served, key, {**base, "subject_en": "News", "text_en": "Hello.",
                                        "html_en": "<p>Hello.</p>"})
    assert status == 201 and answer["languages"] == ["en"], answer
    job = answer["id"]
    assert site.data.job(job, "en.letter").read_text(encoding="utf-8").startswith("Subject: News\n")
    site.run_at()
    got = {str(m["To"]): m for m in site.outbox()}
    assert str(got["anna@example.org"]["Subject"]) == "News"
    assert plain_text(got["anna@example.org"]).startswith("Hello.")
    assert "<p>Hello.</p>" in got["anna@example.org"].get_body(("html",)).get_content()
    assert str(got["boris@example.org"]["Subject"]) == "Новости"
    assert plain_text(got["boris@example.org"]).startswith("Привет.")
