"""The public archive (docs/using/archive.md#archive), the whole way:
letters marked public with the CLI, real sender runs (`vykhukhol cron`)
that publish them, the files read as an independent Atom parser
(feedparser) reads them, served by a real `vykhukhol serve` and the
`web_url` links taken from the real letters, through serve and a CGI script.
The archive served by Apache is in test_apache.py.
"""

from __future__ import annotations

import http.client
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import feedparser
import pytest

from support.servetools import ServeProcess
from support.webtools import TRACEBACK, Page, free_port, plain_text

CHECKOUT = Path(__file__).resolve().parents[2]
NAME, ADDRESS = "Zinaida Secretova", "zina.private@example.com"
HOSTILE_SUBJECT = 'Tips <script>alert("s")</script> & more'
HOSTILE_BODY = ("Hello {{ name }} <{{ email }}>!\n<script>alert('b')</script>\n"
                "<img src=x onerror=alert(1)>\nLeave: {{ unsubscribe_url }}\n"
                "Online: {{ web_url }}\nSee https://example.org/page?a=1&b=2.\n")


def sent_to(site: Any, address: str) -> list[Any]:
    return [m for m in site.outbox() if address in str(m["To"])]


def archive_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


@pytest.fixture
def published(site: Any, tmp_path: Path) -> Any:
    """Service news (archive on) with a hostile public letter 1, a private
    letter 2, one subscriber with a name; a public and a private newsletter;
    runs until everything has gone out."""
    site.set(archive_dir=str(tmp_path / "web" / "archive"), language="en")
    site.ok("db", "add", "main")
    site.ok("service", "add", "news", "--db", "main", "--title", "News <b>&</b>")
    site.ok("letter", "add", "news", "--subject", HOSTILE_SUBJECT, "--delay", "0s",
            "--body", HOSTILE_BODY, "--public")
    site.ok("letter", "add", "news", "--subject", "Private lesson for {{ name }}", "--delay", "0s",
            "--body", "Only for you, {{ name }}: {{ web_url }}\n")
    switched = site.ok("archive", "on", "news")
    assert "/archive/news/" in switched, switched
    site.ok("subscriber", "add", "news", ADDRESS, "--name", NAME, "--confirmed")
    site.ok("service", "enable", "news")
    for _ in range(2):  # one letter of a series per subscriber and run
        report = site.ok("cron")
        assert site.sent_counts(report) == {"news": 1}, report
    public = site.ok("newsletter", "create", "--services", "news", "--subject",
                     "Big news, {{ name }}", "--body", "Dear {{ name }}, online: {{ web_url }}\n",
                     "--public").strip()
    private = site.ok("newsletter", "create", "--services", "news", "--subject", "Secret plans",
                      "--body", "Dear {{ name }}: {{ web_url }}\n").strip()
    report = site.cli("cron").stdout  # one run a real process, as cron starts it
    assert site.sent_counts(report) == {public: 1, private: 1}, report
    site.public_job, site.private_job = public, private
    site.archive = tmp_path / "web" / "archive" / "news"
    return site


def test_a_run_publishes_the_public_letters_and_nothing_else(published: Any) -> None:
    """Letter 1 and the public newsletter get pages; the private ones do not."""
    names = sorted(p.name for p in archive_files(published.archive))
    assert names == sorted(["index.html", "feed.atom", "letter-001.html",
                            f"news-{published.public_job}.html"]), names
    index = (published.archive / "index.html").read_text(encoding="utf-8")
    # newest first: the newsletter went out in the later run
    assert index.index(f"news-{published.public_job}.html") < index.index("letter-001.html")
    assert "Secret plans" not in index and "Private lesson" not in index
    for path in archive_files(published.archive):
        assert path.stat().st_mode & 0o004, f"{path.name} is not readable by the web server"


def test_no_archive_file_holds_the_recipients_address_or_name(published: Any) -> None:
    """Pages are rendered for a recipient with no name: no address, name or personal link."""
    for path in archive_files(published.archive):
        text = path.read_text(encoding="utf-8")
        for secret in (ADDRESS, "zina.private", NAME, "Zinaida", "Secretova",
                       "unsubscribe.py", "view.py", "&amp;t=", "&t="):
            assert secret not in text, f"{secret!r} is in {path.name}"
    page = (published.archive / "letter-001.html").read_text(encoding="utf-8")
    assert "personal link" in page  # the neutral text where the unsubscribe link was


def test_a_hostile_letter_comes_out_escaped(published: Any) -> None:
    """Script in the subject and the body is text on the page and in the feed, never markup."""
    page = (published.archive / "letter-001.html").read_text(encoding="utf-8")
    assert "<script" not in page and "<img" not in page, page
    assert "&lt;script&gt;alert(&quot;s&quot;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert '<a href="https://example.org/page?a=1&amp;b=2" ' in page  # a link, the dot left out
    feed = (published.archive / "feed.atom").read_text(encoding="utf-8")
    assert "<script" not in feed and "<img" not in feed
    parsed = feedparser.parse(feed)
    titles = [entry.title for entry in parsed.entries]
    assert HOSTILE_SUBJECT in titles, titles


def test_the_feed_is_valid_atom_that_feedparser_reads(published: Any) -> None:
    """RFC 4287: id, title, updated, author, self link; entries with id, title, updated, link, content."""
    parsed = feedparser.parse((published.archive / "feed.atom").read_bytes())
    assert not parsed.bozo, parsed.bozo_exception
    assert parsed.version == "atom10"
    feed = parsed.feed
    assert feed.title == "News <b>&</b>"
    assert feed.id.startswith("tag:lists.example.org,")
    assert feed.updated_parsed and feed.author == "News <b>&</b>"
    assert any(link.rel == "self" and link.href.endswith("/archive/news/feed.atom")
               for link in feed.links)
    assert len(parsed.entries) == 2
    newest, oldest = parsed.entries
    assert newest.title == "Big news,"  # the name is empty for the archive
    assert newest.link == f"https://lists.example.org/archive/news/news-{published.public_job}.html"
    assert oldest.link == "https://lists.example.org/archive/news/letter-001.html"
    assert len({entry.id for entry in parsed.entries}) == 2
    for entry in parsed.entries:
        assert entry.updated_parsed and entry.content[0].value
        assert entry.id.startswith("tag:lists.example.org,")
    assert "Online: " in oldest.content[0].value


def test_web_url_is_the_archive_page_when_public_else_a_signed_own_copy(published: Any) -> None:
    """{{ web_url }}: letter 1 (public) links its page; letter 2 and newsletters a signed cgi/view.py link."""
    letters = {str(m["Subject"]): plain_text(m) for m in sent_to(published, ADDRESS)}
    lesson = letters[HOSTILE_SUBJECT]
    assert "Online: https://lists.example.org/archive/news/letter-001.html" in lesson
    private = letters[f"Private lesson for {NAME}"]
    assert re.search(r"https://lists\.example\.org/cgi/view\.py\?s=news&l=2&e=\S+&t=[0-9a-f]{32}",
                     private), private
    big = letters[f"Big news, {NAME}"]
    assert f"/cgi/view.py?s=news&l={published.public_job}&" in big, big


def test_an_archive_switched_off_is_removed_and_comes_back_on(published: Any) -> None:
    """`archive off` removes the pages (they are no longer served); `on` writes them again."""
    assert "is off" in published.ok("archive", "off", "news")
    assert not published.archive.exists()
    published.ok("archive", "on", "news")
    assert (published.archive / "letter-001.html").is_file()
    assert (published.archive / f"news-{published.public_job}.html").is_file()


def test_a_cancelled_public_newsletter_is_never_published(site: Any, tmp_path: Path) -> None:
    """Only a job that ended after its letters went out is published."""
    site.set(archive_dir=str(tmp_path / "archive"))
    site.ok("db", "add", "main")
    site.ok("service", "add", "news", "--db", "main", "--title", "News")
    site.ok("archive", "on", "news")
    site.ok("subscriber", "add", "news", ADDRESS, "--confirmed")
    job = site.ok("newsletter", "create", "--services", "news", "--subject", "Never",
                  "--body", "x", "--public", "--at", "2099-01-01 00:00").strip()
    site.ok("newsletter", "cancel", job)
    site.ok("cron")
    assert not list((tmp_path / "archive" / "news").glob("news-*.html"))
    assert not (site.data.root / "letters" / f"{job}.letter").exists()


# --- served: `vykhukhol serve` and CGI ---------------------------------------------------

class Served(ServeProcess):
    def get(self, path: str, method: str = "GET") -> Page:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=b"" if method == "POST" else None)
            response = conn.getresponse()
            return Page(response.status, {k.lower(): v for k, v in response.getheaders()},
                        response.read())
        finally:
            conn.close()


@pytest.fixture
def server(published: Any, tmp_path: Path) -> Iterator[Served]:
    running = Served(published, free_port(), tmp_path / "serve", ready_path="/archive/news/")
    running.start()
    yield running
    code, _, err = running.stop()
    assert code == 0 and TRACEBACK not in err, err


def local(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def test_serve_serves_the_archive_files_with_their_types(server: Served, published: Any) -> None:
    index = server.get("/archive/news/")
    assert index.status == 200 and index.content_type.startswith("text/html"), index
    assert index.raw == (published.archive / "index.html").read_bytes()
    feed = server.get("/archive/news/feed.atom")
    assert feed.status == 200 and feed.content_type.startswith("application/atom+xml"), feed
    assert not feedparser.parse(feed.raw).bozo
    page = server.get(f"/archive/news/news-{published.public_job}.html")
    assert page.status == 200 and "Big news," in page.body
    assert server.get("/archive/news").status in (301, 302, 303)
    assert server.get("/archive/news/", "HEAD").status == 200
    assert server.get("/archive/news/", "POST").status == 405


def test_serve_serves_nothing_outside_the_archive_or_of_another_shape(
        server: Served, published: Any) -> None:
    """Only archive/<service>/<index|feed|letter-NNN|news-JOB>: no path out, no other file."""
    (published.archive / "notes.txt").write_text("private notes")
    (published.archive / "letter-999.html").symlink_to(published.data.settings)
    for path in ("/archive/", "/archive/news/notes.txt", "/archive/news/.htaccess",
                 "/archive/news/../../data/settings.ini", "/archive/news/%2e%2e/%2e%2e/settings.ini",
                 "/archive/..%2fdata/settings.ini", "/archive/NEWS/index.html",
                 "/archive/news/letter-999.html", "/archive/nosuch/index.html",
                 "/archive/news/index.html/x", "/archive/news/letter-1.html"):
        answer = server.get(path)
        assert answer.status == 404, (path, answer)
        assert "secret" not in answer.body and "private notes" not in answer.body, (path, answer)


def test_the_own_copy_link_of_a_real_letter_shows_that_recipients_letter(
        server: Served, published: Any) -> None:
    """The signed web_url of the private letter shows it with the recipient's name; altered, nothing."""
    private = next(plain_text(m) for m in sent_to(published, ADDRESS)
                   if str(m["Subject"]).startswith("Private lesson"))
    url = re.search(r"https://\S+/cgi/view\.py\?\S+", private).group()
    copy = server.get(local(url))
    assert copy.status == 200, copy
    assert f"Only for you, {NAME}" in copy.body
    assert copy.header("X-Robots-Tag") == "noindex"
    forged = server.get(local(url).replace("l=2", "l=1"))
    assert forged.status == 400 and NAME not in forged.body, forged
    other = server.get(local(url).replace("zina.private", "someone"))
    assert other.status == 400 and NAME not in other.body, other
    assert server.get(local(url), "POST").status == 405
    # The public newsletter's own copy, once published, leads to its archive page.
    big = next(plain_text(m) for m in sent_to(published, ADDRESS)
               if str(m["Subject"]).startswith("Big news"))
    copy = server.get(local(re.search(r"https://\S+/cgi/view\.py\?\S+", big).group()))
    assert copy.status == 200 and f"news-{published.public_job}.html" in copy.body, copy


def test_the_own_copy_page_works_as_a_cgi_script(published: Any, tmp_path: Path) -> None:
    """cgi/view.py run as mod_cgi runs it: the same page, from the letter's link."""
    from support.cgikit import copy_checkout, parse_cgi

    root = tmp_path / "install"
    copy_checkout(root)
    (root / "cgi" / "vykhukhol.path").write_text(f"{published.data.root}\n", encoding="utf-8")
    private = next(plain_text(m) for m in sent_to(published, ADDRESS)
                   if str(m["Subject"]).startswith("Private lesson"))
    query = urlsplit(re.search(r"https://\S+/cgi/view\.py\?\S+", private).group()).query
    script = root / "cgi" / "view.py"
    environ = {"GATEWAY_INTERFACE": "CGI/1.1", "SERVER_NAME": "localhost", "SERVER_PORT": "80",
               "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": "GET",
               "SCRIPT_NAME": "/cgi/view.py", "QUERY_STRING": query, "REMOTE_ADDR": "127.0.0.1",
               "PATH": os.environ["PATH"], "PYTHONPATH": "", "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([str(script)], env=environ, capture_output=True, cwd=script.parent,
                          timeout=60)
    page = parse_cgi(done.stdout, done.stderr)
    assert page.status == 200 and f"Only for you, {NAME}" in page.body, page
    environ["QUERY_STRING"] = query.replace("t=", "t=0")
    done = subprocess.run([str(script)], env=environ, capture_output=True, cwd=script.parent,
                          timeout=60)
    page = parse_cgi(done.stdout, done.stderr)
    assert page.status == 400 and NAME not in page.body, page
