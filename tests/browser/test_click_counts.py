"""Counted clicks in the admin (docs/using/clicks.md#clicks), in headless Chromium: the
owner ticks "Count clicks" on the newsletter form, a reader follows the
letter's link in the browser (cgi/go.py's 302, to a page on loopback), and
the Newsletters page's History shows the click, per newsletter and per link.
"""

from __future__ import annotations

import re

from support.adminkit import newest_letter, text_of
from vykhukhol import newsletters

GO = re.compile(r"http://127\.0\.0\.1:\d+/cgi/go\.py\?\S+")


def test_an_owner_counts_a_newsletters_clicks_and_sees_them_per_link(site, server, browser) -> None:
    site.service("news")
    site.subscriber("news", "ann@example.net", "Ann")
    # The link's target is this server under another name, so following it stays on loopback.
    target = f"http://localhost:{server.port}/cgi/subscribe.py?service=news"
    b = browser
    b.log_in()
    b.open("/admin/newsletters/new")
    b.find("input[name='svc_news']").click()
    b.fill("#subject", "Spring")
    b.fill("#text", f"Hello {{{{ name }}}}, the form: {target}\n")
    assert not b.find("#clicks").is_selected()  # off unless the owner turns it on
    b.find("#clicks").click()
    b.press("#create-newsletter")
    [job] = newsletters.list_jobs(site.data)
    assert job.values.get("clicks") == "yes"

    site.cli("cron")
    (link,) = GO.findall(text_of(newest_letter(site, "ann@example.net")))
    b.open(link[len(server.url):])
    assert b.driver.current_url == target
    assert b.find("input[name='email']")  # the page the letter linked, reached through go.py

    b.open("/admin/newsletters")
    row = b.find(f"#history-{job.name}")
    assert row.find_elements("css selector", "td")[-1].text == "1"
    assert b.text(f"#links-{job.name}") == f"Clicks per link: {target} 1"
    b.screenshot("newsletters-clicks-en")
