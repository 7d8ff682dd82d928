"""The subscriber's pages over real HTTP (docs/using/subscriber-pages.md#subscriber-pages): a ``vykhukhol serve``
subprocess on a free local port, mail through a real aiosmtpd server, and the
sender started by ``vykhukhol cron`` or the secret cron URL.

Every letter's link points at the running server (``site_url``), so a test
follows exactly the links a subscriber would click. After each test the server
gets SIGTERM and must say "Vykhukhol stopped" and exit 0 within seconds.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import pytest

from support.webflowkit import FORM, Server
from support.webkit import wait_for
from support.webtools import (
    TRACEBACK,
    Page,
    assert_clean_page,
    assert_security_headers,
    free_port,
    link_in,
    list_unsubscribe,
    path_of,
    plain_text,
)
from vykhukhol import tokens
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now

LIB = Path(__file__).resolve().parents[2] / "lib"
ONE_CLICK = b"List-Unsubscribe=One-Click"
PADDING = 3000  # finished subscribers that lengthen the sender's rewrites


def env() -> dict[str, str]:
    values = dict(os.environ)
    values["PYTHONPATH"] = str(LIB) + os.pathsep + values.get("PYTHONPATH", "")
    values.pop("VYKHUKHOL_DATA", None)
    return values


# --- the server -------------------------------------------------------------------


@pytest.fixture
def server(site: Any, smtp_server: Any, tmp_path: Path) -> Iterator[Server]:
    """``vykhukhol serve`` over ``site``, mail to ``smtp_server``, pages in English."""
    port = free_port()
    site.use_smtp(smtp_server.port)
    site.set(site_url=f"http://127.0.0.1:{port}", language="en")
    running = Server(site, port, tmp_path / "serve")
    running.start()
    yield running
    code, out, err = running.stop()
    assert code == 0, f"serve did not stop cleanly on SIGTERM (exit {code}): {err}"
    assert "Vykhukhol stopped" in out, out
    assert TRACEBACK not in err, err


@pytest.fixture
def news(site: Any) -> Any:
    """An enabled service with one letter due at once after confirmation."""
    return site.service("news", letters=[("Lesson 1 for {{ name }}", "0s",
                                          "Hello {{ name }}, lesson one.\n")])


def mails_to(smtp_server: Any, address: str) -> list[Any]:
    return [r for r in smtp_server.handler.received if address in r.rcpt_tos]


def wait_for_mails(smtp_server: Any, address: str, count: int) -> list[Any]:
    wait_for(lambda: len(mails_to(smtp_server, address)) >= count)
    return mails_to(smtp_server, address)


def file_bytes(site: Any, service: str = "news") -> bytes:
    path = site.data.services / "main" / service / "subscribers.txt"
    return path.read_bytes() if path.exists() else b""


def state_of(site: Any, email: str, service: str = "news") -> str | None:
    found = site.subscribers(service).get(email)
    return found.state.value if found else None


def cron_url(site: Any) -> str:
    scripts = sorted(site.cgi_dir.glob("cron-*.py"))
    assert len(scripts) == 1, f"init did not leave one renamed cron script: {scripts}"
    return f"/cgi/{scripts[0].name}"


def link_fields(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def secret(site: Any) -> bytes:
    return site.settings().secret


# --- the whole flow ---------------------------------------------------------------


def test_a_subscriber_subscribes_confirms_receives_letter_one_and_leaves_by_one_click(
        site, news, server, smtp_server):
    """Form, mailed confirm link (GET/HEAD inert, POST confirms), letter 1, one-click leave."""
    ivan = "ivan@example.org"
    form_page = server.get("/cgi/subscribe.py?service=news")
    assert form_page.status == 200, form_page
    assert_clean_page(form_page)
    [form] = form_page.forms()
    assert form.method == "post" and form.action == "subscribe.py"
    assert {"service", "email", "name", "website"} <= set(form.fields)
    assert form.hidden["service"] == "news"

    time.sleep(2.1)  # a person's pace: a form posted faster than 2 s is a bot's
    answer = server.post("/cgi/" + form.action, form.encoded(email=ivan, name="Ivan"))
    assert answer.status == 200, answer
    assert "Check your mailbox" in answer.body

    [request] = wait_for_mails(smtp_server, ivan, 1)
    assert state_of(site, ivan) == "new"  # stored after the answer, before its letter
    confirm = link_in(plain_text(request.message), "confirm.py")
    assert confirm.startswith(f"http://127.0.0.1:{server.port}/cgi/confirm.py?")

    page = server.get(path_of(confirm))
    assert page.status == 200, page
    assert_clean_page(page)
    [button_form] = page.forms()
    assert button_form.buttons == 1 and button_form.method == "post"
    assert button_form.hidden == link_fields(confirm)
    assert "Confirm my subscription" in page.body
    assert state_of(site, ivan) == "new", "a GET of the confirm link must change nothing"
    head = server.head(path_of(confirm))
    assert head.status == 200 and head.raw == b""
    assert state_of(site, ivan) == "new", "a HEAD of the confirm link must change nothing"

    done = server.post("/cgi/" + button_form.action, button_form.encoded())
    assert done.status == 200, done
    assert "Subscription confirmed" in done.body
    assert state_of(site, ivan) == "active"

    report = server.get(cron_url(site))
    assert report.status == 200 and report.body.startswith("run "), report
    [letter] = [r for r in wait_for_mails(smtp_server, ivan, 2) if r is not request]
    assert letter.message["Subject"] == "Lesson 1 for Ivan"
    assert site.subscribers("news")[ivan].sent == 1
    # An http site_url: no one-click header (RFC 8058 3.1), the POST still works.
    assert "List-Unsubscribe-Post" not in letter.message
    leave = list_unsubscribe(letter.message)
    assert leave.startswith(f"http://127.0.0.1:{server.port}/cgi/unsubscribe.py?")

    before = file_bytes(site)
    page = server.get(path_of(leave))
    assert page.status == 200, page
    [button_form] = page.forms()
    assert button_form.buttons == 1 and button_form.hidden == link_fields(leave)
    assert server.head(path_of(leave)).status == 200
    assert file_bytes(site) == before, "GET/HEAD of the unsubscribe link must change nothing"

    gone = server.request("POST", path_of(leave), ONE_CLICK, FORM)
    assert gone.status == 200, gone
    assert "You are unsubscribed" in gone.body
    assert ivan not in site.subscribers("news")
    assert ivan.encode() not in file_bytes(site)

    code, out, err = server.stop()
    assert code == 0, err
    assert "Vykhukhol stopped" in out
    assert TRACEBACK not in err


def test_subscribe_answers_the_same_page_for_unknown_unconfirmed_and_confirmed_addresses(
        site, news, server):
    """Nobody learns from the form who is subscribed: one page for all three cases."""
    site.subscriber("news", "pend1@example.org", state="new", ago=3600)
    site.subscriber("news", "conf1@example.org", state="active")
    pages = {email: server.subscribe(email) for email in
             ("newc1@example.org", "pend1@example.org", "conf1@example.org")}
    shapes = {(page.status, page.body.replace(email, "ADDRESS"), page.content_type,
               page.header("Content-Length"))
              for email, page in pages.items()}
    assert len(shapes) == 1, pages
    assert next(iter(pages.values())).status == 200
    assert state_of(site, "conf1@example.org") == "active"


def test_a_suppressed_address_gets_the_same_answer_and_nothing_is_stored_or_sent(
        site, news, server, smtp_server):
    """The suppressed address's answer is byte for byte a new address's
    (the address itself apart), its line is never written and no letter leaves,
    neither from the page nor from a later run."""
    from vykhukhol.members import suppression, unsent
    from vykhukhol.members.suppression import Why

    suppression.add(site.data, secret(site), "Gone1@example.org", Why.COMPLAINT, "imap", now())
    gone = server.subscribe("gone1@example.org", name="Gone")  # posted first: its letter would lead
    new = server.subscribe("newc1@example.org", name="Gone")
    assert gone.status == new.status == 200
    assert gone.raw.replace(b"gone1@", b"newc1@") == new.raw
    assert {k: v for k, v in gone.headers.items() if k != "date"} == \
        {k: v for k, v in new.headers.items() if k != "date"}
    assert len(wait_for_mails(smtp_server, "newc1@example.org", 1)) == 1
    assert list(site.subscribers("news")) == ["newc1@example.org"]
    assert b"gone1@" not in file_bytes(site)
    # The note of newc1's letter is taken back after the letter arrives: read
    # the notes once that is done, not while the work after the answer writes them.
    assert wait_for(lambda: all(note.email != "newc1@example.org" for note in unsent.notes(site.data)))
    assert not any("gone1@" in email for _, email in
                   unsent.take_unsent(site.data, now() + timedelta(days=1)))
    site.cli("cron")
    assert mails_to(smtp_server, "gone1@example.org") == []


def test_an_unconfirmed_address_is_asked_again_at_most_once_per_ten_minutes(
        site, news, server, smtp_server):
    """Two POSTs of a new address send one request; an old unconfirmed one gets one more."""
    assert server.subscribe("twice@example.org").status == 200
    assert server.subscribe("twice@example.org").status == 200
    time.sleep(0.3)
    assert len(mails_to(smtp_server, "twice@example.org")) == 1
    assert list(site.subscribers("news")) == ["twice@example.org"]

    site.subscriber("news", "stale@example.org", state="new", ago=11 * 60)
    assert server.subscribe("stale@example.org").status == 200
    assert server.subscribe("stale@example.org").status == 200
    time.sleep(0.3)
    assert len(mails_to(smtp_server, "stale@example.org")) == 1
    assert state_of(site, "stale@example.org") == "new"


def test_a_filled_honeypot_looks_accepted_but_stores_and_sends_nothing(
        site, news, server, smtp_server):
    """A bot that fills the hidden ``website`` field sees the normal page; nothing happens."""
    normal = server.subscribe("human@example.org")
    wait_for(lambda: "human@example.org" in site.subscribers("news"))  # stored after the answer
    before = file_bytes(site)
    bot = server.subscribe("robot@example.org", website="http://spam.example")
    assert bot.status == normal.status == 200
    assert bot.body.replace("robot@", "human@") == normal.body
    time.sleep(0.3)
    assert file_bytes(site) == before
    assert "robot@example.org" not in site.subscribers("news")
    assert mails_to(smtp_server, "robot@example.org") == []


# --- names and links that lead nowhere --------------------------------------------


def test_an_unknown_service_is_404_on_every_page(site, news, server):
    """A service that does not exist answers 404, on GET and POST of every page."""
    token = tokens.make(secret(site), "nope", "a@example.org", "confirm")
    link = urlencode({"s": "nope", "e": "a@example.org", "t": token})
    pages = [
        server.get("/cgi/subscribe.py?service=nope"),
        server.get("/cgi/subscribe.py"),
        server.subscribe("a@example.org", service="nope"),
        server.get(f"/cgi/confirm.py?{link}"),
        server.post("/cgi/confirm.py", link.encode()),
        server.get(f"/cgi/unsubscribe.py?{link}"),
        server.post("/cgi/unsubscribe.py", link.encode()),
    ]
    for page in pages:
        assert page.status == 404, page
        assert_clean_page(page)
    assert not (site.data.services / "main" / "nope").exists()


TRAVERSALS = ["../../etc/passwd", "..%2f..%2f..%2fevil", "../../../evil", "news/../x",
              "news%2f..%2f..%2f..%2f..%2fevil", "..", ".", "news/", "%2e%2e", "news\x00"]


def test_path_traversal_in_service_names_is_refused_and_reads_nothing_outside_data(
        site, news, server, tmp_path):
    """``..``, slashes or encoded slashes in a name: 404/400, never 500, never a file outside."""
    evil = tmp_path / "evil"  # data/services/main/../../../evil
    evil.mkdir()
    (evil / "service.ini").write_text("[service]\ntitle = EVIL-MARKER\nenabled = yes\n")
    (evil / "subscribers.txt").write_text("# email\tname\n")
    planted = (evil / "subscribers.txt").read_bytes()
    pages: list[tuple[str, Page]] = []
    for name in TRAVERSALS:
        raw = name.replace("\x00", "%00")  # as typed into a URL; %2f stays encoded
        sent = quote(name, safe="")
        pages += [
            (f"GET service={raw}", server.get(f"/cgi/subscribe.py?service={raw}")),
            (f"GET service={sent}", server.get(f"/cgi/subscribe.py?service={sent}")),
            (f"POST service={name!r}", server.subscribe("t@example.org", service=name)),
            (f"GET confirm s={raw}", server.get(f"/cgi/confirm.py?s={raw}&e=t@example.org&t=x")),
            (f"POST unsubscribe s={name!r}",
             server.post("/cgi/unsubscribe.py", {"s": name, "e": "t@example.org", "t": "x"})),
        ]
    for path in ("/cgi/../../etc/passwd", "/cgi/..%2f..%2fetc%2fpasswd", "/cgi/%2e%2e/cgi/subscribe.py"):
        pages.append((f"GET {path}", server.get(path)))
    for what, page in pages:
        assert page.status in (400, 404), (what, page)
        assert TRACEBACK not in page.body and "EVIL-MARKER" not in page.body, (what, page)
        assert "root:" not in page.body, (what, page)
    assert (evil / "subscribers.txt").read_bytes() == planted
    assert TRACEBACK not in server.stderr()


# --- signed links -----------------------------------------------------------------


def bad_links(site: Any, email: str, purpose: str, other_email: str) -> dict[str, dict[str, str]]:
    """Link fields that must not work for ``email`` on news, by what is wrong with them."""
    good = tokens.make(secret(site), "news", email, purpose)
    wrong_purpose = "unsubscribe" if purpose == "confirm" else "confirm"
    return {
        "forged token": {"s": "news", "e": email, "t": "0" * len(good)},
        "truncated token": {"s": "news", "e": email, "t": good[:-1]},
        "token with a character changed": {"s": "news", "e": email,
                                           "t": good[:-1] + ("0" if good[-1] != "0" else "1")},
        "empty token": {"s": "news", "e": email, "t": ""},
        "no token": {"s": "news", "e": email},
        "token of another service": {"s": "news", "e": email,
                                     "t": tokens.make(secret(site), "other", email, purpose)},
        "token for the other purpose": {"s": "news", "e": email,
                                        "t": tokens.make(secret(site), "news", email, wrong_purpose)},
        "token of another address": {"s": "news", "e": email,
                                     "t": tokens.make(secret(site), "news", other_email, purpose)},
        "wrong email for the token": {"s": "news", "e": other_email, "t": good},
    }


def test_confirming_with_a_bad_link_gets_the_not_valid_page_and_changes_nothing(
        site, news, server):
    """Forged, truncated, other-service, other-purpose and wrong-email links: 400, no change."""
    site.service("other")
    site.subscriber("news", "anna@example.org", state="new")
    site.subscriber("news", "boris@example.org", state="new")
    site.subscriber("other", "anna@example.org", state="new")
    before, before_other = file_bytes(site), file_bytes(site, "other")
    for what, fields in bad_links(site, "anna@example.org", "confirm", "boris@example.org").items():
        page = server.post("/cgi/confirm.py", fields)
        assert page.status == 400, (what, page)
        assert_clean_page(page)
        assert "not valid" in page.body, (what, page)
        assert file_bytes(site) == before, what
    assert file_bytes(site, "other") == before_other

    gone = tokens.make(secret(site), "news", "nobody@example.org", "confirm")
    page = server.post("/cgi/confirm.py", {"s": "news", "e": "nobody@example.org", "t": gone})
    assert page.status == 400 and "not valid" in page.body, page
    assert file_bytes(site) == before


def test_unsubscribing_with_a_bad_link_shows_the_generic_page_and_changes_nothing(
        site, news, server):
    """A bad unsubscribe link gets exactly the page a good one gets, and removes
    nobody; a mail provider's one-click POST with it is told 400."""
    site.service("other")
    for email in ("anna@example.org", "boris@example.org", "vera@example.org"):
        site.subscriber("news", email)
    site.subscriber("other", "anna@example.org")
    good = tokens.make(secret(site), "news", "vera@example.org", "unsubscribe")
    reference = server.post("/cgi/unsubscribe.py",
                            {"s": "news", "e": "vera@example.org", "t": good})
    assert reference.status == 200 and "You are unsubscribed" in reference.body, reference
    assert "vera@example.org" not in site.subscribers("news")

    before, before_other = file_bytes(site), file_bytes(site, "other")
    for what, fields in bad_links(site, "anna@example.org", "unsubscribe", "boris@example.org").items():
        page = server.post("/cgi/unsubscribe.py", fields)
        assert (page.status, page.body) == (reference.status, reference.body), (what, page)
        page = server.request("POST", "/cgi/unsubscribe.py?" + urlencode(fields), ONE_CLICK, FORM)
        assert page.status == 400 and "not valid" in page.body, (what, page)
        assert file_bytes(site) == before, what
    assert file_bytes(site, "other") == before_other


def test_a_replayed_confirmation_keeps_the_subscriber_active(site, news, server, smtp_server):
    """POSTing a valid confirm link twice: 200 both times, still active, first time kept."""
    server.subscribe("olga@example.org")
    [request] = wait_for_mails(smtp_server, "olga@example.org", 1)
    fields = link_fields(link_in(plain_text(request.message), "confirm.py"))
    first = server.post("/cgi/confirm.py", fields)
    confirmed = site.subscribers("news")["olga@example.org"].confirmed
    time.sleep(1.1)  # a second confirmation would carry a later time
    second = server.post("/cgi/confirm.py", fields)
    assert first.status == second.status == 200, (first, second)
    assert "Subscription confirmed" in second.body
    again = site.subscribers("news")["olga@example.org"]
    assert again.state.value == "active" and again.confirmed == confirmed


# --- bad input --------------------------------------------------------------------

INVALID_ADDRESSES = ["a", "a@", "@b.c", "a b@c.d", "a" * 288 + "@example.org",
                     "a@b.c\r\nBcc: x@y.z", "ivan@example.org\r\nBcc: x@y.z", "", "a@@b.org",
                     "<a@b.org>", "a@b.org, c@d.org", '"><script>alert(1)</script>@example.org']
SCRIPT = "<script>alert("


def test_invalid_addresses_get_the_form_again_with_an_error_and_store_nothing(
        site, news, server, smtp_server):
    """Each invalid address: a 4xx page with the form and a clear error; no line, no mail."""
    before = file_bytes(site)
    for address in INVALID_ADDRESSES:
        page = server.subscribe(address, name='Ivan"><script>alert(2)</script>')
        assert 400 <= page.status < 500, (address, page)
        assert_clean_page(page)
        assert SCRIPT not in page.body, (address, page)  # what was typed comes back escaped
        assert "not valid" in page.body or "required" in page.body, (address, page)
        assert any(f.action == "subscribe.py" for f in page.forms()), (address, page)
        assert file_bytes(site) == before, address
    time.sleep(0.3)
    assert smtp_server.handler.received == []
    assert TRACEBACK not in server.stderr()


def test_line_breaks_in_the_name_are_stored_cleaned_and_inject_no_header(
        site, news, server, smtp_server):
    """CR/LF and header-like text in a name: stored as one clean line, no header in the mail."""
    name = "Eve\r\nBcc: victim@example.net\r\nX-Injected: yes\n\tSubject: hacked"
    page = server.subscribe("eve@example.org", name=name)
    assert page.status == 200, page
    assert_clean_page(page)
    wait_for(lambda: "eve@example.org" in site.subscribers("news"))  # stored after the answer
    stored = site.subscribers("news")["eve@example.org"].name
    assert not any(ch in stored for ch in "\r\n\t")
    assert stored.startswith("Eve") and len(stored) <= 100
    raw = file_bytes(site).decode()
    assert [line for line in raw.splitlines() if "eve@example.org" in line] and \
        all(line.startswith(("#", "eve@example.org\t")) for line in raw.splitlines()), raw

    [request] = wait_for_mails(smtp_server, "eve@example.org", 1)
    assert request.rcpt_tos == ["eve@example.org"]
    message = request.message
    assert message["Bcc"] is None and message["X-Injected"] is None
    assert message.get_all("Subject") and len(message.get_all("Subject")) == 1
    assert "hacked" not in str(message["Subject"])
    head = request.data.split(b"\r\n\r\n", 1)[0]
    assert not any(line.lower().startswith((b"bcc:", b"x-injected:")) for line in head.splitlines())
    time.sleep(0.3)
    assert mails_to(smtp_server, "victim@example.net") == []


def test_an_oversized_body_is_refused_without_storing_anything(site, news, server):
    """A POST over 64 KiB gets 413 (or 400), a clean page, and no subscriber."""
    before = file_bytes(site)
    body = urlencode({"service": "news", "email": "big@example.org",
                      "name": "x" * (70 * 1024)}).encode()
    page = server.request("POST", "/cgi/subscribe.py", body, FORM)
    assert page.status in (413, 400), page
    assert_clean_page(page)
    assert file_bytes(site) == before


def multipart_body(boundary: str, fields: dict[str, str]) -> bytes:
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
             for k, v in fields.items()]
    return ("".join(parts) + f"--{boundary}--\r\n").encode()


def test_broken_form_bodies_get_a_clean_4xx_page_and_store_nothing(site, news, server):
    """Bad boundary, truncated multipart, no boundary, invalid UTF-8: 4xx, no traceback."""
    fields = {"service": "news", "email": "mp@example.org", "name": "M"}
    good = multipart_body("XyZ", fields)
    cases: dict[str, tuple[bytes, str]] = {
        "boundary not in body": (good, "multipart/form-data; boundary=OtherBoundary"),
        "truncated multipart": (good[: len(good) // 2], "multipart/form-data; boundary=XyZ"),
        "no closing boundary": (good[: good.rindex(b"--XyZ--")], "multipart/form-data; boundary=XyZ"),
        "no boundary parameter": (good, "multipart/form-data"),
        "garbage as multipart": (b"\x00\xff" * 100, "multipart/form-data; boundary=XyZ"),
        "invalid UTF-8, percent-encoded": (b"service=news&email=%FF%FE%40example.org&name=x",
                                           FORM["Content-Type"]),
        "invalid UTF-8, raw bytes": (b"service=news&email=\xff\xfe@example.org&name=\xc3",
                                     FORM["Content-Type"]),
        "invalid UTF-8 in the name only": (b"service=news&email=ok@example.org&name=\xc3\x28",
                                           FORM["Content-Type"]),
    }
    before = file_bytes(site)
    for what, (body, content_type) in cases.items():
        page = server.request("POST", "/cgi/subscribe.py", body, {"Content-Type": content_type})
        assert 400 <= page.status < 500, (what, page)
        assert_clean_page(page)
        assert file_bytes(site) == before, what
    # the well-formed multipart body itself is accepted: the cases above fail for their fault
    page = server.request("POST", "/cgi/subscribe.py", good,
                          {"Content-Type": "multipart/form-data; boundary=XyZ"})
    assert page.status == 200, page
    wait_for(lambda: "mp@example.org" in site.subscribers("news"))  # stored after the answer
    assert TRACEBACK not in server.stderr()


def test_other_methods_get_405_on_every_page(site, news, server):
    """PUT, DELETE and PATCH are refused with 405 and a clean page; nothing changes."""
    site.subscriber("news", "anna@example.org")
    before = file_bytes(site)
    token = tokens.make(secret(site), "news", "anna@example.org", "unsubscribe")
    query = urlencode({"s": "news", "e": "anna@example.org", "t": token})
    for method in ("PUT", "DELETE", "PATCH"):
        for path in ("/cgi/subscribe.py?service=news", f"/cgi/confirm.py?{query}",
                     f"/cgi/unsubscribe.py?{query}"):
            page = server.request(method, path, ONE_CLICK, FORM)
            assert page.status == 405, (method, path, page)
            assert_clean_page(page)
    assert file_bytes(site) == before


def test_pages_carry_the_security_headers(site, news, server):
    """Every page, error pages included, says nosniff, no-referrer and a CSP, and escapes input."""
    site.subscriber("news", "anna@example.org", state="new")
    query = urlencode({"s": "news", "e": "anna@example.org",
                       "t": tokens.make(secret(site), "news", "anna@example.org", "confirm")})
    pages = [server.get("/cgi/subscribe.py?service=news"), server.subscribe("b@example.org"),
             server.subscribe("not an address"), server.get(f"/cgi/confirm.py?{query}"),
             server.get(f"/cgi/unsubscribe.py?{query}"), server.post("/cgi/confirm.py", {"s": "news"}),
             server.get("/cgi/subscribe.py?service=nope"), server.get("/cgi/nothing-here.py"),
             server.request("PUT", "/cgi/subscribe.py"),
             server.get("/cgi/confirm.py?" + urlencode({"s": "news", "t": "x",
                                                         "e": '"><script>alert(1)</script>'})),
             server.get("/cgi/unsubscribe.py?" + urlencode({"s": "news", "t": "x",
                                                             "e": "<script>alert(1)</script>"}))]
    for page in pages:
        assert_security_headers(page)
        assert SCRIPT not in page.body, page


# --- the cron URL -----------------------------------------------------------------


def test_the_cron_url_obeys_cron_allow(site, news, server):
    """cron_allow 10.0.0.0/8 → 403 "Only local allowed" to 127.0.0.1; 127.0.0.1 → a run."""
    url = cron_url(site)
    site.set(cron_allow="10.0.0.0/8")
    log = site.log()
    page = server.get(url)
    assert page.status == 403, page
    assert page.body.strip() == "Only local allowed"
    assert site.log() == log, "a refused call must not start a run"

    site.set(cron_allow="127.0.0.1")
    page = server.get(url)
    assert page.status == 200, page
    assert page.content_type.startswith("text/plain")
    assert page.body.startswith("run ")

    for name in ("cron.py", "cron-wrongname1234.py"):
        assert server.get(f"/cgi/{name}").status == 404


# --- concurrency ------------------------------------------------------------------


def test_fifty_parallel_subscriptions_while_the_sender_rewrites_lose_nobody(
        site, server, smtp_server, tmp_path):
    """50 POSTs during ``vykhukhol cron`` rewrites: all 50 new and all earlier subscribers stay."""
    site.service("news", letters=[(f"Lesson {n}", "0s", f"Lesson {n}.\n") for n in (1, 2, 3)])
    site.set(serial_per_run=15, subscribe_hourly_limit=1000, subscribe_alarm=0)  # all 50 come from one address
    path = site.data.services / "main" / "news" / "subscribers.txt"
    # Subscribers who finished the series make each of the sender's rewrites long
    # enough that an append it did not wait for would fall into it and be lost.
    finished = [Subscriber(email=f"done{n:04d}@example.org", state=SubscriberState.DONE,
                           subscribed=now(), confirmed=now(), sent=3, last_sent=now())
                for n in range(PADDING)]
    subs.add_many(path, finished)
    seeded = [f"seed{n:03d}@example.org" for n in range(200)]
    seed_file = tmp_path / "seed.txt"
    seed_file.write_text("\n".join(seeded) + "\n")
    site.cli("subscriber", "import", "news", str(seed_file), "--confirmed")
    assert len(site.subscribers("news")) == 200 + PADDING

    runs: list[tuple[float, float, str]] = []
    broken: list[BaseException] = []
    posting_done = threading.Event()

    def sender_loop() -> None:
        try:
            while not posting_done.is_set() or len(runs) < 2:
                began = time.monotonic()
                out = site.cli("cron").stdout
                runs.append((began, time.monotonic(), out))
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            broken.append(exc)

    loop = threading.Thread(target=sender_loop)
    loop.start()
    wait_for(lambda: runs or broken, timeout=30)  # the sender is going before the crowd arrives
    assert runs and not broken, broken

    fresh = [f"crowd{n:02d}@example.org" for n in range(50)]
    answers: dict[str, int] = {}
    barrier = threading.Barrier(len(fresh))

    def post(email: str) -> None:
        barrier.wait()
        answers[email] = server.subscribe(email, name=email.split("@")[0]).status

    workers = [threading.Thread(target=post, args=(email,)) for email in fresh]
    window_start = time.monotonic()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    window_end = time.monotonic()
    posting_done.set()
    loop.join(timeout=120)

    assert not broken, broken
    assert answers == {email: 200 for email in fresh}
    overlapping = [out for began, ended, out in runs
                   if began < window_end and ended > window_start and "handed over " in out]
    assert overlapping, f"no sending run overlapped the POSTs: {runs}"
    # each post's line is written after its answer: wait for the last of them
    wait_for(lambda: set(fresh) <= set(site.subscribers("news")), timeout=60)
    found = site.subscribers("news")
    assert set(fresh) <= set(found), sorted(set(fresh) - set(found))
    assert set(seeded) <= set(found), sorted(set(seeded) - set(found))
    assert {sub.email for sub in finished} <= set(found)
    assert all(found[email].state.value == "new" for email in fresh)
    assert subs.malformed(path) == []
    # serve sends the confirmations after the answers
    wait_for(lambda: all(mails_to(smtp_server, email) for email in fresh), timeout=30)
    for email in fresh:
        assert len(mails_to(smtp_server, email)) == 1, email
