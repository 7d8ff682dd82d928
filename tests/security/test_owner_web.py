"""The owner's web holes: site_url that carries script into the form
snippet, and https behind a TLS proxy.
Everything through a real ``vykhukhol serve``, the CLI or a CGI process.
"""

from __future__ import annotations

import html
import re

from support import webkit
from support.webkit import Browser, run_cgi

served = webkit.served  # the fixture: a real `vykhukhol serve`

HOSTILE_URL = 'https://lists.example.org/"onmouseover="alert(document.domain)"x="'


def _snippet(browser: Browser, service: str) -> str:
    """The form snippet as the owner copies it (the textarea's text)."""
    page = browser.get(f"/admin/services/{service}")
    assert page.status == 200, page
    found = re.search(r'<textarea readonly id="snippet">\s*(.*?)</textarea>', page.body, re.S)
    assert found, page
    return html.unescape(found.group(1))


# --- item 10: site_url is a URL or refused; the snippet is escaped ----------------

def test_settings_set_refuses_a_site_url_with_quotes_and_keeps_the_old_one(site):
    before = site.settings()["site_url"]
    code, out, err = site.call("settings", "set", "site_url", HOSTILE_URL)
    assert code == 1 and "site_url" in err and "quotes" in err, (code, out, err)
    assert site.settings()["site_url"] == before


def test_a_hand_edited_site_url_with_an_attribute_does_not_reach_the_snippet(site, served):
    site.service("news")
    settings_ini = site.data.settings
    text = settings_ini.read_text()
    # What an owner's FTP edit does: nothing checks it before it is read.
    settings_ini.write_text(re.sub(r"(?m)^site_url = .*$", f"site_url = {HOSTILE_URL}", text))
    browser = Browser(served.port)
    assert browser.log_in().status == 303
    snippet = _snippet(browser, "news")
    assert "onmouseover" not in snippet, snippet
    action = re.search(r'<form method="post" action="([^"]*)">', snippet)
    assert action and action.group(1).endswith("/cgi/subscribe.py"), snippet
    assert snippet.count('"') % 2 == 0 and "alert(" not in snippet, snippet


# --- item 14: https behind a trusted TLS proxy ------------------------------------

def _login_cookie(browser: Browser, **headers: str) -> str:
    answer = browser.log_in(headers=headers)
    assert answer.status == 303, answer
    return next(c for c in answer.cookies if c.startswith("vykhukhol_session="))


def test_a_trusted_proxys_x_forwarded_proto_makes_the_session_cookie_secure(site, served):
    site.set(site_url="https://lists.example.org", trusted_proxies="127.0.0.1")
    cookie = _login_cookie(Browser(served.port), **{"X-Forwarded-Proto": "https"})
    assert "secure" in cookie.lower(), cookie
    answer = Browser(served.port).get("/admin/login", headers={"X-Forwarded-Proto": "https"})
    assert answer.headers.get("strict-transport-security", "").startswith("max-age="), answer.headers


def test_x_forwarded_proto_from_anyone_else_changes_nothing(site, served):
    """Not a trusted proxy (none listed, or another address): the header is a
    client's word, so the cookie stays as plain http has it and no HSTS."""
    for proxies in ("", "10.0.0.1"):
        site.set(site_url="https://lists.example.org", trusted_proxies=proxies)
        cookie = _login_cookie(Browser(served.port), **{"X-Forwarded-Proto": "https"})
        assert "secure" not in cookie.lower(), (proxies, cookie)
        answer = Browser(served.port).get("/admin/login", headers={"X-Forwarded-Proto": "https"})
        assert "strict-transport-security" not in answer.headers, (proxies, answer.headers)


def test_hsts_only_when_site_url_is_https_and_never_over_plain_http(site, served):
    site.service("news")
    site.set(trusted_proxies="127.0.0.1", site_url="http://lists.example.org")
    over_tls = {"X-Forwarded-Proto": "https"}
    page = Browser(served.port).get("/cgi/subscribe.py?service=news", headers=over_tls)
    assert page.status == 200 and "strict-transport-security" not in page.headers
    site.set(site_url="https://lists.example.org")
    page = Browser(served.port).get("/cgi/subscribe.py?service=news", headers=over_tls)
    assert page.headers.get("strict-transport-security") == "max-age=31536000", page.headers
    plain = Browser(served.port).get("/cgi/subscribe.py?service=news")
    assert "strict-transport-security" not in plain.headers, plain.headers


def test_a_cgi_page_under_apaches_https_sends_hsts(site):
    site.service("news")
    site.set(site_url="https://lists.example.org")
    page = run_cgi(site, "cgi/subscribe.py", query="service=news", HTTPS="on")
    assert page.status == 200 and page.headers.get("strict-transport-security") == "max-age=31536000"
    page = run_cgi(site, "cgi/subscribe.py", query="service=news")
    assert "strict-transport-security" not in page.headers


# --- item 11: the admin import: a clear error, and caps a real list fits in -------

def _upload(browser: Browser, service: str, content: bytes) -> webkit.Answer:
    csrf = browser.csrf(f"/admin/services/{service}/subscribers")
    boundary = "----vykhukhol-test-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{csrf}\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"list.csv\"\r\n"
            "Content-Type: text/csv\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()
    return browser.request("POST", f"/admin/services/{service}/import", body,
                           headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})


def _logged_in(site, served) -> Browser:
    site.service("news")
    browser = Browser(served.port)
    assert browser.log_in().status == 303
    return browser


def test_an_over_long_csv_field_is_a_refused_line_not_a_500(site, served):
    """A quote never closed runs the field past the csv module's limit: that
    record is refused with its line, the lines before it are imported."""
    browser = _logged_in(site, served)
    content = b'email,name\nok@example.org,Ok\n"a@example.org,' + b"x" * 200_000 + b"\n"
    answer = _upload(browser, "news", content)
    assert answer.status == 200, answer
    result = re.search(r'<div class="[^"]*" id="import-result">(.*?)</div>', answer.body, re.S)
    assert result and "1 line refused" in result.group(1) and "line 3" in result.group(1), answer
    assert list(site.subscribers("news")) == ["ok@example.org"]


def test_an_import_over_the_size_cap_is_refused_at_once_and_says_so(site, served):
    from vykhukhol.web.admin.uploads import MAX_IMPORT_BYTES, MAX_IMPORT_LINES

    browser = _logged_in(site, served)
    page = browser.get("/admin/services/news/subscribers")
    assert f"At most {MAX_IMPORT_BYTES // 1024 // 1024} MiB and {MAX_IMPORT_LINES} lines" in page.body
    line = b"someone.with.a.long.address@example.org,A Name Long Enough To Fill\n"
    big = b"email,name\n" + line * (MAX_IMPORT_BYTES // len(line) + 1)
    many = b"x@example.org\n" * (MAX_IMPORT_LINES + 1)
    assert len(many) < MAX_IMPORT_BYTES
    for content in (big, many):
        answer = _upload(browser, "news", content)
        assert answer.status == 413, answer
        assert "nothing was imported" in answer.body and "Split the list" in answer.body, answer
    assert site.subscribers("news") == {}
