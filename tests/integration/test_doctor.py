"""`vykhukhol doctor` (docs/deliverability/doctor.md#doctor) against a DNS server of the test's own
on loopback (tests/support/dnskit.py), serving good, missing and wrong records for
each check; a resolver that never answers gives "unknown" within its timeout.
No test resolves a public name: dns.resolver points every question here."""

from __future__ import annotations

import json
import re
import time

import pytest

from support.dnskit import DnsServer, SilentResolver  # noqa: E402
from vykhukhol.mail import doctor  # noqa: E402
from vykhukhol.mail.doctor import checks, spf  # noqa: E402
from vykhukhol.mail.doctor.lookup import Lookup  # noqa: E402

RELAY = "198.51.100.7"


def keygen(site, domain: str = "example.org") -> list[str]:
    """A DKIM key made by the CLI; the TXT record's text as the zone holds it."""
    out = site.ok("dkim", "keygen", "--domain", domain)
    record = next(line for line in out.splitlines() if "._domainkey." in line)
    return [" ".join(re.findall(r'"[^"]*"', record))]


def good_zone(dkim_txt: list[str]) -> dict:
    return {
        ("example.org", "TXT"): ['"v=spf1 ip4:192.0.2.0/24 include:_spf.host.example.net ~all"'],
        ("_spf.host.example.net", "TXT"): [f'"v=spf1 ip4:{RELAY} -all"'],
        ("vykhukhol._domainkey.example.org", "TXT"): dkim_txt,
        ("_dmarc.example.org", "TXT"): ['"v=DMARC1; p=quarantine; rua=mailto:dmarc@example.org"'],
        ("example.org", "MX"): ["10 mx.example.org."],
        ("mx.example.org", "A"): ["192.0.2.10"],
    }


def configured(site, resolver: str) -> None:
    site.set(mail__from_email="list@example.org", mail__dkim_domain="example.org",
             mail__transport="smtp", mail__relay_ip=RELAY, dns__resolver=resolver)
    site.service("news")


def by_check(findings) -> dict[str, doctor.Finding]:
    return {f.check: f for f in findings}


def test_good_records_are_ok_through_the_cli_in_english_and_json(site):
    dkim_txt = keygen(site)
    with DnsServer(good_zone(dkim_txt)) as server:
        configured(site, server.address)
        out = site.cli("doctor").stdout
        findings = json.loads(site.cli("doctor", "--json").stdout)
    assert [f["verdict"] for f in findings] == ["ok"] * 6, out
    assert [f["check"] for f in findings] == ["SPF", "DKIM", "DMARC", "MX", "site_url", "one-click"]
    assert "1 of 10 DNS look-ups" in out and f"permits the relay's address {RELAY}" in out
    assert "Policy p=quarantine; From aligns with the DKIM domain (example.org) and the envelope domain (example.org)" in out
    assert "Bounces to example.org arrive at mx.example.org" in out
    assert all(name.endswith(("example.org", "example.net")) for name, _ in server.questions)


def test_missing_records_are_wrong_each_with_its_fix_and_exit_1(site):
    keygen(site)
    # example.org exists (a record of a kind the doctor does not ask), without the records asked
    with DnsServer({("other.example", "A"): ["192.0.2.1"],
                    ("example.org", "NS"): ["ns.example.net."]}) as server:
        configured(site, server.address)
        result = site.cli("doctor", "--json", check=False)
    assert result.returncode == 1
    found = {f["check"]: f for f in json.loads(result.stdout)}
    for check in ("SPF", "DKIM", "DMARC", "MX"):
        assert found[check]["verdict"] == "wrong", found[check]
        assert found[check]["fix"]
    assert found["SPF"]["found"] == "example.org has no SPF record."
    assert found["DKIM"]["fix"].startswith("Publish this TXT record: vykhukhol._domainkey.example.org.")
    assert "_dmarc.example.org" in found["DMARC"]["fix"]
    assert "no MX record and no address" in found["MX"]["found"]


def test_wrong_records_are_named_in_russian_too(site):
    keygen(site)
    other_key = keygen(site, "other.example")  # a key Vykhukhol does not sign with
    zone = good_zone([other_key[0].replace("other.example", "example.org")])
    zone[("example.org", "TXT")] = ['"v=spf1 ip4:192.0.2.0/24 ~all"']  # the relay is left out
    zone[("_dmarc.example.org", "TXT")] = ['"v=DMARC1; p=maybe"']
    zone[("example.org", "MX")] = ["0 ."]
    with DnsServer(zone) as server:
        configured(site, server.address)
        findings = by_check(doctor.examine(site.data, site.settings()))
        assert findings["SPF"].verdict is doctor.Verdict.WRONG
        assert f"does not permit the relay's address {RELAY} (result: softfail)" in findings["SPF"].found
        assert findings["SPF"].fix == f"Add ip4:{RELAY} (or the relay's include) to the SPF record of example.org."
        assert "another key" in findings["DKIM"].found and findings["DKIM"].verdict is doctor.Verdict.WRONG
        assert findings["DMARC"].found == "The DMARC record at _dmarc.example.org has no valid policy (p=)."
        assert "null MX" in findings["MX"].found
        ru = by_check(doctor.examine(site.data, site.settings(), "ru"))
    assert ru["SPF"].verdict.label("ru") == "ошибка"
    for check in ("SPF", "DKIM", "DMARC", "MX"):
        assert re.search("[а-я]", ru[check].found) and re.search("[а-я]", ru[check].fix), ru[check]


def test_a_from_domain_the_signature_and_envelope_do_not_align_with_is_wrong(site):
    dkim_txt = keygen(site)
    zone = good_zone(dkim_txt)
    zone[("_dmarc.news.example.com", "TXT")] = ['"v=DMARC1; p=reject"']
    zone[("news.example.com", "TXT")] = ['"v=spf1 -all"']
    zone[("example.org", "TXT")] = [f'"v=spf1 ip4:{RELAY} -all"']
    with DnsServer(zone) as server:
        configured(site, server.address)
        site.set(mail__bounce_address="bounces@example.org")
        site.service("other", from_email="list@news.example.com")
        findings = doctor.examine(site.data, site.settings())
    dmarc = {f.subject: f for f in findings if f.check == "DMARC"}
    assert dmarc["example.org"].verdict is doctor.Verdict.OK
    assert dmarc["news.example.com"].verdict is doctor.Verdict.WRONG
    assert "neither the DKIM domain (example.org) nor the envelope domain (example.org)" \
        in dmarc["news.example.com"].found


def test_status_and_doctor_agree_that_a_sibling_signing_domain_aligns(site):
    # mail.example.org signs for news.example.org: one organisational domain,
    # so DMARC's relaxed alignment passes; the status pages once said it did not.
    dkim_txt = keygen(site, "mail.example.org")
    zone = {("_dmarc.example.org", "TXT"): ['"v=DMARC1; p=quarantine"'],
            ("_dmarc.example.com", "TXT"): ['"v=DMARC1; p=none"'],
            ("vykhukhol._domainkey.mail.example.org", "TXT"): dkim_txt}
    with DnsServer(zone) as server:
        site.set(mail__from_email="list@news.example.org", mail__dkim_domain="mail.example.org",
                 mail__bounce_address="bounces@example.net", dns__resolver=server.address)
        site.service("news")
        status = site.cli("status").stdout
        findings = json.loads(site.cli("doctor", "--json", check=False).stdout)
        site.set(mail__from_email="list@example.com")  # and a From of another domain
        status_other = site.cli("status").stdout
        findings_other = json.loads(site.cli("doctor", "--json", check=False).stdout)
    dmarc = next(f for f in findings if f["check"] == "DMARC")
    assert dmarc["verdict"] == "ok" and "aligns with the DKIM domain (mail.example.org)" in dmarc["found"]
    assert "dkim: signing as vykhukhol._domainkey.mail.example.org" in status
    assert "dkim note:" not in status and "does not align" not in status, status
    dmarc = next(f for f in findings_other if f["check"] == "DMARC")
    assert dmarc["verdict"] == "wrong" and "neither the DKIM domain (mail.example.org)" in dmarc["found"]
    assert "dkim note: service news sends from example.com" in status_other, status_other


def test_spf_syntax_several_records_and_too_many_lookups_are_permerrors():
    chain = {(f"h{i}.example.org", "TXT"): [f'"v=spf1 include:h{i + 1}.example.org -all"']
             for i in range(11)}
    chain[("h11.example.org", "TXT")] = ['"v=spf1 -all"']
    zone = {**chain,
            ("bad.example.org", "TXT"): ['"v=spf1 ip4:999.1.1.1 -all"'],
            ("two.example.org", "TXT"): ['"v=spf1 -all"', '"v=spf1 mx -all"'],
            ("hole.example.org", "TXT"): ['"v=spf1 include:nothing.example.org -all"']}
    with DnsServer(zone) as server:
        lookup = Lookup(server.address)
        for domain, kind in (("h0.example.org", "lookups"), ("bad.example.org", "syntax"),
                             ("two.example.org", "several"), ("hole.example.org", "include")):
            with pytest.raises(spf.SpfError) as caught:
                spf.read(lookup, domain)
            assert caught.value.kind == kind, domain
        assert spf.read(lookup, "h2.example.org").lookups == 9  # ten is still allowed


def test_a_resolver_that_never_answers_makes_every_dns_check_unknown_within_seconds(site):
    keygen(site)
    with SilentResolver() as silent:
        configured(site, silent.address)
        started = time.monotonic()
        result = site.cli("doctor", check=False)
        took = time.monotonic() - started
    assert result.returncode == 0  # unknown is not wrong: a monitor is not woken by a dead resolver
    lines = [line for line in result.stdout.splitlines() if not line.startswith(" ")]
    for check in ("SPF", "DKIM", "DMARC", "MX"):
        line = next(line for line in lines if line.split()[1] == check)
        assert line.startswith("unknown"), line
        assert f"{silent.address} did not answer within 3 s." in line
    assert took < 10, took  # one timeout for the whole examination, not one per record
    assert silent.heard >= 1


def test_dns_resolver_must_be_an_address_and_port(site):
    for bad in ("localhost", "127.0.0.1", "127.0.0.1:0", "8.8.8.8:99999", "a b:53"):
        code, _, err = site.call("settings", "set", "dns.resolver", bad)
        assert code == 1 and "dns.resolver" in err and "Traceback" not in err, (bad, err)
    code, _, err = site.call("settings", "set", "mail.relay_ip", "not-an-ip")
    assert code == 1 and "mail.relay_ip" in err
    site.ok("settings", "set", "dns.resolver", "127.0.0.1:5353")
    assert site.settings()["dns.resolver"] == "127.0.0.1:5353"


def test_the_relay_is_found_through_a_mx_and_redirect_and_plus_all_is_a_warning(site):
    zone = {("a.example.org", "TXT"): ['"v=spf1 a:out.example.org/28 -all"'],
            ("out.example.org", "A"): ["198.51.100.1"],
            ("m.example.org", "TXT"): ['"v=spf1 mx -all"'],
            ("m.example.org", "MX"): ["10 out.example.org."],
            ("r.example.org", "TXT"): ['"v=spf1 redirect=a.example.org"'],
            ("far.example.org", "TXT"): ['"v=spf1 ip6:2001:db8::/32 ?all"'],
            ("open.example.org", "TXT"): ['"v=spf1 +all"']}
    with DnsServer(zone) as server:
        lookup = Lookup(server.address)
        assert spf.read(lookup, "a.example.org", RELAY).relay == "pass"  # 198.51.100.7 in /28
        assert spf.read(lookup, "m.example.org", RELAY).relay == "fail"  # /32 of the MX host
        assert spf.read(lookup, "m.example.org", "198.51.100.1").relay == "pass"
        assert spf.read(lookup, "r.example.org", RELAY) == ("v=spf1 redirect=a.example.org", 2, "pass")
        assert spf.read(lookup, "far.example.org", RELAY).relay == "neutral"
        site.set(mail__transport="smtp", mail__relay_ip=RELAY, dns__resolver=server.address)
        finding = checks.spf(lookup, "open.example.org", site.settings(),
                                                lambda text, **values: text.format(**values))
    assert finding.verdict is doctor.Verdict.WARNING and "+all" in finding.found


def test_a_from_domain_that_does_not_exist_is_named_so_not_as_missing_records(site):
    keygen(site)
    with DnsServer({("other.example", "A"): ["192.0.2.1"]}) as server:  # NXDOMAIN for example.org
        configured(site, server.address)
        result = site.cli("doctor", "--json", check=False)
        russian = by_check(doctor.examine(site.data, site.settings(), "ru"))
    assert result.returncode == 1
    found = {f["check"]: f for f in json.loads(result.stdout)}
    for check in ("SPF", "DMARC", "MX"):
        assert found[check]["found"] == \
            "The domain example.org does not exist: the DNS knows no such name.", found[check]
        assert "mail.from_email" in found[check]["fix"]
    assert russian["SPF"].found == "Домена example.org не существует: DNS не знает такого имени."


def test_an_empty_from_email_is_asked_for_before_any_dns_record(site):
    """A fresh local site (site_url on 127.0.0.1, no mail.from_email): the
    doctor asks for the From address first and proposes no record for
    127.0.0.1 or localhost; the demo's From is never an address literal."""
    from vykhukhol.mail import compose
    from vykhukhol.services import demo

    site.set(site_url="http://127.0.0.1:8080", mail__from_email="")
    service = demo.create(site.data, "en")
    assert compose.sender_of(service, site.settings())[1] == "vykhukhol@localhost"
    with DnsServer({("other.example", "A"): ["192.0.2.1"]}) as server:
        site.set(dns__resolver=server.address)
        result = site.cli("doctor", "--json", check=False)
        findings = doctor.examine(site.data, site.settings(), "ru")
    assert result.returncode == 1
    found = json.loads(result.stdout)
    assert found[0]["check"] == "From" and found[0]["subject"] == "mail.from_email", found
    assert "vykhukhol settings set mail.from_email" in found[0]["fix"]
    assert [f["check"] for f in found] == ["From", "DKIM", "site_url", "one-click"]
    assert not any("127.0.0.1" in f["fix"] + f["found"] or "localhost" in f["fix"] for f in found)
    assert server.questions == []
    assert findings[0].found.startswith("mail.from_email не задан")


def test_the_deliverability_page_asks_for_mail_from_email_first(site):
    import html

    from support.servetools import call, environ, log_in
    from vykhukhol.web import admin as admin_mod

    site.set(site_url="http://127.0.0.1:8080", mail__from_email="", language="ru")
    site.service("news")
    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, _ = log_in(app)
    status, _, page, _ = call(app, environ("GET", "/deliverability", "", b"", "", "missing",
                                           script="/admin", HTTP_COOKIE=cookie))
    assert status == 200, page
    table = html.unescape(page.split('id="findings"')[1].split("</table>")[0])
    rows = table.split("<tr")[2:]
    assert "<code>mail.from_email</code>" in rows[0] and "mail.from_email не задан" in rows[0]
    # no record proposed for the site's address: only site_url's own row names it
    assert [row for row in rows if "127.0.0.1" in row] == [row for row in rows if ">site_url<" in row]
