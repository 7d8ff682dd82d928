"""Vykhukhol behind a real Apache with mod_cgi, installed as docs/deploying/apache.md#deploy-apache says.

A throwaway Apache (prefork MPM + mod_cgi, the shared-hosting classic) listens
on a loopback port and serves a copy of the checkout uploaded the way a site
owner does it: lib/, cgi/, admin/ and the data/ skeleton copied byte by byte
(an FTP upload keeps no modes), the dependencies vendored into lib/, the
scripts made executable, the notes' .htaccess files written, `vykhukhol init`
run, and the data directory handed to the web server's user. The server is
configured like a shared host, not for Vykhukhol: it allows .htaccess
overrides, lists folders that have no index (Debian's stock Options), and
runs CGI only where an .htaccess asks for it.

Through it a subscriber goes the whole way — subscribe, the confirmation
letter at a real SMTP server, the confirm button, the cron URL fetched by the
real wget, letter 1, the one-click unsubscribe — and strangers are refused
the data directory, the library's sources, the folder listing that would
show the cron script's secret name, and the shipped cron name. A second
installation keeps its data outside the web root, found through
cgi/vykhukhol.path.

Run as root (as CI does), Apache runs its children as www-data, so the CGI
scripts need a Python that www-data can execute: the test's own interpreter
when www-data can reach it, else /usr/bin/python3 (pyenv's Python under /root,
mode 700, is out of reach, and the test does not open /root up). Either way
the dependencies come from lib/, as on a host without pip. The installation
lives in its own /tmp folder (o+x so www-data can pass, removed at teardown),
not pytest's tmp_path: every pytest session that starts resets
/tmp/pytest-of-<user> to mode 700, which locked www-data out mid-test.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from support.apachekit import (
    APACHE,
    WGET,
    Site,
    cron_by_wget_sends_lesson_one,
    fetch,
    served,
    subscribe_and_confirm,
)

pytestmark = pytest.mark.skipif(
    not APACHE.exists(), reason="Apache is not installed (/usr/sbin/apache2 missing; apt-get install apache2)")


# --- the installation, step by step as in docs/deploying/apache.md#deploy-apache ---


# --- HTTP ---------------------------------------------------------------------------


# --- a served installation -------------------------------------------------------------


@pytest.fixture(scope="module")
def apache_outside() -> Iterator[Site]:
    """Data outside the web root, named in cgi/vykhukhol.path."""
    with served(data_outside=True) as site:
        yield site


# --- the tests --------------------------------------------------------------------------


def test_a_subscriber_goes_the_whole_way_through_apache_and_wget(apache: Site, smtp_server) -> None:
    """Subscribe, confirm, a cron run fetched by wget and a one-click unsubscribe all work under mod_cgi."""
    address = "reader@example.com"
    subscribe_and_confirm(apache, smtp_server, address)
    lesson = cron_by_wget_sends_lesson_one(apache, smtp_server, address)
    assert "List-Unsubscribe-Post" not in lesson  # an http site: no one-click (RFC 8058 3.1)
    unsubscribe_url = re.match(r"<(\S+)>, <mailto:", str(lesson["List-Unsubscribe"])).group(1)
    assert unsubscribe_url.startswith(f"{apache.base}/cgi/unsubscribe.py?"), unsubscribe_url

    # RFC 8058: the mail client POSTs this body to the URL; the fields are in its query.
    gone = fetch(unsubscribe_url, "List-Unsubscribe=One-Click")
    assert gone.status == 200, (gone, apache.error_log())
    assert apache.subscriber_states("news") == {}
    assert "Traceback" not in apache.error_log()


@pytest.mark.parametrize("path", ["/data/settings.ini", "/data/services/",
                                  "/data/services/main/news/subscribers.txt", "/data/.htaccess"])
def test_the_data_directory_is_refused_to_strangers(apache: Site, path: str) -> None:
    """The shipped data/.htaccess keeps settings, secrets and subscriber files off the web."""
    assert (apache.data / "settings.ini").exists()
    answer = fetch(apache.base + path)
    assert answer.status in (403, 404), answer
    assert "secret" not in answer.body.lower(), answer
    assert "@" not in answer.body, answer


@pytest.mark.parametrize("path", ["/lib/vykhukhol/settings/__init__.py", "/lib/", "/lib/jinja2/__init__.py"])
def test_the_library_is_not_served_as_source(apache: Site, path: str) -> None:
    """lib/ (the package and the vendored dependencies) answers 403, never Python source."""
    answer = fetch(apache.base + path)
    assert answer.status in (403, 404), answer
    assert "import" not in answer.body, answer


def test_the_cgi_folder_does_not_list_the_secret_cron_script(apache: Site) -> None:
    """A folder listing of cgi/ would hand strangers the renamed cron script's name."""
    name = urlsplit(apache.cron_url).path.rsplit("/", 1)[-1]
    answer = fetch(f"{apache.base}/cgi/")
    assert answer.status in (403, 404), answer
    assert name not in answer.body, answer


def test_the_shipped_cron_name_is_gone_after_init(apache: Site) -> None:
    """`vykhukhol init` renamed cgi/cron.py, so its guessable URL answers 404."""
    assert urlsplit(apache.cron_url).path.startswith("/cgi/cron-"), apache.cron_url
    assert fetch(f"{apache.base}/cgi/cron.py").status == 404
    assert fetch(apache.cron_url).status == 200


def test_the_scripts_run_as_programs_and_never_show_their_source(apache: Site) -> None:
    """The admin (at /admin/, through DirectoryIndex) and the link pages run as programs, never show their text."""
    for path in ("/admin/", "/cgi/unsubscribe.py?s=news&e=x%40example.com&t=bad",
                 "/cgi/go.py?l=20261201-090000-abcdef&n=1&t=bad"):  # go.py: a 400 page, no redirect
        answer = fetch(apache.base + path)
        assert answer.status < 500, (path, answer, apache.error_log())
        if path.startswith("/cgi/go.py"):
            assert answer.status == 400 and "location" not in answer.headers, (answer, apache.error_log())
        assert answer.headers.get("content-type", "").startswith("text/html"), (path, answer)
        assert "sys.path.insert" not in answer.body, (path, answer)


def test_data_outside_the_web_root_is_found_through_vykhukhol_path(apache_outside: Site) -> None:
    """With cgi/vykhukhol.path naming a folder outside the web root, scripts and CLI use it and the pointer stays private."""
    site = apache_outside
    assert not (site.install / "data" / "settings.ini").exists()
    answer = fetch(f"{site.base}/cgi/subscribe.py", {"service": "news", "email": "far@example.com"})
    assert answer.status == 200, (answer, site.error_log())
    deadline = time.monotonic() + 10  # stored and asked to confirm after the answer
    while not list((site.data / "outbox").glob("*.eml")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(list((site.data / "outbox").glob("*.eml"))) == 1
    assert site.subscriber_states("news") == {"far@example.com": "new"}
    assert "far@example.com" in site.cli("subscriber", "list", "news")

    pointer = fetch(f"{site.base}/cgi/vykhukhol.path")
    assert pointer.status in (403, 404), pointer
    assert str(site.data) not in pointer.body, pointer
    run = subprocess.run([WGET, "-q", "-t", "1", "-O", "-", site.cron_url],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.startswith("run "), (run, site.error_log())


def test_the_public_archive_is_served_as_static_files_and_nothing_else(apache: Site) -> None:
    """archive/.htaccess (docs/using/archive.md#archive): the run (the cron URL, as
    the web user) writes the archive; Apache serves its pages and feed, and refuses
    its .htaccess, other files, scripts and a listing."""
    import feedparser

    site = apache
    site.cli_batch(
        ("settings", "set", "mail.transport", "outbox"),
        ("service", "add", "digest", "--db", "main", "--title", "Digest <b>&</b>"),
        ("letter", "add", "digest", "--subject", "Public <script>one</script>", "--delay", "0s",
         "--body", "Hello {{ name }} <{{ email }}>, online: {{ web_url }}", "--public",
         "--subject-ru", "Открытое письмо", "--body-ru", "Здравствуйте, {{ web_url }}"),
        ("archive", "on", "digest"),
        ("subscriber", "add", "digest", "apache.reader@example.com", "--name", "Apache Reader",
         "--confirmed"),
        ("service", "enable", "digest"))
    run = subprocess.run([WGET, "-q", "-t", "1", "-O", "-", site.cron_url],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "handed over 1 for digest" in run.stdout, (run, site.error_log())
    base = f"{site.base}/archive/digest/"
    index = fetch(base)
    assert index.status == 200 and index.headers["content-type"].startswith("text/html"), index
    assert 'href="letter-001.html"' in index.body and "<script>" not in index.body, index
    page = fetch(base + "letter-001.html")
    assert page.status == 200 and "Public &lt;script&gt;one&lt;/script&gt;" in page.body, page
    # its version in Russian (docs/using/archive.md#archive-languages), linked from the index
    assert 'href="letter-001.ru.html"' in index.body, index
    russian = fetch(base + "letter-001.ru.html")
    assert russian.status == 200 and "Открытое письмо" in russian.body, russian
    assert fetch(base + "letter-001.de.html").status in (403, 404)
    feed = fetch(base + "feed.atom")
    assert feed.status == 200, feed
    assert feed.headers["content-type"].startswith("application/atom+xml"), feed
    parsed = feedparser.parse(feed.body)
    assert not parsed.bozo and [e.link for e in parsed.entries] == [base + "letter-001.html"]
    for answer in (index, page, feed):
        assert "apache.reader" not in answer.body and "Apache Reader" not in answer.body

    folder = site.install / "archive" / "digest"
    (folder / "notes.txt").write_text("private notes\n")
    (folder / "evil.py").write_text("#!/usr/bin/env python3\nprint('Content-Type: text/plain')\n"
                                    "print()\nprint('RAN')\n")
    (folder / "evil.py").chmod(0o755)
    for path in ("/archive/", "/archive/.htaccess", "/archive/digest/.htaccess",
                 "/archive/digest/notes.txt", "/archive/digest/evil.py",
                 "/archive/digest/letter-1.html"):
        answer = fetch(site.base + path)
        assert answer.status in (403, 404), (path, answer)
        for leak in ("RAN", "print(", "private notes", "Require", "letter-001"):
            assert leak not in answer.body, (path, answer)
    assert "Traceback" not in site.error_log()


def test_a_bot_gets_the_persons_answer_under_mod_cgi_and_the_puzzle_holds(apache: Site) -> None:
    """A post faster than a person (the form's own stamp sent back at once) is
    answered as a person's and stores nothing; with subscribe_challenge on, a
    post without a solved puzzle likewise, and one with it subscribes
    (docs/using/subscriber-pages.md#subscriber-bots)."""
    import base64
    import json

    import altcha

    form = f"{apache.base}/cgi/subscribe.py"

    def stamp_of(page) -> str:
        return re.search(r'name="ts" value="([^"]+)"', page.body).group(1)

    fresh = stamp_of(fetch(f"{form}?service=news"))
    bot = fetch(form, {"service": "news", "email": "apache.bot@example.com", "ts": fresh})
    assert bot.status == 200, (bot, apache.error_log())
    apache.cli("settings", "set", "subscribe_challenge", "on")
    try:
        page = fetch(f"{form}?service=news")
        assert "part=widget.js" in page.body, page
        time.sleep(2.1)  # a person's pace
        lazy = fetch(form, {"service": "news", "email": "apache.lazy@example.com",
                            "ts": stamp_of(page)})
        puzzle = json.loads(fetch(f"{form}?part=start").body)["challenge"]
        found = altcha.solve_challenge_v1(puzzle["challenge"], puzzle["salt"], "SHA-256",
                                          puzzle["maxNumber"])
        solved = base64.b64encode(json.dumps(
            {**{k: puzzle[k] for k in ("algorithm", "challenge", "salt", "signature")},
             "number": found.number}).encode()).decode()
        person = fetch(form, {"service": "news", "email": "apache.person@example.com",
                              "ts": stamp_of(page), "altcha": solved})
    finally:
        apache.cli("settings", "set", "subscribe_challenge", "off")
    assert bot.body.replace("apache.bot", "X") == lazy.body.replace("apache.lazy", "X") \
        == person.body.replace("apache.person", "X"), (person, apache.error_log())
    states = apache.subscriber_states("news")
    assert "apache.person@example.com" in states, apache.error_log()
    assert "apache.bot@example.com" not in states and "apache.lazy@example.com" not in states


def test_the_api_answers_json_through_apache(apache: Site) -> None:
    """The API as a CGI script under mod_cgi (docs/using/api.md#api-tokens): the
    token in X-Api-Key reaches it, a refusal is JSON, never an HTML page."""
    import json
    import urllib.error
    import urllib.request

    key = apache.cli("token", "add", "apache-test", "--scopes", "read,subscribe").splitlines()[-1].strip()

    def call(method: str, path: str, body: dict | None = None, token: str = key) -> tuple[int, dict]:
        request = urllib.request.Request(f"{apache.base}/cgi/api.py{path}", method=method,
                                         data=None if body is None else json.dumps(body).encode())
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("X-Api-Key", token)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            assert exc.headers["Content-Type"].startswith("application/json"), apache.error_log()
            return exc.code, json.loads(exc.read())

    status, body = call("GET", "/v1/services")
    assert status == 200 and "news" in [s["name"] for s in body["services"]], (body, apache.error_log())
    assert call("GET", "/v1/services", token="")[0] == 401
    status, body = call("POST", "/v1/subscribers", {"service": "news", "email": "api@example.com", "x": 1})
    assert status == 422 and body["error"]["code"] == "unknown_field"
    status, body = call("POST", "/v1/subscribers", {"service": "news", "email": "api@example.com"})
    assert status == 202, (body, apache.error_log())
    assert apache.subscriber_states("news").get("api@example.com") == "new"
