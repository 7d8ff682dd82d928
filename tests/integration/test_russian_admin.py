"""Every admin page in Russian carries no English word, and none of the
words the glossary retired (docs/development/translation.md#dev-translation-glossary).

The admin app (in-process WSGI, a logged-in session) is asked for each page
of its route table on a site whose tables all have rows: a service with a
series and subscribers, a newsletter sent and one planned, a feed that fails,
a bounce kept, an address removed by a bounce, one suppressed, letters in the
outbox, brakes on the service and the newsletter, a pace learned from a mail
server, an idle run. What a person reads (text, button labels, titles, placeholders) must
hold no Latin word outside a short allow-list of names and codes.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from datetime import timedelta
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlencode

import pytest

from support.bouncekit import dsn, pipe, tagged_sender
from support.servetools import call, environ, log_in
from vykhukhol import render
from vykhukhol.bounces import tally
from vykhukhol.files import kv, runlog
from vykhukhol.settings import KEYS
from vykhukhol.timeutil import format_time, now
from vykhukhol.web import admin as admin_mod
from vykhukhol.web.admin import routes

#: Latin words a Russian page may show, each for a reason (compared ignoring case).
ALLOWED = {
    # the product's own name, the default DKIM selector too
    "Vykhukhol",
    # protocols, formats, standards and header names, written so in Russian texts
    "DKIM", "SPF", "DMARC", "MX", "DNS", "TLS", "HTTP", "HTTPS", "IP", "URL", "UTC", "RFC",
    "CSV", "ZIP", "HTML", "Markdown", "RSS", "Atom", "HMAC-SHA", "IANA", "From", "Subject", "X-Forwarded-For",
    "one-click",  # RFC 8058's name of its unsubscribe, as the mailbox providers' rules call it
    # programs and services the owner knows by these names
    "Python", "crontab", "Gmail", "Yahoo", "Outlook", "Mailgun", "SendGrid", "Postmark",
    "Mailchimp", "phpList", "listmonk", "Excel", "LibreOffice", "Google",
    "FreeOTP", "Aegis", "Authenticator",  # the authenticator apps the two-factor page names
    "TOTP",  # the one-time codes' standard (RFC 6238), as the apps call it
    "JSON", "POST",  # a webhook's format and HTTP method, as the receiving program's docs say
    "API",  # the programming interface, as every program's docs call it
    "CAN-SPAM",  # a law's name
    "a-z",  # the letters a service's name may hold
    # the test site's data: the service's and the DB's names, a URL typed in the test
    "course", "main", "nosuch",
}

#: Words that are code the owner types as they are: a letter template's
#: variables, a feed item's fields, the settings' keys and their values.
CODE = {word.lower() for word in (
    *render.KNOWN_VARIABLES, "title", "link", "summary", "published",
    *(key.name for key in KEYS.values()),
    *(choice for key in KEYS.values() for choice in key.choices))}

#: Words the glossary retired (docs/development/translation.md#dev-translation-glossary):
#: a service is «рассылка», a newsletter «выпуск», a DB «база».
RETIRED = re.compile(r"служб|\bБД\b|всё сделано|\bЗадание\b|список запрета|почтов\w+ служб", re.I)

#: Elements whose text is data or code, not the page's words: what the owner
#: typed (a letter's text), a command, a letter's source.
SKIPPED_ELEMENTS = {"script", "style", "code", "kbd", "samp", "pre", "textarea", "iframe"}

#: Attributes a person reads.
READ_ATTRIBUTES = {"title", "placeholder", "aria-label", "alt"}

JOB = re.compile(r"\d{8}-\d{6}-[0-9a-f]+")  # a newsletter's name, a code
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}

RSS_BROKEN = b"<!DOCTYPE html><html><body>moved</body></html>"
WORDS = "smtp; 550 5.1.1 <{failed}>: Recipient address rejected: User unknown"


class _Reader(HTMLParser):
    """The words a person reads on a page, less what a page marks as not its
    words (``translate="no"``, HTML's own way to say so) and code elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[bool] = []  # per open element: is its content skipped
        self.words: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        skipped = (bool(self.open and self.open[-1]) or tag in SKIPPED_ELEMENTS
                   or values.get("translate") == "no")
        if not skipped:
            self.words += [values[name] or "" for name in READ_ATTRIBUTES if values.get(name)]
            if tag == "input" and values.get("type") in {"submit", "button"}:
                self.words.append(values.get("value") or "")
        if tag not in VOID:
            self.open.append(skipped)

    def handle_endtag(self, tag: str) -> None:
        if tag not in VOID and self.open:
            self.open.pop()

    def handle_data(self, data: str) -> None:
        if not (self.open and self.open[-1]):
            self.words.append(data)


def readable(page: str) -> str:
    reader = _Reader()
    reader.feed(page)
    return " ".join(reader.words)


def latin_words(page: str) -> set[str]:
    """The Latin words of ``page``'s readable text, leaving out addresses, URLs,
    paths, file names and setting keys (tokens with ``@``, ``/``, ``_``, ``=``
    or a dot inside), `commands` and ``{{ templates }}``."""
    reader = _Reader()
    reader.feed(page)
    allowed = {word.lower() for word in ALLOWED} | CODE
    found = set()
    for chunk in reader.words:
        for token in re.sub(r"\{\{.*?\}\}|\{%.*?%\}|`[^`]*`", " ", chunk).split():
            token = token.strip("()[]«»“”\"',;:!?…")
            if re.search(r"[@/_=]|\w\.\w|^\.", token) or JOB.fullmatch(token):
                continue
            for word in re.findall(r"[A-Za-z][A-Za-z-]*", token):
                if word.strip("-").lower() not in allowed:
                    found.add(word)
    return found


@pytest.fixture
def broken_feed() -> Iterator[str]:
    """A loopback URL that answers with an HTML page, not a feed."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(RSS_BROKEN)))
            self.end_headers()
            self.wfile.write(RSS_BROKEN)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/feed.xml"
    finally:
        server.shutdown()
        server.server_close()


def busy_site(site: Any, feed_url: str) -> dict[str, str]:
    """A Russian site whose every admin table has rows; the URLs' variable parts."""
    site.set(language="ru", mail__from_email="list@example.org")
    site.service("course", title="Курс", letters=[("Урок 1", "0s", "Здравствуйте, {{ name }}."),
                                                   ("Урок 2", "3d", "Снова мы.")])
    site.subscriber("course", "anna@example.com", name="Анна", sent=1, last_sent_ago=600)
    site.subscriber("course", "boris@example.com", name="Борис", state="new")
    site.subscriber("course", "full@example.com", name="Вера")
    site.subscriber("course", "dead@example.com", name="Глеб")
    site.ok("newsletter", "create", "--services", "course", "--subject", "Новости",
            "--body", "Новости для {{ name }}")
    site.run_at()
    planned = site.ok("newsletter", "create", "--services", "course", "--subject", "Позже",
                      "--body", "Позже.", "--at",
                      (now() + timedelta(days=30)).strftime("%Y-%m-%d %H:%M")).split()[-1]
    site.ok("service", "feed", "course", feed_url, "--every", "1h")
    site.run_at(now() + timedelta(hours=2))
    for address, status, words in (("full@example.com", "5.2.2", None),
                                   ("dead@example.com", "5.1.1", WORDS)):
        sender = tagged_sender(site, None, "s", "course", address)
        extra = {"diagnostic": words} if words else {}
        pipe(site, dsn(address, sender, f"<1.{address}>", status=status, **extra))
    pipe(site, b"From: someone@example.net\nSubject: hello\n\nnot a bounce at all\n")
    site.ok("suppress", "add", "spam@example.net")
    # The line an idle cron tick writes (sender/idle.py), for the Status page's runs.
    until = format_time(now() + timedelta(hours=1))
    runlog.append(site.data.log / "run.log", now(), "0123456789abcdef", "info",
                  runlog.ended_line(0.001, f"all done (nothing due before {until})", 0))
    # Brakes on the service and the planned newsletter, and a pace learned from an SMTP server.
    for key in ("service course", f"newsletter {planned}"):
        tally.count_letters(site.data, {key: (1000, 0)}, now())
        tally.count_reports(site.data, [(key, tally.COMPLAINTS)] * 4, f"batch-{key}", now())
    site.set(mail__transport="smtp", mail__smtp_host="127.0.0.1", hourly_limit=40)
    said = now() - timedelta(minutes=70)
    kv.write_kv(site.data.state / "pace", {"127.0.0.1": f"12.00 {format_time(said)} 24"})
    # A webhook that failed once, so its table has a row.
    site.ok("webhook", "add", "course", "https://127.0.0.1:9/hook", "--allow-private")
    from vykhukhol.webhooks import dispatch

    dispatch.send_test(site.data, "course", debug=False)
    site.ok("token", "add", "course", "--scopes", "read")
    site.ok("field", "add", "city", "--type", "choice", "--choices", "Москва|Тверь",
            "--label-ru", "Город", "--label-en", "City")
    site.ok("service", "edit", "course", "--form-fields", "city")
    kept = sorted(site.data.root.rglob("[0-9]*-[0-9]*-*.eml"))
    letters = sorted(site.data.outbox.glob("*.eml"))
    assert kept and letters, "the site has a message kept for the admin and letters in the outbox"
    return {"job": planned, "kept": kept[0].name, "letter": letters[0].name}


def pages(parts: dict[str, str]) -> list[str]:
    return ["/", "/password", "/settings", "/services", "/services/course",
            "/services/course/delete", "/services/course/letters/new", "/services/course/letters/1",
            "/services/course/subscribers", "/newsletters", "/newsletters/new",
            f"/newsletters/{parts['job']}/edit", f"/newsletters/{parts['job']}/failed", "/outbox", f"/outbox/{parts['letter']}",
            "/bounces", f"/bounces/kept/{parts['kept']}", "/deliverability", "/suppressed",
            "/removed", "/twofactor", "/webhooks", "/held", "/tokens", "/fields", "/services/nosuch"]


#: GET pages that are files, not pages: the exports' CSV columns are a format.
FILES = {"/services/course/export.csv", "/suppressed.csv"}


def test_the_list_of_pages_covers_every_page_of_the_route_table():
    paths = [*pages({"job": "20261203-104251-a288a2", "letter": "a@example.org.eml",
                     "kept": "20261203-104309-4a243b2854132478.eml"}), "/login", *FILES]
    for rule in routes.ROUTES:
        if rule.method == "GET":
            assert any(rule.match(path) for path in paths), f"no page asked for {rule.pattern}"


#: What shows that a page's tables have rows (the set-up worked).
FILLED = {"/": ['id="pace"', 'id="runs"', "0.40 %"], "/services": ['id="braked-course"'],
          "/services/course": ['id="feed-problem"', 'id="letters"'],
          "/services/course/subscribers": ["anna@example.com"], "/newsletters": ["braked-", "history-"],
          "/bounces": ['id="bounces"', 'id="kept"'], "/removed": ["dead@example.com"],
          "/suppressed": ["spam@example.net"], "/outbox": ["anna@example.com"],
          "/webhooks": ['class="deliveries"'], "/tokens": ['id="tokens"'],
          "/fields": ['id="fields"', "<code>course</code>"]}


def page_of(app: Any, cookie: str, path: str) -> str:
    status, _, page, _ = call(app, environ("GET", path, "", b"", "", "missing", script="/admin",
                                           HTTP_COOKIE=cookie))
    assert status == 200, f"{path}: {status} {page[:300]}"
    return page


def test_every_admin_page_in_russian_has_no_english_word_and_no_retired_one(site, broken_feed):
    parts = busy_site(site, broken_feed)
    app = admin_mod.app(site.data, site.cgi_dir)
    status, _, login_page, _ = call(app, environ("GET", "/login", "", b"", "", "missing",
                                                 script="/admin"))
    found = {"/login": latin_words(login_page) | set(RETIRED.findall(readable(login_page)))}
    cookie, csrf = log_in(app)
    for path in pages(parts):
        status, _, page, _ = call(app, environ("GET", path, "", b"", "", "missing",
                                               script="/admin", HTTP_COOKIE=cookie))
        assert status in (200, 404), f"{path}: {status} {page[:300]}"
        for sign in FILLED.get(path, []):
            assert sign in page, f"{path} lacks {sign}"
        found[path] = latin_words(page) | set(RETIRED.findall(readable(page)))
    # A preview speaks of the sample subscriber by a Russian name.
    once = re.search(r'name="once" value="([^"]+)"', page_of(app, cookie, "/services/course/letters/1"))
    body = urlencode({"csrf": csrf, "once": once.group(1), "subject": "Урок 1", "delay": "0s",
                      "body": "Здравствуйте, {{ name }}.", "html": "", "action": "preview"}).encode()
    status, _, page, _ = call(app, environ("POST", "/services/course/letters/1", "", body,
                                           "application/x-www-form-urlencoded", str(len(body)),
                                           script="/admin", HTTP_COOKIE=cookie))
    assert status == 200, page[:2000]
    found["preview"] = latin_words(page) | set(RETIRED.findall(readable(page)))
    english = {path: sorted(words) for path, words in found.items() if words}
    assert not english, "\n".join(f"{path}: {' '.join(words)}" for path, words in english.items())
    assert "Здравствуйте, Иван." in page
