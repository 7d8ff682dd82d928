"""The sending half of deliverability (docs/deliverability/index.md#deliverability):
each letter's tagged envelope, its DKIM signature, and one-click only where
RFC 8058 allows it.

Real parts: aiosmtpd on loopback records the envelope sender and the bytes it
received; a sendmail stand-in (a script) records its argv and stdin; the
outbox is read back from disk. Signatures are checked by dkimpy's own
``verify`` with a DNS function that answers the TXT record `vykhukhol dkim
keygen` printed — the verifier knows nothing but what a receiver would.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import stat
import sys
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlencode

import dkim
import pytest

from support.servetools import call, environ, log_in
from vykhukhol import cli, newsletters
from vykhukhol import returntag as tag
from vykhukhol import settings as settings_mod
from vykhukhol.mail import compose
from vykhukhol.web import admin as admin_mod

SERVICE_FROM = "news@example.org"
CYRILLIC = "Здравствуйте, {{ name }}!\n\nЭто урок о выхухоли. {{ unsubscribe_url }}\n"


# --- helpers -----------------------------------------------------------------

def keygen(site, domain: str = "example.org", selector: str = "vykhukhol") -> dict[bytes, bytes]:
    """Run `dkim keygen`; the DNS answers a verifier gets, parsed from its output."""
    out = site.ok("dkim", "keygen", "--domain", domain, "--selector", selector)
    [line] = [x for x in out.splitlines() if "._domainkey." in x]
    name, rest = line.split(" IN TXT ")
    strings = re.findall(r'"([^"]*)"', rest)
    assert strings and all(len(s) <= 255 for s in strings), line
    return {name.encode(): "".join(strings).encode()}


def cli_call(root: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--data", str(root), *args])
    return code, out.getvalue(), err.getvalue()


def verifies(data: bytes, records: dict[bytes, bytes]) -> bool:
    def dnsfunc(name: bytes, timeout: int = 5) -> bytes | None:
        return records.get(name)

    return bool(dkim.verify(data, dnsfunc=dnsfunc))


def tampered(data: bytes) -> bytes:
    """The letter with one character of its body changed."""
    head, _, body = data.partition(b"\r\n\r\n") if b"\r\n\r\n" in data else data.partition(b"\n\n")
    sep = b"\r\n\r\n" if b"\r\n\r\n" in data else b"\n\n"
    assert body, data
    flipped = body[:5] + (b"X" if body[5:6] != b"X" else b"Y") + body[6:]
    return head + sep + flipped


def whose(site, address: str) -> tuple[str, str, str]:
    """(kind, name, recipient) a tagged envelope sender belongs to, found as
    the bounce reader would: from the tag, the services' and jobs' names and
    their addresses alone."""
    split = tag.split_address(address, "+")
    assert split is not None, f"{address} is not a tagged bounce address"
    base, found = split
    assert base == SERVICE_FROM
    secret = site.settings().secret
    if found.kind == tag.SERVICE:
        names = found.names([s.name for s in compose_services(site)])
        candidates = {n: list(site.subscribers(n)) for n in names}
    else:
        names = found.names([job.name for job in newsletters.list_jobs(site.data)] + JOBS)
        candidates = {n: ALL_ADDRESSES for n in names}
    hits = [(found.kind, n, a) for n, addresses in candidates.items() for a in addresses
            if found.is_for(secret, n, a)]
    assert len(hits) == 1, (address, hits)
    return hits[0]


def compose_services(site):
    from vykhukhol import services as svc

    return svc.load_services(site.data)


JOBS: list[str] = []  # newsletter jobs made by a test (a finished job's files are deleted)
ALL_ADDRESSES = ["ann@example.com", "bob@example.com", "carl@example.com", "dina@example.com"]


@pytest.fixture(autouse=True)
def _no_jobs_between_tests():
    JOBS.clear()
    yield
    JOBS.clear()


def news(site, letters=None, **fields):
    return site.service("news", letters=letters or [("Lesson 1 for {{ name }}", "0s",
                                                     "Hello {{ name }}. {{ unsubscribe_url }}")],
                        from_email=SERVICE_FROM, **fields)


# --- envelope ----------------------------------------------------------------

def test_every_list_letter_leaves_from_its_own_tagged_bounce_address(site, smtp_server):
    """Series letter, reminder, confirmation request and newsletter letter each
    leave from news+<tag>@example.org, and the tag alone leads back to the
    recipient and the service or job; the admin's report leaves untagged."""
    site.use_smtp(smtp_server.port)  # mail.from_email list@example.org: the admin's letters
    news(site)
    site.subscriber("news", "ann@example.com", name="Ann")
    site.subscriber("news", "bob@example.com", state="new", ago=4 * 86400)  # a reminder is due
    job = site.ok("newsletter", "create", "--services", "news", "--subject", "Hi",
                  "--body", "News for {{ name }}").split()[-1]
    JOBS.append(job)
    site.run_at()
    site.subscribe("news", "carl@example.com")  # the confirmation request, sent at once

    got = {}
    for letter in smtp_server.handler.received:
        [rcpt] = letter.rcpt_tos
        if rcpt == "admin@example.org":
            assert letter.mail_from == "list@example.org", "the admin's report is not tagged"
            continue
        kind, name, address = whose(site, letter.mail_from)
        assert address == rcpt
        assert re.fullmatch(r"news\+[sn]1[a-z2-7]{24}@example\.org", letter.mail_from)
        assert len(letter.mail_from.split("@")[0]) <= 64
        got.setdefault((kind, name, address), []).append(str(letter.message["Subject"]))
    assert got == {
        (tag.SERVICE, "news", "ann@example.com"): ["Lesson 1 for Ann"],
        (tag.NEWSLETTER, job, "ann@example.com"): ["Hi"],
        (tag.SERVICE, "news", "bob@example.com"): [got[(tag.SERVICE, "news", "bob@example.com")][0]],
        (tag.SERVICE, "news", "carl@example.com"): [got[(tag.SERVICE, "news", "carl@example.com")][0]],
    }
    reports = [r for r in smtp_server.handler.received if r.rcpt_tos == ["admin@example.org"]]
    assert reports, "the newsletter's report to the admin was expected in this run"
    # The unsubscribe mailto: is the letter's own envelope sender.
    lesson = next(r for r in smtp_server.handler.received if r.message["Subject"] == "Lesson 1 for Ann")
    assert f"<mailto:{lesson.mail_from}?subject=unsubscribe>" in lesson.message["List-Unsubscribe"]


def test_a_forged_or_altered_tag_matches_nobody(site, smtp_server):
    site.use_smtp(smtp_server.port)
    news(site)
    site.subscriber("news", "ann@example.com")
    site.run_at()
    [letter] = smtp_server.handler.received
    secret = site.settings().secret
    local, domain = letter.mail_from.split("@")
    base, real = local.split("+")
    assert real and whose(site, letter.mail_from)[2] == "ann@example.com"
    for i in range(2, len(real)):  # every character of the tag's body, changed
        other = "a" if real[i] != "a" else "b"
        forged = tag.split_address(f"{base}+{real[:i]}{other}{real[i + 1:]}@{domain}", "+")
        if forged is None:
            continue
        # As the reader does: the tag's name id picks the candidates, the MAC the address.
        assert not [(n, a) for n in forged[1].names(["news", "other"]) for a in ALL_ADDRESSES
                    if forged[1].is_for(secret, n, a)], (i, real)
    # A tag made without the secret, for an address that is subscribed.
    made = tag.make(b"guessed secret", tag.SERVICE, "news", "ann@example.com")
    assert not tag.parse(made).is_for(secret, "news", "ann@example.com")


def test_the_sendmail_transport_gets_the_tagged_envelope_and_signed_bytes(site, tmp_path):
    records = keygen(site)
    script = tmp_path / "sendmail"
    script.write_text(f"#!{sys.executable}\n"
                      "import sys, pathlib\n"
                      f"out = pathlib.Path({str(tmp_path)!r})\n"
                      "n = len(list(out.glob('argv-*')))\n"
                      "(out / f'argv-{n}').write_text('\\n'.join(sys.argv[1:]))\n"
                      "(out / f'stdin-{n}').write_bytes(sys.stdin.buffer.read())\n")
    script.chmod(0o755)
    site.set(mail__transport="sendmail", mail__sendmail_path=str(script))
    news(site, letters=[("Урок 1", "0s", CYRILLIC)])
    site.subscriber("news", "ann@example.com", name="Анна")
    site.run_at()
    argv = (tmp_path / "argv-0").read_text().split("\n")
    assert argv[:2] == ["-i", "-f"] and argv[3:] == ["--", "ann@example.com"]
    assert whose(site, argv[2]) == (tag.SERVICE, "news", "ann@example.com")
    letter = (tmp_path / "stdin-0").read_bytes()
    assert b"\r\n" not in letter, "sendmail wants Unix line ends"
    assert letter.startswith(b"DKIM-Signature: ")
    assert verifies(letter, records)
    assert not verifies(tampered(letter), records)


# --- DKIM ----------------------------------------------------------------------

def test_plain_html_and_cyrillic_letters_verify_over_smtp_and_a_changed_body_does_not(
        site, smtp_server):
    records = keygen(site)
    site.use_smtp(smtp_server.port)
    site.service("plain", letters=[("Lesson", "0s", "Hello {{ name }}. {{ unsubscribe_url }}")],
                 from_email=SERVICE_FROM)
    site.service("cyr", letters=[("Урок — первый", "0s", CYRILLIC)], from_email=SERVICE_FROM)
    html = site.service("html", from_email=SERVICE_FROM)
    from vykhukhol import services as svc

    svc.add_letter(html, "HTML lesson", "0s", "Text part {{ unsubscribe_url }}",
                   "<p>Привет, <b>{{ name }}</b>!</p>")
    for name in ("plain", "cyr", "html"):
        site.subscriber(name, f"{name}@example.com", name="Иван Петров")
    for _ in range(3):
        if len(smtp_server.handler.received) < 3:
            site.run_at()
    received = {r.rcpt_tos[0]: r for r in smtp_server.handler.received}
    assert set(received) == {"plain@example.com", "cyr@example.com", "html@example.com"}
    assert received["html@example.com"].message.get_content_type() == "multipart/alternative"
    for letter in received.values():
        assert verifies(letter.data, records), letter.data[:600]
        assert not verifies(tampered(letter.data), records)
        signature = dkim.util.parse_tag_value(letter.message["DKIM-Signature"].encode())
        assert signature[b"a"] == b"rsa-sha256" and signature[b"c"] == b"relaxed/relaxed"
        assert signature[b"d"] == b"example.org" and signature[b"s"] == b"vykhukhol"
        # The signed headers in their order (docs/reference/transports.md#transports-dkim),
        # then From, Subject and the List-Unsubscribe pair once more (over-signed).
        top = b"content-transfer-encoding:" if letter.message.get_content_type() == \
            "text/plain" else b""
        assert b"".join(signature[b"h"].lower().split()) == (
            b"from:to:subject:date:message-id:mime-version:content-type:" + top +
            b"list-id:list-unsubscribe:list-unsubscribe-post:"
            b"from:subject:list-unsubscribe:list-unsubscribe-post")
        for added in (b"From: Bank <bank@example.com>", b"Subject: Urgent",
                      b"List-Unsubscribe: <https://evil.example/u>",
                      b"List-Unsubscribe-Post: List-Unsubscribe=One-Click"):
            head, _, body = letter.data.partition(b"\r\n\r\n")
            assert not verifies(head + b"\r\n" + added + b"\r\n\r\n" + body, records), added
    html_parts = list(received["html@example.com"].message.iter_parts())
    assert len(html_parts) == 2 and all("MIME-Version" not in part for part in html_parts)
    # The greeting names the host of site_url, never a bare address (docs/reference/transports.md#transports).
    assert {session.host_name for session in smtp_server.handler.sessions} == \
        {"lists.example.org"}


def test_outbox_letters_carry_the_envelope_on_top_and_verify(site):
    records = keygen(site)
    news(site, letters=[("Урок", "0s", CYRILLIC)])
    site.subscriber("news", "ann@example.com", name="Анна")
    site.run_at()
    [path] = site.data.outbox.glob("*.eml")
    data = path.read_bytes()
    first, _, rest = data.partition(b"\r\n")
    envelope = re.fullmatch(rb"Return-Path: <(\S+)>", first).group(1).decode()
    assert whose(site, envelope) == (tag.SERVICE, "news", "ann@example.com")
    assert rest.startswith(b"DKIM-Signature: ")
    assert verifies(data, records)
    assert not verifies(tampered(data), records)


def test_a_redirected_letter_keeps_its_envelope_and_is_signed_after_the_redirect(
        site, smtp_server):
    records = keygen(site)
    site.use_smtp(smtp_server.port)
    site.set(mail__dev_redirect="tester@example.net")
    news(site)
    site.subscriber("news", "ann@example.com")
    site.run_at()
    [letter] = smtp_server.handler.received
    assert letter.rcpt_tos == ["tester@example.net"]
    assert letter.message["To"] == "tester@example.net"
    assert whose(site, letter.mail_from) == (tag.SERVICE, "news", "ann@example.com")
    assert verifies(letter.data, records)


def test_keygen_writes_a_private_key_and_never_replaces_one(site):
    records = keygen(site, selector="mail2026")
    key = site.root / "dkim" / "example.org.mail2026.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert key.read_bytes().startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    assert list(records) == [b"mail2026._domainkey.example.org."]
    assert records[b"mail2026._domainkey.example.org."].startswith(b"v=DKIM1; k=rsa; p=MII")
    settings = site.settings()
    assert (settings["mail.dkim_domain"], settings["mail.dkim_selector"]) == ("example.org", "mail2026")
    before = key.read_bytes()
    code, _, err = site.call("dkim", "keygen", "--domain", "example.org", "--selector", "mail2026")
    assert code == 1 and "exists already" in err
    assert key.read_bytes() == before
    code, _, err = site.call("dkim", "keygen", "--domain", "not a domain")
    assert code == 1 and "mail.dkim_domain" in err
    assert "dkim: signing as mail2026._domainkey.example.org" in site.ok("status")


def test_a_broken_key_is_refused_at_settings_set_named_in_status_and_sends_nothing(
        site, smtp_server):
    site.use_smtp(smtp_server.port)
    code, _, err = site.call("settings", "set", "mail.dkim_domain", "example.org")
    assert code == 1 and "does not exist" in err and "dkim keygen" in err
    assert site.settings()["mail.dkim_domain"] == ""

    keygen(site)
    key = site.root / "dkim" / "example.org.vykhukhol.key"
    code, _, err = site.call("settings", "set", "mail.dkim_selector", "other")
    assert code == 1 and "example.org.other.key does not exist" in err
    assert site.settings()["mail.dkim_selector"] == "vykhukhol"

    key.write_text("-----BEGIN RSA PRIVATE KEY-----\nbroken\n-----END RSA PRIVATE KEY-----\n")
    news(site)
    site.subscriber("news", "ann@example.com")
    report = site.run_at()
    assert smtp_server.handler.received == [], "no letter may leave unsigned"
    assert site.subscribers("news")["ann@example.com"].sent == 0
    assert "temporary failure" in report.splitlines()[-1], report
    assert re.search(r"news: the DKIM key \S+ is not an RSA private key.*nothing is sent unsigned",
                     site.log()), site.log()
    status = site.ok("status")
    assert "dkim problem: DKIM: the DKIM key" in status and "not an RSA private key" in status

    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, _ = log_in(app)
    code, _, page, _ = call(app, environ("GET", "/", "", b"", "", "missing", script="/admin",
                                         HTTP_COOKIE=cookie))
    assert code == 200
    assert "so no letter is sent" in page or "ни одно письмо не отправляется" in page, page


# --- one-click -----------------------------------------------------------------

def test_one_click_goes_only_with_an_https_site_url(site):
    news(site)
    site.subscriber("news", "ann@example.com")
    site.run_at()
    [secure] = site.outbox()
    assert secure["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert re.fullmatch(r"<https://lists\.example\.org/\S+>, <mailto:news\+s1\w+@example\.org"
                        r"\?subject=unsubscribe>", secure["List-Unsubscribe"])
    for path in site.data.outbox.glob("*.eml"):
        path.unlink()

    code, _, err = site.call("settings", "set", "site_url", "http://lists.example.org")
    assert code == 0 and "not https" in err
    site.subscriber("news", "carl@example.com")
    site.run_at()
    [plain] = site.outbox()
    assert "List-Unsubscribe-Post" not in plain
    assert str(plain["List-Unsubscribe"]).startswith("<http://lists.example.org/")
    assert "mailto:news+s1" in plain["List-Unsubscribe"]


def test_init_settings_set_and_status_warn_while_site_url_is_plain_http(tmp_path):
    cgi = tmp_path / "cgi"
    cgi.mkdir()
    site = SimpleNamespace(call=lambda *args: cli_call(tmp_path / "data", *args))
    code, _, err = site.call("init", "--site-url", "http://example.org", "--cgi-dir", str(cgi))
    assert code == 0 and "site_url http://example.org is not https" in err
    code, out, _ = site.call("status", "--cgi-dir", str(cgi))
    assert code == 0 and "warning: site_url is not https" in out
    code, _, err = site.call("settings", "set", "site_url", "https://example.org")
    assert code == 0 and err == ""
    code, out, _ = site.call("status", "--cgi-dir", str(cgi))
    assert code == 0 and "not https" not in out
    code, _, err = site.call("settings", "set", "site_url", "http://example.org")
    assert code == 0 and "not https" in err


def test_bounce_address_setting_moves_the_base_and_an_empty_separator_turns_tags_off(site):
    news(site)
    settings = site.settings()
    service = compose_services(site)[0]
    tagged = compose.bounce_address(service, settings, tag.SERVICE, "news", "ann@example.com")
    assert tagged.startswith("news+s1") and tagged.endswith("@example.org")
    site.set(mail__bounce_address="bounces@example.org")
    moved = compose.bounce_address(service, site.settings(), tag.SERVICE, "news", "ann@example.com")
    assert moved == tagged.replace("news+", "bounces+")
    site.set(mail__verp_separator="")
    assert compose.bounce_address(service, site.settings(), tag.SERVICE, "news",
                                  "ann@example.com") == "bounces@example.org"


def test_the_key_file_setting_is_read_relative_to_the_data_directory(site):
    records = keygen(site)
    os.rename(site.root / "dkim" / "example.org.vykhukhol.key", site.root / "elsewhere.key")
    code, _, err = site.call("settings", "set", "mail.dkim_key_file", "elsewhere.key")
    assert code == 0, err
    news(site)
    site.subscriber("news", "ann@example.com")
    site.run_at()
    [path] = site.data.outbox.glob("*.eml")
    assert verifies(Path(path).read_bytes(), records)


def test_the_admin_settings_page_refuses_a_dkim_domain_without_its_key(site):
    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, csrf = log_in(app)
    fields = {key: site.settings().raw.get(key, spec.default)
              for key, spec in settings_mod.KEYS.items() if key in admin_mod.SETTINGS_SHOWN}
    fields.update({"mail.dkim_domain": "example.org", "csrf": csrf})
    body = urlencode(fields).encode()
    before = site.data.settings.read_bytes()
    code, _, page, _ = call(app, environ("POST", "/settings", "", body,
                                         "application/x-www-form-urlencoded", str(len(body)),
                                         script="/admin", HTTP_COOKIE=cookie))
    assert code == 400 and "does not exist" in page and "dkim keygen" in page, page[-2000:]
    # the form again, as typed, with the error beside it
    assert re.search(r'name="mail\.dkim_domain"[^>]*value="example\.org"', page), page[-3000:]
    assert site.data.settings.read_bytes() == before


def test_status_names_a_service_whose_from_domain_the_signature_does_not_align_with(site):
    keygen(site)
    news(site)  # news@example.org: aligned
    site.service("sub", from_email="list@mail.example.org")  # a subdomain: aligned (relaxed)
    site.service("elsewhere", from_email="hello@other.net")
    status = site.ok("status")
    notes = [line for line in status.splitlines() if line.startswith("dkim note:")]
    assert len(notes) == 1 and "service elsewhere sends from other.net" in notes[0], status

    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, _ = log_in(app)
    code, _, page, _ = call(app, environ("GET", "/", "", b"", "", "missing", script="/admin",
                                         HTTP_COOKIE=cookie))
    assert code == 200 and "other.net" in page
    assert ("does not align" in page) or ("не согласована" in page)
