"""The admin's «Доставляемость» / Deliverability page in Chromium
(docs/using/admin.md#admin-deliverability): reached from the menu, the doctor's findings against a DNS server
of the test's own on loopback (good SPF and MX, a wrong DKIM key, no DMARC),
each wrong one with its fix, the letters to the big providers below, and
the page in Russian; screenshots in tests/artifacts/."""

from __future__ import annotations

import re
from datetime import date

from support.dnskit import DnsServer  # noqa: E402
from vykhukhol.watch import receivers  # noqa: E402


def test_the_deliverability_page_shows_each_check_and_its_fix_in_both_languages(site, server, browser):
    site.ok("dkim", "keygen", "--domain", "example.org")
    zone = {("example.org", "TXT"): ['"v=spf1 ip4:198.51.100.7 -all"'],
            ("example.org", "MX"): ["10 mx.example.org."],
            ("vykhukhol._domainkey.example.org", "TXT"): ['"v=DKIM1; k=rsa; p=AAAA"'],
            ("mx.example.org", "A"): ["192.0.2.10"]}
    receivers.note_run(site.data.state, date.today().isoformat(), {"gmail": 4200, "yandex": 17})
    with DnsServer(zone) as dns:
        site.set(mail__from_email="list@example.org", mail__dkim_domain="example.org",
                 mail__transport="smtp", mail__relay_ip="198.51.100.7", dns__resolver=dns.address)
        site.service("news")
        b = browser
        b.log_in()
        b.press(b.link("Deliverability"))
        assert b.path == "/admin/deliverability"
        rows = {r.find_element("css selector", "td").text: r for r in b.all("#findings tr")[1:]}
        assert list(rows) == ["SPF", "DKIM", "DMARC", "MX", "site_url", "one-click"]
        verdict = {check: row.get_attribute("class") for check, row in rows.items()}
        assert verdict == {"SPF": "ok", "DKIM": "wrong", "DMARC": "wrong", "MX": "ok",
                           "site_url": "wrong", "one-click": "wrong"}  # the test server is http
        assert "another key" in rows["DKIM"].text and "Publish this TXT record instead" in rows["DKIM"].text
        assert "example.org has no DMARC record" in rows["DMARC"].text
        assert "permits the relay's address 198.51.100.7" in rows["SPF"].text
        tally = b.text("#tally")
        assert "4200" in tally and "17" in tally and "Gmail" in tally
        b.screenshot("deliverability-en")

        site.set(language="ru")
        b.open("/admin/deliverability")
        assert b.text("h1") == "Доставляемость"
        assert "ошибка" in b.text("#findings") and "в порядке" in b.text("#findings")
        assert "У example.org нет записи DMARC" in b.text("#findings")
        assert re.search("Яндекс", b.text("#tally"))
        b.screenshot("deliverability-ru")
    assert ("_dmarc.example.org", "TXT") in dns.questions
