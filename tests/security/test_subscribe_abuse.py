"""Confirmation mail on demand.

A stranger made the site mail confirmation requests to any address without
limit, and the answer's time told a known address from a new one (the new
one waited for the letter to be sent). Run through a real ``vykhukhol serve``
and the real CGI script; letters land in the outbox (or, to time the answer,
at a mail server that takes seconds to say hello).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from urllib.parse import urlencode

import pytest

from support import webkit
from support.webkit import (
    CHECKOUT,
    SLOW_HELLO,
    Browser,
    cgi_environ,
    outbox_to,
    run_cgi,
    wait_for,
)

served = webkit.served  # the fixture: a real `vykhukhol serve`
slow_mail_server = webkit.slow_mail_server  # the fixture: seconds before it refuses each letter


@pytest.fixture
def news(site):
    return site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])


def subscribe(browser: Browser, email: str) -> str:
    answer = browser.post("/cgi/subscribe.py", {"service": "news", "email": email, "name": ""})
    assert answer.status == 200, answer
    return answer.body.replace(email, "ADDRESS")


def pad(site, count: int = 30_000) -> None:
    """Subscribers who finished long ago: each look at the file and each rewrite
    takes long enough for parallel posts to overlap (as on a real list)."""
    from vykhukhol import services as svc
    from vykhukhol.services import subscribers as subs
    from vykhukhol.services.subscriber_line import Subscriber
    from vykhukhol.states import SubscriberState
    from vykhukhol.timeutil import now

    done = [Subscriber(email=f"done{n:05d}@example.org", state=SubscriberState.DONE,
                       subscribed=now(), confirmed=now(), sent=1, last_sent=now())
            for n in range(count)]
    subs.add_many(svc.find_service(site.data, "news").subscribers_path, done)


def letters(site) -> int:
    return len(site.outbox())


def settled(site, count: int) -> int:
    """The outbox's letter count once it has reached ``count`` (or stopped growing)."""
    wait_for(lambda: letters(site) >= count, timeout=5)
    time.sleep(0.3)  # anything more would have come by now
    return letters(site)


def test_an_address_gets_one_confirmation_per_ten_minutes_however_often_it_is_posted(
        site, news, served):
    """A new address posted five times, and an old unconfirmed one posted ten
    times at once, each get exactly one confirmation request."""
    browser = Browser(served.port)
    for _ in range(5):
        subscribe(browser, "victim@example.net")
    pad(site)
    site.subscriber("news", "stale@example.net", state="new", ago=11 * 60)
    start = threading.Barrier(10)

    def post() -> None:
        start.wait()
        subscribe(Browser(served.port), "stale@example.net")

    threads = [threading.Thread(target=post) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert settled(site, 2) == 2
    assert len(outbox_to(site, "victim@example.net")) == 1
    assert len(outbox_to(site, "stale@example.net")) == 1


def test_parallel_cgi_posts_of_an_unconfirmed_address_send_one_letter(site, news):
    """The same race through ten CGI processes started together. (On the code
    before the fix this one did not lose the race here: the processes' start-up
    spreads them out; the serve test above did, with 3 letters.)"""
    site.set(language="en")
    pad(site)
    site.subscriber("news", "stale@example.net", state="new", ago=11 * 60)
    body = urlencode({"service": "news", "email": "stale@example.net"}).encode()
    environ = cgi_environ(site, "cgi/subscribe.py", "POST")
    environ.update(CONTENT_TYPE="application/x-www-form-urlencoded", CONTENT_LENGTH=str(len(body)))
    script = CHECKOUT / "cgi" / "subscribe.py"
    procs = [subprocess.Popen([str(script)], env=environ, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(10)]
    for proc in procs:
        out, err = proc.communicate(body, timeout=60)
        assert b"Status: 200" in out or b"200 OK" in out, (out[:300], err)
    assert len(outbox_to(site, "stale@example.net")) == 1


def test_one_client_gets_at_most_the_hourly_cap_of_confirmation_letters(site, news, served):
    """Fifteen new addresses from one client: ten letters (the default cap), the
    same page for all fifteen, the five refused stored nowhere and logged;
    another client behind the trusted proxy has its own cap."""
    site.set(trusted_proxies="127.0.0.1")
    browser = Browser(served.port, {"X-Forwarded-For": "203.0.113.50"})
    pages = {subscribe(browser, f"target{n}@example.net") for n in range(15)}
    assert len(pages) == 1, "the page must not tell a refused post from an accepted one"
    assert settled(site, 10) == 10
    stored = site.subscribers("news")
    assert [f"target{n}@example.net" in stored for n in range(15)] == [True] * 10 + [False] * 5
    assert {s.ip for s in stored.values()} == {"203.0.113.50"}
    assert wait_for(lambda: site.pages_log().count("over subscribe_hourly_limit") == 5), site.pages_log()
    # A known, confirmed address costs no letter and is answered the same.
    site.subscriber("news", "member@example.net")
    assert subscribe(browser, "member@example.net") in pages

    other = Browser(served.port, {"X-Forwarded-For": "203.0.113.51"})
    subscribe(other, "neighbour@example.net")
    assert settled(site, 11) == 11


def test_the_cgi_script_caps_letters_per_client_too(site, news):
    """Under CGI the cap holds across processes: with subscribe_hourly_limit 3,
    the fourth and fifth new addresses get the same page and no letter."""
    site.set(language="en", subscribe_hourly_limit=3)
    answers = []
    for n in range(5):
        body = urlencode({"service": "news", "email": f"cgi{n}@example.net"}).encode()
        answer = run_cgi(site, "cgi/subscribe.py", "POST", body=body, remote="198.51.100.20")
        assert answer.status == 200, answer
        answers.append(answer.body.replace(f"cgi{n}@example.net", "ADDRESS"))
    assert len(set(answers)) == 1
    assert letters(site) == 3
    assert "over subscribe_hourly_limit" in site.pages_log()


def test_the_stored_address_is_the_client_behind_a_trusted_proxy_only(site, news):
    """X-Forwarded-For names the subscriber's address only when the peer is a
    trusted proxy; otherwise the peer's own address is stored."""
    site.set(language="en", trusted_proxies="10.0.0.0/8")
    for email, remote in (("behind@example.net", "10.1.2.3"), ("direct@example.net", "192.0.2.9")):
        body = urlencode({"service": "news", "email": email}).encode()
        answer = run_cgi(site, "cgi/subscribe.py", "POST", body=body, remote=remote,
                         HTTP_X_FORWARDED_FOR="198.51.100.1, 203.0.113.77")
        assert answer.status == 200, answer
    stored = site.subscribers("news")
    assert stored["behind@example.net"].ip == "203.0.113.77"
    assert stored["direct@example.net"].ip == "192.0.2.9"


def test_cron_allow_checks_the_client_behind_a_trusted_proxy(site, served):
    """cron_allow reads the same client address: X-Forwarded-For counts only
    from a trusted proxy, so a stranger cannot claim an allowed address."""
    cron = "/cgi/" + sorted(site.cgi_dir.glob("cron-*.py"))[0].name
    site.set(cron_allow="203.0.113.0/24")
    spoofed = Browser(served.port, {"X-Forwarded-For": "203.0.113.7"})
    assert spoofed.get(cron).status == 403
    site.set(trusted_proxies="127.0.0.1")
    assert spoofed.get(cron).status == 200
    assert Browser(served.port, {"X-Forwarded-For": "198.51.100.1"}).get(cron).status == 403


# --- the answer does not wait for the letter ---------------------------------------


def test_serve_answers_a_new_address_before_the_mail_server_does(site, news, slow_mail_server,
                                                                 served):
    """With a mail server that takes seconds, a new address's page comes back as
    fast as a known one's: the letter is sent after the answer."""
    site.use_smtp(slow_mail_server.port)
    site.subscriber("news", "member@example.net")
    browser = Browser(served.port)
    for email in ("member@example.net", "brand.new@example.net"):
        began = time.monotonic()
        subscribe(browser, email)
        took = time.monotonic() - began
        assert took < SLOW_HELLO / 2, f"{email}: the answer took {took:.2f} s"


def test_the_cgi_script_writes_its_answer_before_mailing(site, news, slow_mail_server):
    """Under CGI the whole page is on the web server's pipe before the letter
    is sent: the answer arrives at once, the process ends seconds later."""
    site.set(language="en")
    site.use_smtp(slow_mail_server.port)
    body = urlencode({"service": "news", "email": "brand.new@example.net"}).encode()
    environ = cgi_environ(site, "cgi/subscribe.py", "POST")
    environ.update(CONTENT_TYPE="application/x-www-form-urlencoded", CONTENT_LENGTH=str(len(body)))
    script = CHECKOUT / "cgi" / "subscribe.py"
    began = time.monotonic()
    proc = subprocess.Popen([str(script)], env=environ, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    proc.stdin.write(body)
    proc.stdin.close()
    received = b""
    while b"</html>" not in received:
        chunk = os.read(proc.stdout.fileno(), 65536)
        assert chunk, f"the script ended before its page was complete: {received[:300]!r}"
        received += chunk
    answered = time.monotonic() - began
    proc.wait(timeout=60)
    ended = time.monotonic() - began
    assert b"200 OK" in received.split(b"\r\n", 1)[0] or b"Status: 200" in received, received[:200]
    assert answered < SLOW_HELLO * 0.8, f"the page took {answered:.2f} s"
    assert ended >= SLOW_HELLO, "the letter was not tried after the page"
