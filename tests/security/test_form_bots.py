"""Forms that bots cannot bomb (docs/using/subscriber-pages.md#subscriber-bots).

A bot could post the subscribe form and the own page's link request as fast
as it liked, to any address: the honeypot was the only test, and one
address could be sent a confirmation request from every list and every
client. Run through a real ``vykhukhol serve`` and the real CGI scripts.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from urllib.parse import urlencode

import altcha

from support import webkit
from support.webkit import Browser, outbox_to, run_cgi, wait_for

served = webkit.served  # the fixture: a real `vykhukhol serve`
PERSON = "person@example.net"


def aged_stamp(site, seconds: float = 30) -> str:
    """The stamp of a form drawn ``seconds`` ago (a person took that long):
    the time and its HMAC-SHA256 under the site's secret."""
    drawn = int(time.time() - seconds)
    signature = hmac.new(site.settings().secret, f"form:{drawn}".encode(), hashlib.sha256)
    return f"{drawn}.{signature.hexdigest()[:32]}"


def post(browser: Browser, fields: dict[str, str]) -> str:
    answer = browser.post("/cgi/subscribe.py", {"service": "news", "name": "", **fields})
    assert answer.status == 200, answer
    return answer.body.replace(fields["email"], "ADDRESS")


def cgi_post(site, fields: dict[str, str], script: str = "cgi/subscribe.py",
             remote: str = "198.51.100.7"):
    body = urlencode({"service": "news", **fields}).encode()
    answer = run_cgi(site, script, "POST", body=body, remote=remote)
    assert answer.status == 200, answer
    return answer


def solved(puzzle: dict) -> str:
    """What the widget puts in the ``altcha`` field, found here by the library."""
    found = altcha.solve_challenge_v1(puzzle["challenge"], puzzle["salt"], puzzle["algorithm"],
                                      puzzle["maxNumber"])
    fields = {key: puzzle[key] for key in ("algorithm", "challenge", "salt", "signature")}
    return base64.b64encode(json.dumps({**fields, "number": found.number}).encode()).decode()


def test_a_post_faster_than_a_person_or_with_the_honeypot_is_answered_alike_and_stores_nothing(
        site, served):
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])
    browser = Browser(served.port)
    page = browser.get("/cgi/subscribe.py?service=news")
    fresh = page.field("ts")  # drawn just now: a bot posts it at once
    person = post(browser, {"email": PERSON, "ts": aged_stamp(site)})
    bots_ = [post(browser, {"email": "fast@example.net", "ts": fresh}),
             post(browser, {"email": "pot@example.net", "ts": aged_stamp(site),
                            "website": "http://spam.example"}),
             post(browser, {"email": "forged@example.net", "ts": f"{int(time.time()) - 60}.{'0' * 32}"})]
    assert set(bots_) == {person}, "a bot must get the person's answer"
    assert wait_for(lambda: len(site.outbox()) == 1)
    assert list(site.subscribers("news")) == [PERSON]
    log = site.pages_log()
    assert wait_for(lambda: site.pages_log().count("taken for a bot's") == 3), log
    assert "fast@example.net" not in site.pages_log()


def test_a_form_pasted_before_the_stamp_existed_still_subscribes(site, served):
    """No ``ts`` field at all: judged by the honeypot and the caps only."""
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])
    post(Browser(served.port), {"email": PERSON})
    assert wait_for(lambda: list(site.subscribers("news")) == [PERSON])  # stored after the answer
    assert wait_for(lambda: len(outbox_to(site, PERSON)) == 1)


def test_the_puzzle_once_on_is_asked_for_solved_once_and_served_by_us(site, served):
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])
    site.set(subscribe_challenge="on")
    browser = Browser(served.port)
    page = browser.get("/cgi/subscribe.py?service=news")
    assert 'name="altcha"' in page.body and "subscribe.py?part=widget.js" in page.body
    assert "script-src 'self'" in page.headers["content-security-policy"]
    script = browser.get("/cgi/subscribe.py?part=widget.js")
    assert script.status == 200 and "javascript" in script.headers["content-type"]
    assert "sha256" in script.body and "http" not in script.body.split("*/", 1)[1]  # no third party
    start = browser.get("/cgi/subscribe.py?part=start")
    assert start.headers["access-control-allow-origin"] == "*"  # the pasted form asks from afar
    puzzle = json.loads(start.body)["challenge"]
    answer = solved(puzzle)

    unsolved = post(browser, {"email": "lazy@example.net", "ts": aged_stamp(site)})
    pasted = post(browser, {"email": "old-form@example.net"})
    person = post(browser, {"email": PERSON, "ts": aged_stamp(site), "altcha": answer})
    again = post(browser, {"email": "replay@example.net", "ts": aged_stamp(site), "altcha": answer})
    assert {unsolved, pasted, again} == {person}
    assert wait_for(lambda: list(site.subscribers("news")) == [PERSON])  # stored after the answer
    assert wait_for(lambda: site.pages_log().count("taken for a bot's") == 3), site.pages_log()
    assert "a puzzle solved before" in site.pages_log()


def test_one_address_gets_at_most_the_daily_cap_of_requests_whoever_asks(site):
    """Three lists, three clients, one address: with a cap of 2 a day, two
    letters (the third list's line stays unconfirmed, unasked); the counter
    names no address."""
    site.set(language="en", subscribe_address_daily_limit=2)
    for name in ("news", "tips", "deals"):
        site.service(name, letters=[("Lesson 1", "1d", "Hello.\n")])
    answers = set()
    for n, name in enumerate(("news", "tips", "deals")):
        answer = cgi_post(site, {"service": name, "email": "victim@example.net",
                                 "ts": aged_stamp(site)}, remote=f"198.51.100.{n + 1}")
        answers.add(answer.body.replace(name.title(), "LIST"))
    assert len(answers) == 1
    assert len(outbox_to(site, "victim@example.net")) == 2
    assert [m["Subject"] for m in site.outbox() if "Deals" in str(m["Subject"])] == []
    assert "over subscribe_address_daily_limit" in site.pages_log()
    counter = (site.data.state / "confirm-requests").read_text()
    assert "victim" not in counter and "example.net" not in counter


def test_a_wave_of_sign_ups_holds_the_requests_and_tells_the_owner_once(site):
    """Past subscribe_alarm sign-ups an hour the subscribers are stored, their
    requests held (not sent, not lost), one alert goes to the admin; `vykhukhol
    held release` hands them to the next run."""
    site.set(language="en", subscribe_alarm=2)
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])
    for n in range(5):
        cgi_post(site, {"email": f"wave{n}@example.net", "ts": aged_stamp(site)},
                 remote=f"203.0.113.{n + 1}")
    assert wait_for(lambda: len(site.subscribers("news")) == 5)  # stored after the answers
    assert [len(outbox_to(site, f"wave{n}@example.net")) for n in range(5)] == [1, 1, 0, 0, 0]
    admin = site.settings()["admin_email"]
    alerts = [m for m in outbox_to(site, admin) if m["Subject"] == "sign-ups come in a wave"]
    assert len(alerts) == 1, [m["Subject"] for m in site.outbox()]
    assert "subscribe_challenge" in alerts[0].get_content()
    listed = site.ok("held", "list")
    assert "wave4@example.net" in listed and "3 requests held" in listed
    assert "3 requests released" in site.ok("held", "release")
    site.ok("cron")
    assert [len(outbox_to(site, f"wave{n}@example.net")) for n in range(5)] == [1] * 5
    assert "not holding" in site.ok("held", "list")


def test_the_own_page_sends_no_link_for_a_bot(site):
    """The link request of the own page: a post faster than a person, or with
    the honeypot, mails no link; a person's does."""
    site.set(language="en")
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])
    site.subscriber("news", PERSON)
    fresh = run_cgi(site, "cgi/manage.py").field("ts")
    fast = cgi_post(site, {"action": "send_link", "email": PERSON, "ts": fresh}, "cgi/manage.py")
    pot = cgi_post(site, {"action": "send_link", "email": PERSON, "website": "x",
                          "ts": aged_stamp(site)}, "cgi/manage.py")
    assert outbox_to(site, PERSON) == []
    person = cgi_post(site, {"action": "send_link", "email": PERSON, "ts": aged_stamp(site)},
                      "cgi/manage.py")
    assert fast.body == pot.body == person.body
    assert len(outbox_to(site, PERSON)) == 1
    assert site.pages_log().count("manage: a post from") == 2


def test_the_snippet_carries_the_stamp_field_and_our_script(site):
    from vykhukhol import services as svc
    from vykhukhol.web.admin.services import form_snippet

    site.service("news")
    snippet = form_snippet(site.settings(), svc.find_service(site.data, "news"))
    assert re.search(r'<script src="https://lists\.example\.org/cgi/subscribe\.py\?part=widget\.js"',
                     snippet)
    assert 'name="ts"' in snippet and 'name="altcha"' in snippet


def test_the_admin_sees_the_held_requests_and_releases_them(site, served):
    site.set(subscribe_alarm=1)
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])
    browser = Browser(served.port)
    for n in range(3):
        post(browser, {"email": f"wave{n}@example.net", "ts": aged_stamp(site)})
    assert wait_for(lambda: (site.data.state / "held-confirmations").exists()
                    and "wave2@" in (site.data.state / "held-confirmations").read_text())
    admin = Browser(served.port)
    admin.log_in()
    assert 'id="holding"' in admin.get("/admin/settings").body
    page = admin.get("/admin/held")
    assert "wave1@example.net" in page.body and "wave2@example.net" in page.body
    same_site = {"Origin": f"http://127.0.0.1:{served.port}", "Sec-Fetch-Site": "same-origin"}
    done = admin.post("/admin/held/release", {"csrf": page.field("csrf")}, headers=same_site)
    assert done.status == 303, done
    assert "Nothing is held" in admin.get("/admin/held").body
    site.ok("cron")
    assert [len(outbox_to(site, f"wave{n}@example.net")) for n in range(3)] == [1, 1, 1]


def test_the_own_page_asks_for_the_puzzle_too_once_it_is_on(site):
    site.set(language="en", subscribe_challenge="on")
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])
    site.subscriber("news", PERSON)
    page = run_cgi(site, "cgi/manage.py")
    assert 'name="altcha"' in page.body and "subscribe.py?part=widget.js" in page.body
    assert "script-src 'self'" in page.headers["content-security-policy"]
    cgi_post(site, {"action": "send_link", "email": PERSON, "ts": aged_stamp(site)},
             "cgi/manage.py")
    assert outbox_to(site, PERSON) == []
    puzzle = json.loads(run_cgi(site, "cgi/subscribe.py", query="part=start").body)["challenge"]
    cgi_post(site, {"action": "send_link", "email": PERSON, "ts": aged_stamp(site),
                    "altcha": solved(puzzle)}, "cgi/manage.py")
    assert len(outbox_to(site, PERSON)) == 1


def test_a_hold_keeps_the_reminders_too(site) -> None:
    """While a wave of sign-ups holds confirmation requests, the run's
    reminders to the unconfirmed wait as well; once released, they go."""
    from vykhukhol.members import held
    from vykhukhol.timeutil import now

    site.service("news", letters=[("One", "0s", "Hello.")])
    site.subscriber("news", "waiting@example.org", state="new", ago=4 * 86400,
                    last_reminder_ago=4 * 86400)
    held.start_hold(site.data, now())
    site.run_at()
    assert not [m for m in site.outbox() if "waiting@" in str(m["To"])]
    assert "reminders wait: confirmation requests are held" in site.log()
    held.release(site.data)
    site.run_at()
    assert [m for m in site.outbox() if "waiting@" in str(m["To"])], site.log()
