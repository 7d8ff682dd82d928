"""What held when the site was attacked on
its new surfaces (the own page, the archive, the callbacks, the suppression
list, the bounce pipe), re-run as one module that must stay green.

Each probe is the attack as it came: real HTTP to ``vykhukhol serve``, the
real ``vykhukhol bounce`` pipe. The fixed holes have their own modules
(test_own_data, test_subscribe_cap, test_after_answer, test_callbacks,
test_web_copies, test_smaller_holes).
"""

from __future__ import annotations

import http.client
import socket
import statistics
import subprocess
import sys
import time
from urllib.parse import urlencode

from support import hookkit as kit
from support import webkit
from support.servetools import subprocess_env
from support.webkit import Browser, outbox_to, wait_for
from vykhukhol import tokens

served = webkit.served  # the fixture: a real `vykhukhol serve`
hooked = kit.hooked     # the fixture: serve with a local CA and a loopback SNS
SAME = {"Sec-Fetch-Site": "same-origin"}
ANNA = "anna@example.org"


def manage_token(site, email: str) -> str:
    return tokens.make_for_address(site.settings().secret, email, "manage")


def own_site(site) -> None:
    site.service("news")
    site.service("staff", public="no")
    site.subscriber("news", ANNA, name="Anna")


# --- the own page -------------------------------------------------------------------

def test_forged_or_altered_own_page_links_show_nothing(site, served):
    own_site(site)
    browser = Browser(served.port)
    good = manage_token(site, ANNA)
    altered = good[:-1] + ("0" if good[-1] != "0" else "1")
    for email, token in ((ANNA, altered), ("bob@example.org", good), (ANNA, ""),
                         (ANNA, good.upper()), ("ANNA@example.org ", altered)):
        for method in ("GET", "POST"):
            fields = {"e": email, "t": token, "action": "export"}
            answer = browser.get("/cgi/manage.py?" + urlencode(fields)) if method == "GET" \
                else browser.post("/cgi/manage.py", fields, headers=SAME)
            assert answer.status == 400, (email, token, method, answer)
            assert ANNA not in answer.body and "News" not in answer.body, answer


def test_a_cross_site_post_changes_nothing(site, served):
    own_site(site)
    before = (site.data.root / "services").rglob("subscribers.txt")
    snapshot = {p: p.read_bytes() for p in before}
    for action in ("leave_all", "erase", "name", "export"):
        answer = Browser(served.port).post("/cgi/manage.py", {
            "e": ANNA, "t": manage_token(site, ANNA), "action": action, "sure": "yes",
            "name": "Mallory"}, headers={"Sec-Fetch-Site": "cross-site"})
        assert answer.status == 403, (action, answer)
    assert {p: p.read_bytes() for p in snapshot} == snapshot


def test_the_link_request_page_answers_everyone_alike(site, served):
    own_site(site)
    browser = Browser(served.port)
    times: dict[str, list[float]] = {ANNA: [], "nobody@example.org": []}
    pages = set()
    for _ in range(3):
        for email in times:
            began = time.perf_counter()
            answer = browser.post("/cgi/manage.py", {"action": "send_link", "email": email},
                                  headers=SAME)
            times[email].append(time.perf_counter() - began)
            assert answer.status == 200, answer
            pages.add(answer.body.replace(email, "ADDRESS"))
    assert len(pages) == 1
    assert wait_for(lambda: len(outbox_to(site, ANNA)) == 3)
    assert not outbox_to(site, "nobody@example.org")
    gap = abs(statistics.median(times[ANNA]) - statistics.median(times["nobody@example.org"]))
    assert gap < 0.05, times


def test_a_private_list_cannot_be_joined_from_the_own_page(site, served):
    own_site(site)
    answer = Browser(served.port).post("/cgi/manage.py", {
        "e": ANNA, "t": manage_token(site, ANNA), "action": "join", "service": "staff"},
        headers=SAME)
    assert answer.status == 400 and "Staff" not in answer.body, answer
    assert ANNA not in site.subscribers("staff")


# --- the archive ---------------------------------------------------------------------

HOSTILE = ("<script>alert(1)</script> ]]></content><entry> {{ email }} {{ manage_url }} "
           "javascript:alert(2) \u202e")


def test_hostile_letters_in_the_archive_and_its_feed_stay_text(site, served):
    site.service("news")
    site.ok("letter", "add", "news", "--subject", HOSTILE[:60], "--delay", "0s", "--public",
            "--body", HOSTILE + "\n")
    site.subscriber("news", ANNA, name="<b>Anna</b>")
    site.ok("archive", "on", "news")
    site.run_at()
    browser = Browser(served.port)
    index = browser.get("/archive/news/")
    assert index.status == 200, index
    names = {part.split('"')[0] for part in index.body.split('href="')[1:]}
    pages = [browser.get(f"/archive/news/{name}") for name in names
             if name.endswith((".html", ".atom")) and "/" not in name]
    feed = browser.get("/archive/news/feed.atom")
    assert feed.status == 200 and pages and all(page.status == 200 for page in pages), names
    assert any("&lt;script&gt;" in page.body for page in pages), pages
    for page in [index, feed, *pages]:
        assert "<script>" not in page.body and "]]></content><entry>" not in page.body, page
        assert ANNA not in page.body and "manage.py" not in page.body, page
        assert 'href="javascript:' not in page.body, page


# --- the callbacks ---------------------------------------------------------------------

LOOKALIKES = [
    "https://sns.eu-west-1.amazonaws.com.evil.example/x.pem",
    "https://sns.eu-west-1.amazonaws.com@evil.example/x.pem",
    "https://evil.example/sns.eu-west-1.amazonaws.com/x.pem",
    "https://evil.example/?https://sns.eu-west-1.amazonaws.com/x.pem",
    "https://evil.example#https://sns.eu-west-1.amazonaws.com/x.pem",
    "https://user@sns.eu-west-1.amazonaws.com/x.pem",
    "https://user:pw@sns.eu-west-1.amazonaws.com/x.pem",
    "http://sns.eu-west-1.amazonaws.com/x.pem",
    "https://sns.eu-west-1.amazonaws.com:8443/x.pem",
    "https://sns.eu-west-1.amazonaws.co/x.pem",
    "https://sns.eu-west-1.amazonaws.com.cn.evil.example/x.pem",
    "https://sns-eu-west-1.amazonaws.com/x.pem",
    "https://sns.eu_west_1.amazonaws.com/x.pem",
    "https://xsns.eu-west-1.amazonaws.com/x.pem",
    "https://sns.s3.amazonaws.com/x.pem",
    "https://sns.amazonaws.com/x.pem",
    "https://amazonaws.com/x.pem",
    "https://sns.eu-west-1.amazonaws.com\t.evil.example/x.pem",
    "https://sns.eu-west-1.amazonaws.com\n/x.pem",
    "https://sns.eu-west-1.amazonaws.com%2f@evil.example/x.pem",
    "https://sns.eu-west-1.amazonaws.com\\@evil.example/x.pem",
    "https://[::1]/x.pem",
    "https://127.0.0.1/x.pem",
    "file:///etc/passwd",
]


def test_look_alike_certificate_urls_are_refused_and_nothing_is_fetched(hooked):
    from vykhukhol.bounces.providers.ses import allowed_url

    assert len(LOOKALIKES) == 24
    for url in LOOKALIKES:
        assert not allowed_url(url), url
    # Through serve, those that need no name lookup (nothing may leave the machine).
    hits = len(hooked.sns.hits)
    host, port = hooked.sns.host.split(":")
    for number, url in enumerate((f"http://{host}:{port}/x.pem", f"https://{host}:1/x.pem",
                                  f"https://user@{host}:{port}/x.pem",
                                  f"https://{host}:{port}/x.txt")):
        message = kit.sns_message(hooked, "bounce", "probe@example.net", f"look-{number}",
                                  cert=url)
        assert hooked.post("ses", message)[0] == 403, url
    assert len(hooked.sns.hits) == hits


def test_huge_or_deep_json_is_a_4xx(hooked):
    deep = "[" * 100_000 + "]" * 100_000
    for provider in ("generic", "mailgun", "sendgrid", "postmark", "ses"):
        status, text = hooked.post(provider, deep)
        assert status in (400, 403, 413), (provider, status, text)
        status, text = hooked.post(provider, "[" + " " * 1_100_000 + "]")
        assert status == 413, (provider, status, text)
    assert "Traceback" not in hooked.proc.stderr()


# --- the bounce pipe -----------------------------------------------------------------

def test_a_dsn_naming_10000_recipients_is_refused_quickly(site):
    site.service("news")
    site.subscriber("news", "u1@example.net")
    status = "".join(f"Final-Recipient: rfc822;u{n}@example.net\nAction: failed\n"
                     f"Status: 5.1.1\n\n" for n in range(10_000))
    raw = ("Delivered-To: list+x@example.org\nContent-Type: multipart/report; "
           "report-type=delivery-status; boundary=\"b\"\n\n--b\nContent-Type: text/plain\n\n"
           "gone\n--b\nContent-Type: message/delivery-status\n\nReporting-MTA: dns;x\n\n"
           f"{status}--b--\n").encode()
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(site.root), "bounce"],
                          input=raw, capture_output=True, timeout=60, env=subprocess_env())
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert time.monotonic() - began < 20
    assert "u1@example.net" in site.subscribers("news")
    assert (site.data.log / "bounces.log").read_text().count("\n") == 1


# --- slow clients ---------------------------------------------------------------------

def test_150_slow_clients_do_not_keep_the_pages_from_answering(site, served):
    own_site(site)
    clients = []
    try:
        for _ in range(150):
            sock = socket.create_connection(("127.0.0.1", served.port), timeout=5)
            sock.sendall(b"POST /cgi/manage.py HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            clients.append(sock)
        began = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=15)
        conn.request("GET", "/cgi/manage.py?" + urlencode({"e": ANNA,
                                                           "t": manage_token(site, ANNA)}))
        answer = conn.getresponse()
        body = answer.read()
        conn.close()
        assert answer.status == 200 and ANNA.encode() in body
        assert time.monotonic() - began < 10
    finally:
        for sock in clients:
            sock.close()
