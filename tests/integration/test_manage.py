"""The subscriber's own page (docs/using/own-page.md#own-page, ``cgi/manage.py``) over real HTTP: a
``vykhukhol serve`` subprocess, letters written by the real sender to the
outbox, and every link taken from those letters as a subscriber would click
it. The same page as a CGI process is in test_manage_cgi.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from support.webflowkit import FORM, Server
from support.webtools import (
    Page,
    assert_clean_page,
    assert_security_headers,
    free_port,
    path_of,
    plain_text,
)
from vykhukhol import newsletters, tokens
from vykhukhol.members import suppression
from vykhukhol.timeutil import now

# The links come from the footer every list letter carries (docs/using/services.md#footer).
LESSON = [("Lesson 1", "0s", "Hello {{ name }}.\n"), ("Lesson 2", "1d", "Two.\n")]
ANNA = "anna@example.org"


@pytest.fixture
def server(site, tmp_path: Path) -> Iterator[Server]:
    port = free_port()
    site.set(site_url=f"http://127.0.0.1:{port}", language="en")
    site.service("news", letters=LESSON)
    site.service("offers")
    site.service("staff", public="no")
    site.service("club", public="no")
    served = Server(site, port, tmp_path / "serve")
    served.start()
    yield served
    code, _, err = served.stop()
    assert code == 0, err


def manage_link_from_letter(site, address: str) -> str:
    """The manage link of the newest series letter to ``address`` in the outbox."""
    letters = [m for m in site.outbox() if address in str(m["To"]) and "Lesson" in str(m["Subject"])]
    assert letters, [str(m["Subject"]) for m in site.outbox()]
    found = re.findall(r"https?://\S+/cgi/manage\.py\?\S+", plain_text(letters[-1]))
    assert len(found) == 1, plain_text(letters[-1])
    return found[0]


def subscribed_with_a_letter(site, server: Server, address: str = ANNA) -> str:
    """Anna on news and staff, letter 1 sent, and what the logs keep of her:
    a refused subscription in pages.log, a bounce in bounces.log."""
    from vykhukhol.bounces import record
    from vykhukhol.files.runlog import page_log

    site.subscriber("news", address, name="Anna", ago=60)
    site.subscriber("staff", address, name="Anna", ago=60)
    site.run_at()
    page_log(site.data).write(f"subscribe: 192.0.2.1 is over the limit: {address} was not stored")
    page_log(site.data).write("subscribe: 192.0.2.1 is over the limit: jimanna@example.org")
    record.write(site.data, [record.line("<m1@x>", "soft", "news", address, "imap", "mailbox full")])
    return manage_link_from_letter(site, address)


def post(server: Server, page: Page, action: str, **fields: str) -> Page:
    """Submit the form of ``action`` on ``page`` as a browser of the same site would."""
    forms = [f for f in page.forms() if f.fields.get("action") == action
             and all(f.fields.get(k, v) == v for k, v in fields.items() if k == "service")]
    assert forms, f"no {action} form on {page!r}"
    form = forms[0]
    assert form.hidden["e"] and form.hidden["t"], form  # the signed fields ride along
    return server.request("POST", "/cgi/manage.py", form.encoded(**fields),
                          {**FORM, "Sec-Fetch-Site": "same-origin"})


def test_every_list_letter_carries_the_manage_link_and_it_shows_every_list(site, server):
    link = subscribed_with_a_letter(site, server)
    assert link.startswith(f"{server.url}/cgi/manage.py?")
    page = server.request("GET", path_of(link))
    assert page.status == 200, page
    assert_clean_page(page)
    assert_security_headers(page)
    text = page.body
    assert ANNA in text
    assert "News" in text and "Offers" in text  # public: the one it is in, the one it is not
    assert "Staff" in text                      # private, but subscribed
    assert "Club" not in text                   # private and not subscribed: never shown
    joins = [f.fields["service"] for f in page.forms() if f.fields.get("action") == "join"]
    leaves = [f.fields["service"] for f in page.forms() if f.fields.get("action") == "leave"]
    assert joins == ["offers"] and sorted(leaves) == ["news", "staff"]


def test_a_get_changes_nothing_and_a_forged_link_shows_nothing(site, server):
    link = subscribed_with_a_letter(site, server)
    before = {p: p.read_bytes() for p in site.data.services.rglob("subscribers.txt")}
    query = parse_qs(urlsplit(link).query)
    for _ in range(2):
        assert server.request("GET", path_of(link)).status == 200
        assert server.request("HEAD", path_of(link)).status == 200
    for forged in ({"e": "bob@example.org", "t": query["t"][0]},            # another address
                   {"e": ANNA, "t": "0" * 32},                               # another token
                   {"e": ANNA, "t": tokens.make(site.settings().secret, "news", ANNA,
                                                "unsubscribe")}):            # a service's token
        page = server.request("GET", "/cgi/manage.py?" + urlencode(forged))
        assert page.status == 400, page
        assert ANNA not in page.body and "bob@" not in page.body and "News" not in page.body
        posted = server.request("POST", "/cgi/manage.py", urlencode(
            {**forged, "action": "leave_all"}).encode(), FORM)
        assert posted.status == 400 and "News" not in posted.body
    after = {p: p.read_bytes() for p in site.data.services.rglob("subscribers.txt")}
    assert before == after


def test_leave_join_name_and_leave_all(site, server):
    link = subscribed_with_a_letter(site, server)
    page = server.request("GET", path_of(link))

    left = post(server, page, "leave", service="news")
    assert left.status == 200 and "You left" in left.body, left
    assert ANNA not in site.subscribers("news")

    joined = post(server, left, "join", service="offers")
    assert joined.status == 200 and "confirmation" in joined.body, joined
    assert site.subscribers("offers")[ANNA].state.value == "new"
    server_letters = lambda: [m for m in site.outbox() if "confirm" in str(m["Subject"]).lower()]  # noqa: E731
    from support.webkit import wait_for
    assert wait_for(server_letters), "no confirmation letter for the join"

    named = post(server, joined, "name", name="Anna Petrova")
    assert named.status == 200, named
    assert site.subscribers("staff")[ANNA].name == "Anna Petrova"
    assert site.subscribers("offers")[ANNA].name == "Anna Petrova"

    bad = post(server, named, "name", name="Anna\x07Petrova")
    assert bad.status == 400 and "control characters" in bad.body, bad
    assert site.subscribers("staff")[ANNA].name == "Anna Petrova"

    gone = post(server, named, "leave_all")
    assert gone.status == 200, gone
    assert ANNA not in site.subscribers("staff") and ANNA not in site.subscribers("offers")


def test_a_private_list_cannot_be_joined_and_unknown_actions_are_refused(site, server):
    link = subscribed_with_a_letter(site, server)
    page = server.request("GET", path_of(link))
    form = next(f for f in page.forms() if f.fields.get("action") == "join")
    for values in ({"action": "join", "service": "club"}, {"action": "join", "service": "../x"},
                   {"action": "launch"}, {"action": ""}):
        answer = server.request("POST", "/cgi/manage.py", form.encoded(**values),
                                {**FORM, "Sec-Fetch-Site": "same-origin"})
        assert answer.status == 400, answer
        assert_clean_page(answer)
    assert ANNA not in site.subscribers("club")
    cross = server.request("POST", "/cgi/manage.py", form.encoded(),
                           {**FORM, "Sec-Fetch-Site": "cross-site"})
    assert cross.status == 403
    assert ANNA not in site.subscribers("offers")


def test_a_pause_holds_series_letters_and_newsletters_until_its_date(site, server):
    link = subscribed_with_a_letter(site, server)
    page = server.request("GET", path_of(link))
    past = post(server, page, "pause", until=(now() - timedelta(days=1)).strftime("%Y-%m-%d"))
    assert past.status == 400 and "future" in past.body, past
    assert site.subscribers("news")[ANNA].paused_until is None
    too_far = post(server, page, "pause", until="2999-01-01")
    assert too_far.status == 400
    garbled = post(server, page, "pause", until="next tuesday")
    assert garbled.status == 400

    until = (now() + timedelta(days=10)).strftime("%Y-%m-%d")
    paused = post(server, page, "pause", until=until)
    assert paused.status == 200 and until in paused.body, paused
    assert site.subscribers("news")[ANNA].paused_until > now()
    # Letter 2 is due in a day; two days on, a run sends nothing to the paused address.
    sent_before = len(site.outbox())
    site.run_at(now() + timedelta(days=2))
    assert [(str(m["To"]), str(m["Subject"])) for m in site.outbox()[sent_before:]] == []
    site.subscriber("staff", "bob@example.org", name="Bob")
    newsletters.create(site.data, ["news", "staff"], "News", "Hello.", None, now())
    site.run_at(now() + timedelta(days=2))
    assert [str(m["To"]) for m in site.outbox()[sent_before:]
            if m["Subject"] == "News"] == ["Bob <bob@example.org>"]  # not Anna: paused
    # After the pause, the series goes on where it stopped.
    site.run_at(now() + timedelta(days=11))
    assert [m for m in site.outbox()[sent_before:] if m["Subject"] == "Lesson 2"]

    resumed = post(server, paused, "resume")
    assert resumed.status == 200
    assert site.subscribers("news")[ANNA].paused_until is None


def test_export_holds_everything_that_names_the_address(site, server):
    link = subscribed_with_a_letter(site, server)
    site.subscriber("news", "jimanna@example.org", name="Jim")  # a longer address: not hers
    suppression.add(site.data, site.settings().secret, "jimanna@example.org",
                    suppression.Why.ADMIN, "admin", now())
    page = server.request("GET", path_of(link))
    answer = post(server, page, "export")
    assert answer.status == 200
    assert answer.content_type.startswith("application/json")
    assert "attachment" in answer.header("Content-Disposition")
    found = json.loads(answer.body)
    assert found["address"] == ANNA
    assert sorted(s["service"] for s in found["subscriptions"]) == ["news", "staff"]
    assert any(ANNA in line["line"] for line in found["log_lines"]), found["log_lines"]
    assert [ANNA in line["line"] for line in found["bounces"]] == [True], found["bounces"]
    assert found["letters"]  # the letters of the outbox
    assert "jimanna" not in answer.body


def test_erase_removes_every_line_and_keeps_only_the_hash(site, server):
    link = subscribed_with_a_letter(site, server)
    site.subscriber("news", "jimanna@example.org", name="Jim")
    newsletters.create(site.data, ["news"], "News", "Hello.", None, now() + timedelta(days=1))
    page = server.request("GET", path_of(link))
    unsure = post(server, page, "erase", sure="")  # the box left unticked
    assert unsure.status == 400 and ANNA in site.subscribers("news")

    erased = post(server, page, "erase", sure="yes")
    assert erased.status == 200 and "Erased" in erased.body, erased
    secret = site.settings().secret
    for path in site.data.root.rglob("*"):
        if path.is_file() and path.suffix not in (".pem",):
            assert b"anna@example.org" not in path.read_bytes().replace(b"jimanna@", b""), path
    assert suppression.is_suppressed(site.data, secret, ANNA)
    assert "jimanna@example.org" in site.subscribers("news")  # a longer address is someone else
    # A later import cannot bring it back: the hash is enough for the suppression list.
    (site.root.parent / "list.txt").write_text(f"{ANNA}\nnew@example.org\n")
    site.cli("subscriber", "import", "news", str(site.root.parent / "list.txt"), "--confirmed")
    assert ANNA not in site.subscribers("news") and "new@example.org" in site.subscribers("news")

    again = post(server, page, "erase", sure="yes")
    assert again.status == 200 and "Nothing to erase" in again.body
    assert suppression.is_suppressed(site.data, secret, ANNA)


def test_a_page_without_a_link_mails_it_the_same_way_for_anyone(site, server):
    site.subscriber("news", ANNA, name="Anna")
    ask = server.request("GET", "/cgi/manage.py")
    assert ask.status == 200 and ask.forms()
    answers = {}
    for address in (ANNA, "stranger@example.org"):
        answer = server.request("POST", "/cgi/manage.py", urlencode(
            {"action": "send_link", "email": address}).encode(), FORM)
        answers[address] = answer.body.replace(address, "ADDRESS")
        assert answer.status == 200
    assert answers[ANNA] == answers["stranger@example.org"]
    from support.webkit import wait_for
    letters = wait_for(lambda: [m for m in site.outbox() if ANNA in str(m["To"])])
    assert letters and not [m for m in site.outbox() if "stranger@" in str(m["To"])]
    link = re.findall(r"https?://\S+/cgi/manage\.py\?\S+", plain_text(letters[0]))[0]
    assert server.request("GET", path_of(link)).status == 200
    # A bad address: the form again with the reason; nothing sent.
    bad = server.request("POST", "/cgi/manage.py", b"action=send_link&email=not-an-address", FORM)
    assert bad.status == 400 and "not valid" in bad.body


def test_the_unsubscribe_page_links_the_own_page(site, server):
    from support.webtools import link_in

    subscribed_with_a_letter(site, server)
    letter = [m for m in site.outbox() if ANNA in str(m["To"])][-1]
    unsubscribe = server.request("GET", path_of(link_in(plain_text(letter), "unsubscribe.py")))
    assert unsubscribe.status == 200, unsubscribe
    found = re.findall(r'href="([^"]*/cgi/manage\.py\?[^"]*)"', unsubscribe.body)
    assert len(found) == 1, unsubscribe.body
    own = server.request("GET", path_of(found[0].replace("&amp;", "&")))
    assert own.status == 200 and ANNA in own.body
    # An unsubscribe link that is not valid links nothing.
    forged = server.request("GET", f"/cgi/unsubscribe.py?s=news&e={ANNA}&t={'0' * 32}")
    assert "manage.py" not in forged.body


def test_the_link_letters_are_capped_like_the_subscribe_form(site, server):
    site.set(subscribe_hourly_limit=2)
    site.subscriber("news", ANNA, name="Anna")
    for _ in range(4):
        answer = server.request("POST", "/cgi/manage.py", urlencode(
            {"action": "send_link", "email": ANNA}).encode(), FORM)
        assert answer.status == 200 and "Check your mailbox" in answer.body
    from support.webkit import wait_for
    assert wait_for(lambda: len([m for m in site.outbox() if ANNA in str(m["To"])]) >= 2)
    import time
    time.sleep(1.0)  # letters go after the answer: give a third one the time to show up
    assert len([m for m in site.outbox() if ANNA in str(m["To"])]) == 2


def test_public_is_a_service_setting_of_the_command_line(site):
    site.service("news")
    site.ok("service", "edit", "news", "--public", "no")
    assert "public = no" in (site.data.db("main") / "news" / "service.ini").read_text()
    site.ok("service", "edit", "news", "--title", "News")  # other edits keep it
    from vykhukhol import services as svc
    assert svc.find_service(site.data, "news").public is False
    site.ok("service", "edit", "news", "--public", "yes")
    assert svc.find_service(site.data, "news").public is True
