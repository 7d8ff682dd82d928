"""The smaller holes: names, template globals and the like.

- The own page's name check let U+202E (right-to-left override) and
  zero-width characters into every subscriber line; it now cleans a name
  as the subscribe form does (addresses.clean_name).
- ``{{ lipsum }}``, ``{{ cycler }}`` and Jinja2's other globals printed
  ``<function … at 0x…>`` into letters and archive pages: the sandbox offers
  only our variables, filters and bounded range()/lipsum(), and a function
  prints as nothing (as an unknown name does).
- The bounce intake's nesting pre-check missed a Content-Type folded over
  lines or ended by a bare CR (the parser's later limits caught it).
- The link-request page (cgi/manage.py without a link) had no cross-site
  check: another site's page could make its visitors ask for link letters.

Each as a request from outside: real HTTP to ``vykhukhol serve``, the real
``vykhukhol bounce`` pipe, the CLI the owner runs.
"""

from __future__ import annotations

import subprocess
import sys

from support import webkit
from support.servetools import subprocess_env
from support.webkit import Browser, outbox_to, wait_for
from vykhukhol import tokens

served = webkit.served  # the fixture: a real `vykhukhol serve`
SAME = {"Sec-Fetch-Site": "same-origin"}


def test_the_own_page_cleans_a_name_as_the_subscribe_form_does(site, served):
    site.service("news")
    site.subscriber("news", "anna@example.org", name="Anna")
    token = tokens.make_for_address(site.settings().secret, "anna@example.org", "manage")
    answer = Browser(served.port).post("/cgi/manage.py", {
        "e": "anna@example.org", "t": token, "action": "name",
        "name": "Anna\u202egnp.exe\u200b\u200d\ufeff Smith"}, headers=SAME)
    assert answer.status == 200, answer
    name = site.subscribers("news")["anna@example.org"].name
    assert name == "Anna gnp.exe Smith", repr(name)


def test_no_letter_or_archive_page_prints_a_function(site, served):
    site.service("news")
    site.ok("letter", "add", "news", "--subject", "One", "--delay", "0s", "--public", "--body",
            "A {{ lipsum }} B {{ cycler }} C {{ dict }} D {{ namespace }}"
            " E {{ range }} F {{ joiner }} G {{ email.upper }}.\n")
    site.subscriber("news", "anna@example.org")
    site.ok("archive", "on", "news")
    site.run_at()
    [letter] = outbox_to(site, "anna@example.org")
    text = letter.get_body(("plain",)).get_content()
    assert text.startswith("A  B  C  D  E  F  G ."), text
    page = Browser(served.port).get("/archive/news/")
    assert page.status == 200, page
    for shown in (text, page.body):
        assert "0x" not in shown and "function" not in shown and "<class" not in shown, shown


def nested(levels: int, header: bytes, end: bytes = b"\n") -> bytes:
    raw = b"Delivered-To: list+x@example.org\nFrom: x@example.org\n"
    for level in range(levels):
        raw += header % level + b"\n\n--b%d\n" % level
    return (raw + b"Content-Type: text/plain\n\nhi\n").replace(b"\n", end)


def test_the_nesting_precheck_sees_folded_and_bare_cr_content_types(site):
    site.service("news")
    for raw in (nested(30, b'Content-Type: multipart/mixed;\r boundary="b%d"', b"\r"),
                nested(30, b'Content-Type:\n \n multipart/mixed; boundary="b%d"'),
                nested(30, b'Content-Type:\r multipart/mixed; boundary="b%d"')):
        done = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(site.root),
                               "bounce"], input=raw, capture_output=True, timeout=60,
                              env=subprocess_env())
        assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    lines = (site.data.log / "bounces.log").read_text().splitlines()
    assert len(lines) == 3 and all("nested too deep" in line for line in lines), lines


def test_another_site_cannot_make_visitors_ask_for_link_letters(site, served):
    site.service("news")
    site.subscriber("news", "anna@example.org")
    browser = Browser(served.port)
    fields = {"action": "send_link", "email": "anna@example.org"}
    for headers in ({"Sec-Fetch-Site": "cross-site"},
                    {"Origin": "https://evil.example", "Host": f"127.0.0.1:{served.port}"}):
        answer = browser.post("/cgi/manage.py", fields, headers=headers)
        assert answer.status == 403, (headers, answer)
    assert browser.post("/cgi/manage.py", fields, headers=SAME).status == 200
    assert wait_for(lambda: len(outbox_to(site, "anna@example.org")) == 1)
    assert len(outbox_to(site, "anna@example.org")) == 1
