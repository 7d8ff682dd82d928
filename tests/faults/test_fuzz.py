"""Fuzzing (hypothesis) of every way input comes in: the public forms, the
admin forms, the command line, the settings and the subscriber file's lines.

* Public forms: the WSGI apps of ``vykhukhol.web.subscription`` called in-process
  with a fabricated environ — urlencoded, multipart and raw bodies, odd
  methods, wrong or missing Content-Type and Content-Length, junk in the query
  string and the cookie, valid and invalid link tokens.
* Admin forms: logged in through the app itself (password → session cookie,
  CSRF token read from a page), then POSTs to /settings, /services,
  /services/<n>/letters, /services/<n>/subscribers and /newsletters/new.
* The command line: ``vykhukhol.cli.main`` in-process with argv built from the
  grammar of docs/reference/commands.md and with random words. (The fuzzed installation is the
  only one reachable: ``--data`` is never fuzzed, no word holds a ``/``, the
  working directory is a temporary one, and ``serve`` is never started.)
* Settings: ``settings.check`` and ``settings.update`` with random values.
* Subscriber lines: ``subscriber_line.parse_line``, ``subscribers.read`` and ``rewrite``.

Invariants: no traceback and no 500; input that is rejected (a 4xx page, a
non-zero exit, BadInput), a GET or HEAD, a preview, a honeypot hit changes
no file of the data directory; input that is accepted leaves every data file
readable (settings.ini included); a subscriber line reads back as it was.

Short version (CI): ~200 examples per target. Long version:
``VYKHUKHOL_LONG=1`` — 10,000 examples per target.
"""

from __future__ import annotations

import contextlib
import io
import string
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from support.faultkit import assert_data_parses, scale
from support.servetools import call, environ, log_in
from vykhukhol import cli, files, newsletters, tokens
from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol.errors import BadInput
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import HEADER, Subscriber, parse_line
from vykhukhol.timeutil import now
from vykhukhol.web import admin as admin_mod
from vykhukhol.web import subscription
from vykhukhol.web.http import MAX_FORM_BYTES

EXAMPLES = scale(200, 10_000)
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
ADMIN_FUZZ = settings(FUZZ, max_examples=scale(100, 10_000))  # five forms: 100 each in CI
SETTINGS_FUZZ = settings(FUZZ, max_examples=scale(30, 500))   # per key: 24 keys
PASSWORD = "correct-horse-1"  # tests/conftest.py's installation

# --- what comes in -------------------------------------------------------------------


def mostly(good: st.SearchStrategy, bad: st.SearchStrategy) -> st.SearchStrategy:
    """``good`` about three times in four, else ``bad``: whole forms are checked at
    once, so a fuzzer that never gets one field right never gets past the check."""
    return st.sampled_from([True, True, True, False]).flatmap(lambda ok: good if ok else bad)


NASTY = "\r\n\t\0\x0b\x0c\x1c\x7f\x85\u2028\ufeff\"'<>&%;=+\\ @#{}[]|é中ё"
junk = st.text(max_size=40) | st.text(alphabet=NASTY + string.ascii_letters, max_size=30)
ascii_junk = st.text(alphabet=string.printable, max_size=40)
plain = st.text(alphabet=string.ascii_letters + string.digits + " .,!?-ёжЖ", min_size=1, max_size=30)
jinja = st.sampled_from([
    "{{ name }}", "{{", "{% if %}", "{{ 1/0 }}", "{{ ''.__class__.__mro__ }}", "{{ 'a' * 10**7 }}",
    "{{ 2 ** 1000 }}", "{% for i in range(10) %}x{% endfor %}", "{{ name|upper }}",
    "{{ nothing.at.all }}", "{# note #}", "{% raw %}", "{{ email|wordwrap(-1) }}", "}}{{",
    "{{ range(10**9)|list }}", "{% include 'x' %}", "{% set x = 1 %}{{ x }}",
])
good_emails = st.sampled_from(["ivan@example.org", "IVAN@Example.ORG", "x@пример.рф"]) \
    | st.from_regex(r"[a-z0-9][a-z0-9._+-]{0,11}@example\.org", fullmatch=True)
bad_emails = st.sampled_from([
    "bad", "a@b", "тест@example.org", "a b@example.org", "a@example.org\r\nBcc: x@example.org", "",
    "@", "a@", "@b", "a" * 250 + "@example.org", "a..b@example.org", "<a@example.org>",
    "a@example.org,b@example.org",
]) | st.emails().map(str) | junk
emails = mostly(good_emails, bad_emails)
other_names = st.sampled_from(["NEWS", "missing", "../news", "news/..", "", "a" * 50, "ne ws",
                               "news\0", "main", "-x", "x" * 40]) | junk
names = mostly(st.just("news"), other_names)  # the service that exists
new_names = mostly(st.from_regex(r"[a-z0-9][a-z0-9_-]{0,12}", fullmatch=True), other_names)
values = mostly(plain | jinja.filter(lambda t: "{{ name" in t or "{#" in t),
                st.one_of(junk, jinja, bad_emails, st.sampled_from(["yes", "no", "0", "-1", "1e9"])))
methods = mostly(st.sampled_from(["POST", "POST", "GET", "HEAD"]),
                 st.sampled_from(["PUT", "DELETE", "OPTIONS", "PATCH", "post", "", "TRACE"])
                 | st.text(alphabet=string.ascii_letters, max_size=8))
keep = st.sampled_from([True] * 9 + [False])  # whether a field is sent at all


def multipart(fields: dict[str, str], boundary: str, upload: bytes | None) -> bytes:
    out = []
    for key, value in fields.items():
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n'
                   f"{value}\r\n".encode("utf-8", "surrogatepass"))
    if upload is not None:
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                   f'filename="list.csv"\r\nContent-Type: text/csv\r\n\r\n'.encode() + upload + b"\r\n")
    out.append(f"--{boundary}--\r\n".encode())
    return b"".join(out)


@st.composite
def bodies(draw: Callable, fields: dict[str, str]) -> tuple[bytes, str, str]:
    """(body, Content-Type, Content-Length) for ``fields``, mostly well made."""
    kind = draw(mostly(st.sampled_from(["urlencoded", "multipart"]), st.sampled_from(["raw", "none"])))
    boundary = draw(st.sampled_from(["xYzZy", "----b", "a" * 70]))
    if kind == "urlencoded":
        body = urlencode(fields, encoding="utf-8", errors="surrogatepass").encode()
        ctype = "application/x-www-form-urlencoded"
    elif kind == "multipart":
        upload = draw(st.none() | st.binary(max_size=200) | st.just(b"email,name\na@example.org,A\n"))
        body = multipart(fields, boundary, upload)
        ctype = f"multipart/form-data; boundary={boundary}"
    elif kind == "raw":
        body, ctype = draw(st.binary(max_size=300)), draw(st.sampled_from(
            ["application/x-www-form-urlencoded", f"multipart/form-data; boundary={boundary}"]))
    else:
        body, ctype = b"", ""
    ctype = draw(mostly(st.just(ctype), st.sampled_from([
        "", "text/plain", "multipart/form-data", "multipart/form-data; boundary=", "application/json",
        "application/x-www-form-urlencoded; charset=latin-1"])))
    length = draw(mostly(st.just("exact"), st.sampled_from([
        "missing", "", "short", "long", "-1", "abc", str(MAX_FORM_BYTES + 1), "99999999999"])))
    if length == "exact":
        length = str(len(body))
    elif length == "short":
        length = str(max(0, len(body) - 3))
    elif length == "long":
        length = str(len(body) + 10)
    return body, ctype, length


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every data file's (inode, size, mtime): a rewrite or an append changes it."""
    found = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.name.endswith(".lock"):
            info = path.stat()
            found[str(path.relative_to(root))] = (info.st_ino, info.st_size, info.st_mtime_ns)
    return found


def changed(before: dict, after: dict) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def keep_outbox_small(site: Any) -> None:
    """The outbox grows with every accepted subscription; keep snapshots cheap."""
    letters = sorted(site.data.outbox.glob("*.eml"))
    if len(letters) > 200:
        for path in letters:
            path.unlink()


def assert_clean(status: int, body: str, errors: str, what: str) -> None:
    assert status < 500, f"{what}: {status}\n{body[:800]}\n{errors[-2000:]}"
    assert "Traceback" not in body and "Traceback" not in errors, f"{what}:\n{errors[-3000:]}"


@pytest.fixture
def news_site(site: Any) -> Any:
    site.set(language="en")
    site.service("news", letters=[("Lesson 1", "1d", "Hello {{ name }}.\n")])
    site.subscriber("news", "ivan@example.org")
    site.subscriber("news", "pending@example.org", state="new")
    return site


# --- the public forms ---------------------------------------------------------------------

@st.composite
def public_requests(draw: Callable, secret: bytes) -> dict[str, Any]:
    app = draw(st.sampled_from(["subscribe", "confirm", "unsubscribe"]))
    service, email = draw(names), draw(emails)
    fields = {"service": service, "email": email, "name": draw(values), "s": service, "e": email,
              "website": draw(st.sampled_from(["", "", "", "http://spam.example"]))}
    token = draw(st.sampled_from(["confirm", "unsubscribe", "junk", "none"]))
    if token in tokens.PURPOSES:
        fields["t"] = tokens.make(secret, service, email, token)
    elif token == "junk":
        fields["t"] = draw(ascii_junk)
    fields.update(draw(st.dictionaries(junk, values, max_size=2)))
    fields = {k: v for k, v in fields.items() if draw(keep)}
    body, ctype, length = draw(bodies(fields))
    query = draw(st.sampled_from(["empty", "fields", "junk"]))
    query = {"fields": urlencode(fields, errors="surrogatepass"), "empty": "",
             "junk": quote(draw(junk), safe="=&%")}[query]
    return {"app": app, "method": draw(methods), "fields": fields, "body": body, "ctype": ctype,
            "length": length, "query": query, "cookie": draw(st.just("") | junk),
            "remote": draw(st.sampled_from(["127.0.0.1", "::1", "", "not an address", "10.0.0.7"]))}


def test_fuzzed_public_form_requests_never_crash_and_rejected_ones_change_nothing(news_site):
    """Public forms, any method/body/headers: no 500, no traceback; rejected, GET/HEAD or honeypot change no file."""
    data = news_site.data
    apps = {name: getattr(subscription, name)(data) for name in ("subscribe", "confirm", "unsubscribe")}
    secret = news_site.settings().secret

    @FUZZ
    @given(public_requests(secret))
    def check(request: dict[str, Any]) -> None:
        keep_outbox_small(news_site)
        env = environ(request["method"], "", request["query"], request["body"], request["ctype"],
                      request["length"], script=f"/cgi/{request['app']}.py",
                      HTTP_COOKIE=request["cookie"], REMOTE_ADDR=request["remote"])
        before = snapshot(data.root)
        status, _, body, errors = call(apps[request["app"]], env)
        what = f"{request['method']} {request['app']}.py {request['fields']!r}"
        assert_clean(status, body, errors, what)
        inert = status >= 400 or request["method"].upper() in ("GET", "HEAD")
        caught = request["app"] == "subscribe" and request["fields"].get("website")
        if inert or caught:
            # a bot's post is counted against its client's cap and logged, nothing more
            # (docs/using/subscriber-pages.md#subscriber-bots)
            allowed = {"log/pages.log", "state/subscribes"} if caught and not inert else set()
            assert set(changed(before, snapshot(data.root))) <= allowed, f"{what} → {status} changed files"
        else:
            assert_data_parses(data)

    check()


@FUZZ
@given(st.sampled_from(["confirm", "unsubscribe"]), emails,
       st.text(min_size=32, max_size=32) | st.text(alphabet="0123456789abcdefé\x80ß", min_size=32,
                                                   max_size=32) | junk)
def test_fuzzed_link_tokens_are_refused_without_a_crash(news_site, action, email, token):
    """confirm.py/unsubscribe.py POSTed any token (32 characters, non-ASCII too): a clean page, no change."""
    app = getattr(subscription, action)(news_site.data)
    body = urlencode({"s": "news", "e": email, "t": token}).encode()
    before = snapshot(news_site.data.root)
    status, _, page, errors = call(app, environ("POST", "", "", body,
                                                "application/x-www-form-urlencoded", str(len(body)),
                                                script=f"/cgi/{action}.py"))
    assert_clean(status, page, errors, f"POST {action}.py t={token!r}")
    assert changed(before, snapshot(news_site.data.root)) == []


# --- the admin forms --------------------------------------------------------------------------

SETTING_VALUES = {  # known values, good and bad, for each key
    "admin_email": ["", "admin@example.org", "not an address"],
    "site_url": ["https://lists.example.org", "http://127.0.0.1:8080/", "ftp://x", "https://"],
    "news_per_run": ["50", "0", "100000", "1_000"], "serial_per_run": ["50", "-1", "x"],
    "time_limit": ["30s", "4s", "1d", "30", "s"], "reminder_period": ["3d", "59s", "3", "d"],
    "reminder_count": ["2", "101"], "timezone": ["UTC", "Europe/Moscow", "Mars/Base", "../../etc"],
    "language": ["ru", "en", "de"], "hourly_limit": ["0", "100"], "daily_limit": ["0", "1e3"],
    "cron_allow": ["", "127.0.0.1", "10.0.0.0/8 ::1", "127.0.0.1,192.168.0.0/16", "999.1.1.1"],
    "mail.transport": ["outbox", "smtp", "pigeon"], "mail.from_email": ["", "list@example.org"],
    "mail.smtp_host": ["127.0.0.1", "mail host", "a/b"], "mail.smtp_port": ["25", "0", "65536"],
    "mail.smtp_security": ["none", "starttls", "ssl", "tls"], "mail.smtp_user": ["", "user"],
    "mail.smtp_password": ["", "secret"], "mail.sendmail_path": ["/usr/sbin/sendmail"],
    "mail.dev_redirect": ["", "dev@example.org", "dev"],
}


def _valid(key: str, value: str) -> bool:
    try:
        settings_mod.check(key, value)
    except BadInput:
        return False
    return True


GOOD_SETTINGS = {key: [v for v in SETTING_VALUES.get(key, [spec.default]) if _valid(key, v)]
                 or [spec.default] for key, spec in settings_mod.KEYS.items()}


@st.composite
def setting_value(draw: Callable, key: str) -> str:
    """A value for ``key``: a known one, or several joined by a separator (a list of
    addresses, a line break typed into a form), maybe padded or mangled, or junk."""
    known = st.sampled_from(SETTING_VALUES.get(key, [""]))
    parts = draw(st.lists(mostly(known, junk), min_size=1, max_size=3))
    separator = draw(st.sampled_from([" ", ",", "\n", "\t", ", ", "\r\n", ";"]))
    value = separator.join(parts)
    return draw(mostly(st.just(value), st.sampled_from([f" {value} ", value.upper(), f"{value}\0",
                                                        f"{value}\n"])))


ADMIN_FORMS = ["/settings", "/services", "/services/news/letters", "/services/news/subscribers",
               "/newsletters/new"]


@st.composite
def admin_fields(draw: Callable, path: str) -> dict[str, str]:
    if path == "/settings":
        # Good values (the form is checked as a whole) but for a few fuzzed keys.
        fields = {key: GOOD_SETTINGS[key][0] for key in admin_mod.SETTINGS_SHOWN}
        for key in draw(st.lists(st.sampled_from(admin_mod.SETTINGS_SHOWN), min_size=1, max_size=3)):
            fields[key] = draw(setting_value(key))
        # keep the fuzz local: a transport other than the outbox would try the network
        fields["mail.transport"] = "outbox"
    elif path == "/services":
        fields = {"name": draw(new_names), "db": draw(mostly(st.just("main"), st.just("missing") | junk)),
                  "title": draw(values), "from_name": draw(st.just("") | values),
                  "from_email": draw(mostly(st.just(""), emails)),
                  "delete_finished": draw(mostly(st.sampled_from(["no", "yes"]),
                                                 st.sampled_from(["maybe", ""]) | junk)),
                  "send_window": draw(mostly(st.sampled_from(["", "* * * * *", "*/5 9-18 * * 1-5"]),
                                             st.sampled_from(["61 * * * *", "* * *"]) | junk))}
    elif path == "/services/news/letters":
        fields = {"subject": draw(values),
                  "delay": draw(mostly(st.sampled_from(["1d", "0s", "30m"]), st.just("5x") | junk)),
                  "body": draw(values), "html": draw(mostly(st.sampled_from(["", "<p>{{ name }}</p>"]),
                                                            values)),
                  "position": draw(st.sampled_from(["", "1", "0", "-5", "999", "x"])),
                  "action": draw(mostly(st.sampled_from(["save", "preview"]), st.just("test") | junk))}
    elif path == "/services/news/subscribers":
        fields = {"email": draw(emails), "name": draw(values),
                  "confirmed": draw(st.sampled_from(["yes", "no", ""]))}
    else:
        chosen = draw(mostly(st.just(["news"]), st.lists(
            st.sampled_from(["news", "missing", "../news", "NEWS"]) | junk, max_size=3)))
        fields = {f"svc_{name}": "on" for name in chosen}
        fields.update({"subject": draw(values), "text": draw(values),
                       "html": draw(mostly(st.sampled_from(["", "<b>x</b>"]), values)),
                       "at": draw(mostly(st.sampled_from(["", "2026-12-01 09:00", "2026-12-01T09:00"]),
                                         st.sampled_from(["2026-02-30 10:00", "1999-01-01 00:00",
                                                          "tomorrow"]) | junk)),
                       "action": draw(mostly(st.sampled_from(["create", "preview"]),
                                             st.just("test") | junk))})
    return {k: v for k, v in fields.items() if draw(keep)}


def admin_post(app: Callable, cookie: str, path: str, fields: dict[str, str],
               body: tuple[bytes, str, str]) -> tuple[int, str, str]:
    env = environ("POST", path, "", *body, script="/admin", HTTP_COOKIE=cookie)
    status, _, page, errors = call(app, env)
    return status, page, errors


@pytest.mark.parametrize("path", ADMIN_FORMS)
def test_fuzzed_admin_form_posts_never_crash_and_rejected_ones_change_nothing(news_site, path):
    """Admin POSTs after a real login: no 500, no traceback; 4xx and previews change no file; accepted ones keep files readable."""
    data = news_site.data
    app = admin_mod.app(data, news_site.cgi_dir)
    cookie, csrf = log_in(app)

    @ADMIN_FUZZ
    @given(admin_fields(path), mostly(st.just("valid"), st.sampled_from(["missing", "junk"])), st.data())
    def check(fields: dict[str, str], token: str, draw: Any) -> None:
        keep_outbox_small(news_site)
        fields = dict(fields)
        if token != "missing":
            fields["csrf"] = csrf if token == "valid" else draw.draw(ascii_junk)
        before = snapshot(data.root)
        status, page, errors = admin_post(app, cookie, path, fields, draw.draw(bodies(fields)))
        what = f"POST {path} {fields!r}"
        assert_clean(status, page, errors, what)
        after = snapshot(data.root)
        if status >= 400 or fields.get("action") == "preview":
            assert changed(before, after) == [], f"{what} → {status} changed files"
        elif status == 200:  # a test letter: only the outbox may change
            assert all(name.startswith("outbox/") for name in changed(before, after)), what
        assert_data_parses(data)

    check()


def test_fuzzed_csrf_tokens_are_refused_without_a_crash(news_site):
    """A logged-in admin POST with any CSRF token (non-ASCII too): 403, no traceback, no change."""
    data = news_site.data
    app = admin_mod.app(data, news_site.cgi_dir)
    cookie, _ = log_in(app)

    @ADMIN_FUZZ
    @given(st.sampled_from(ADMIN_FORMS), junk | st.text(min_size=64, max_size=64))
    def check(path: str, token: str) -> None:
        fields = {"csrf": token, "email": "csrf@example.org", "name": "x"}
        body = urlencode(fields).encode()
        before = snapshot(data.root)
        status, page, errors = admin_post(app, cookie, path, fields,
                                          (body, "application/x-www-form-urlencoded", str(len(body))))
        assert_clean(status, page, errors, f"POST {path} csrf={token!r}")
        assert status == 403 and changed(before, snapshot(data.root)) == []

    check()


# --- the command line -----------------------------------------------------------------------

FILES = ["ok.txt", "bad.bin", "list.csv", "folder", "missing.txt", "page.html"]
word = st.sampled_from(FILES) | names | emails | jinja | junk


@st.composite
def argvs(draw: Callable) -> list[str]:
    """argv after ``--data DIR``: from the commands' grammar, or random words."""
    name, email, text, file_ = draw(names), draw(emails), draw(values), draw(st.sampled_from(FILES))
    fresh = draw(new_names)
    key = draw(mostly(st.sampled_from(list(settings_mod.KEYS)), st.sampled_from(["nope", "mail."]) | junk))
    value = draw(setting_value(key))
    if key in ("mail.transport", "mail.sendmail_path", "mail.smtp_host"):
        value = draw(st.sampled_from(["outbox", "smtp", "", "x y"]))  # never a program or a far host
    when = draw(mostly(st.just("2026-12-01 09:00"), st.sampled_from(["2026-13-45 99:99", "now", ""]) | junk))
    grammar = draw(st.sampled_from([
        ["init", "--cgi-dir", "folder"], ["cron"], ["status"], ["mode", draw(st.sampled_from(
            ["debug", "working", "off"]))], ["password", "--password", text],
        ["settings", "get", key], ["settings", "set", key, value], ["db", "add", fresh],
        ["db", "remove", fresh], ["db", "list"],
        ["service", "add", fresh, "--db", draw(st.sampled_from(["main", fresh])), "--title", text,
         "--send-window", draw(st.sampled_from(["* * * * *", "61 * * * *"]) | junk)],
        ["service", "edit", name, "--from-email", email], ["service", "enable", fresh],
        ["service", "disable", fresh], ["service", "remove", fresh], ["service", "list"],
        ["letter", "add", name, "--subject", text, "--delay", draw(st.sampled_from(["0s", "2d", "x"])),
         "--body", text], ["letter", "add", name, "--subject", text, "--delay", "1d",
                           "--body-file", file_, "--html-file", draw(st.sampled_from(FILES))],
        ["letter", "list", name], ["letter", "remove", name, draw(st.sampled_from(["1", "0", "x"]))],
        ["subscriber", "add", name, email, "--name", text], ["subscriber", "add", name, email,
                                                              "--confirmed"],
        ["subscriber", "remove", name, email], ["subscriber", "list", name],
        ["subscriber", "import", name, file_], ["subscriber", "export", name, file_],
        ["newsletter", "create", "--services", f"{name},news", "--subject", text, "--body", text,
         "--at", when], ["newsletter", "list"], ["newsletter", "cancel", name],
    ]))
    random_words = draw(st.lists(word, max_size=6))
    argv = draw(mostly(st.just(grammar), st.sampled_from([random_words, grammar + random_words])))
    # The fuzzed installation is the only one reachable, and nothing is served.
    assume(not any("/" in w or "\0" in w or w.startswith(("--d", "-h", "--h", "ser")) for w in argv))
    return argv


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def test_fuzzed_command_lines_never_crash_and_failed_ones_change_nothing(news_site, tmp_path,
                                                                         monkeypatch):
    """Random vykhukhol argv: exit 0/1/2 with no traceback; a failing command changes no file; data stays readable."""
    work = tmp_path / "work"
    (work / "folder").mkdir(parents=True)
    (work / "ok.txt").write_text("Hello {{ name }}.\n", encoding="utf-8")
    (work / "page.html").write_text("<p>{{ name }}</p>\n", encoding="utf-8")
    (work / "bad.bin").write_bytes(b"\xff\xfe\x00bad")
    (work / "list.csv").write_text("email,name\nnew@example.org,New\nbroken\n", encoding="utf-8")
    monkeypatch.chdir(work)
    monkeypatch.setenv("VYKHUKHOL_DATA", str(news_site.root))
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    root = news_site.root
    # A newsletter still pending for an address the sender has since deleted (three
    # refusals in a row), as a working installation has them.
    news_site.subscriber("news", "gone@example.org")
    newsletters.create(news_site.data, ["news"], "Later", "Hello.\n", start=now() + timedelta(days=1))
    subs.remove(svc.find_service(news_site.data, "news").subscribers_path, "gone@example.org")

    @FUZZ
    @example(["subscriber", "remove", "news", "gone@example.org"])
    @given(argvs())
    def check(argv: list[str]) -> None:
        keep_outbox_small(news_site)
        before = snapshot(root)
        try:
            code, out, err = run_cli(["--data", str(root), *argv])
        except SystemExit as exc:  # only --help may exit this way
            pytest.fail(f"vykhukhol {argv!r} raised SystemExit({exc.code})")
        assert code in (0, 1, 2), f"vykhukhol {argv!r} returned {code!r}"
        assert "Traceback" not in err + out, f"vykhukhol {argv!r}:\n{err}"
        if code != 0:  # errors are one line on stderr (line breaks
            # of the person's own words, echoed back, aside)
            said = err
            for w in sorted(argv, key=len, reverse=True):
                said = said.replace(w, " ".join(w.splitlines()))
            assert len(said.strip().splitlines()) == 1, f"vykhukhol {argv!r} → {code}:\n{err}"
            assert changed(before, snapshot(root)) == [], f"vykhukhol {argv!r} failed ({err.strip()}) " \
                                                          "but changed files"
        assert_data_parses(news_site.data)

    check()


# --- settings ---------------------------------------------------------------------------------

@pytest.mark.parametrize("key", sorted(settings_mod.KEYS))
def test_fuzzed_settings_values_are_accepted_whole_or_refused_without_a_change(tmp_path, key):
    """settings.check/update with any value (and it with a line break at each place): refused, or read back whole."""
    path = tmp_path / "settings.ini"
    settings_mod.write_initial(path, settings_mod.initial("admin@example.org", "https://l.example.org"))

    @SETTINGS_FUZZ
    @given(setting_value(key))
    def check(value: str) -> None:
        accepted_or_refused(path, key, value)
        # A line break typed or pasted anywhere into the value (a list of addresses
        # one per line, a value copied from a file) must not break the file either.
        for at in range(min(len(value), 24) + 1):
            for brk in ("\n", "\r"):
                accepted_or_refused(path, key, value[:at] + brk + value[at:])

    check()


def accepted_or_refused(path: Path, key: str, value: str) -> None:
    """One value: refused with BadInput and settings.ini untouched, or written so
    that it reads back (then settings.ini is made afresh for the next value)."""
    before = path.read_bytes()
    try:
        typed = settings_mod.check(key, value)
    except BadInput:
        with pytest.raises(BadInput):
            settings_mod.update(path, {key: value})
        assert path.read_bytes() == before, f"{key}={value!r} refused but settings.ini changed"
        return
    settings_mod.update(path, {key: value})
    loaded = settings_mod.load(path)
    settings_mod.write_initial(path, settings_mod.initial("admin@example.org", "https://l.example.org"))
    assert loaded.problems == [], f"{key}={value!r} accepted, but settings.ini now reads: " \
                                  f"{loaded.problems}\n{path.read_text()}"
    assert loaded[key] == typed, f"{key}={value!r} accepted as {typed!r}, reads back {loaded[key]!r}"


# --- subscriber lines -------------------------------------------------------------------------

fields_text = st.text(alphabet=st.characters(blacklist_characters="\r\n\t",
                                             blacklist_categories=("Cs",)), max_size=20)
times = st.sampled_from(["-", "2026-11-29T17:00:00Z", "2026-02-30T17:00:00Z", "2026-11-29 17:00",
                         "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z"]) | fields_text
counts_text = st.sampled_from(["0", "1", "-1", "٣", "1_0", " 2", "9" * 5000, "x"]) | fields_text


@st.composite
def subscriber_lines(draw: Callable) -> str:
    parts = [draw(emails.filter(lambda e: not set(e) & set("\r\n\t")) | fields_text),
             draw(fields_text), draw(st.sampled_from(["new", "active", "done", "ACTIVE", ""])),
             draw(times), draw(times), draw(counts_text), draw(times), draw(counts_text), draw(times),
             draw(counts_text), draw(fields_text)]
    parts += draw(st.lists(fields_text, max_size=2))
    parts = parts[:draw(st.integers(0, len(parts)))] if draw(st.integers(0, 4)) == 0 else parts
    return "\t".join(parts)


@FUZZ
@given(st.lists(subscriber_lines() | fields_text, min_size=1, max_size=8),
       st.binary(max_size=40))
def test_fuzzed_subscriber_lines_parse_or_are_kept_verbatim(tmp_path_factory, lines, raw):
    """parse_line gives a Subscriber that round-trips, or BadInput; read/rewrite keep every line (malformed ones verbatim)."""
    for line in lines:
        try:
            sub = parse_line(line)
        except BadInput:
            continue
        again = parse_line(sub.to_line())
        # An empty ip field is written as "-"; everything else as it was.
        assert again == sub.replace(ip=sub.ip or "-"), \
            f"{line!r} → {sub.to_line()!r} reads back as {again!r}"
    path = tmp_path_factory.mktemp("subs") / "subscribers.txt"
    content = (HEADER + "\n" + "\n".join(lines) + "\n").encode("utf-8", "surrogatepass") \
        + raw.replace(b"\r", b"").replace(b"\n", b"") + b"\n"
    path.write_bytes(content)
    items = list(subs.read(path))
    malformed = [i.text for i in items if isinstance(i, subs.Malformed)]
    kept = [i.to_line() for i in items if isinstance(i, Subscriber)]
    subs.rewrite(path, lambda sub: sub)
    after = list(subs.read(path))
    assert [i.text for i in after if isinstance(i, subs.Malformed)] == malformed
    assert [i.to_line() for i in after if isinstance(i, Subscriber)] == kept
    assert len(list(files.read_lines(path))) == 1 + len(items)
