"""The archive under serve and the web copy.

- ``/archive/news%0d%0aX-Injected:%20yes`` under ``serve``: the redirect to
  the folder was built before the name was checked, and the line break in
  its Location header ended in a traceback. Now a 404.
- A "read in the browser" link (``{{ web_url }}``, cgi/view.py) rendered the
  recipient's ``{{ manage_url }}`` and ``{{ unsubscribe_url }}``: whoever got
  the link forwarded could export, erase or unsubscribe for them. The copy
  shows the archive's neutral text in their place.

Through a real ``vykhukhol serve``; the link comes from the letter the sender wrote.
"""

from __future__ import annotations

import re

from support import webkit
from support.webkit import Browser

served = webkit.served  # the fixture: a real `vykhukhol serve`
LETTER = ("Hello {{ name }}.\nOnline: {{ web_url }}\nYours: {{ manage_url }}\n"
          "Leave: {{ unsubscribe_url }}\n")


def test_a_line_break_in_an_archive_name_is_a_404(site, served):
    site.service("news")
    site.ok("archive", "on", "news")
    browser = Browser(served.port)
    for path in ("/archive/news%0d%0aX-Injected:%20yes", "/archive/news%0aX-Injected:%20yes",
                 "/archive/..%2f..", "/archive/News%20"):
        answer = browser.get(path)
        assert answer.status == 404, (path, answer)
        assert "x-injected" not in answer.headers and "location" not in answer.headers
    assert browser.get("/archive/news").status in (301, 302, 303, 307, 308)
    assert "Traceback" not in served.stderr()


def test_a_web_copy_carries_no_personal_link_that_acts(site, served):
    site.service("news", letters=[("Lesson 1", "0s", LETTER)])
    site.subscriber("news", "anna@example.org", name="Anna")
    site.run_at()
    [letter] = [m for m in site.outbox() if "anna@example.org" in str(m["To"])]
    text = letter.get_body(("plain",)).get_content()
    web = re.search(r"https?://\S+/cgi/view\.py\?\S+", text).group(0)
    acting = re.findall(r"https?://\S+/cgi/(?:manage|unsubscribe)\.py\?\S+", text)
    assert len(set(acting)) == 2, text  # the letter's own two, and again in its footer
    page = Browser(served.port).get(web[web.index("/cgi/"):])
    assert page.status == 200 and "Anna" in page.body, page
    tokens = {re.search(r"t=([0-9a-f]+)", link).group(1) for link in acting}
    for token in tokens:
        assert token not in page.body, page.body
    assert "manage.py" not in page.body and "unsubscribe.py" not in page.body, page.body
    assert "personal link" in page.body
