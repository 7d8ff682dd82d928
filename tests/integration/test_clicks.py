"""Clicks counted without spying (docs/using/clicks.md#clicks): letters made by the real
sender into the outbox, their links followed as a reader would — over real
HTTP to a ``vykhukhol serve`` subprocess, and as a CGI process of cgi/go.py
the way mod_cgi starts it — and the counts read back from
``vykhukhol newsletter history --json``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from support.webflowkit import Server
from support.webtools import (
    TRACEBACK,
    Page,
    assert_security_headers,
    free_port,
    path_of,
    plain_text,
)
from vykhukhol import tokens

CHECKOUT = Path(__file__).resolve().parents[2]
TEXT = ("Read https://example.org/post?a=1&b=2 and (https://example.org/about).\n"
        "Again: https://example.org/post?a=1&b=2\n"
        "Write to mailto:owner@example.org or try javascript:alert(1)\n"
        "Yours: https://example.org/u?e={{ email }}\n"
        "Leave: {{ unsubscribe_url }}\n")
HTML = ('<p><a href="https://example.org/post?a=1&amp;b=2">the post</a>, '
        '<a href="mailto:owner@example.org">mail</a>, <a href="javascript:alert(1)">js</a>, '
        "<a href='https://пример.рф/путь'>ru</a>, <img src=\"https://example.org/pixel.png\">, "
        '<a href="{{ unsubscribe_url }}">leave</a></p>')
POST, ABOUT, RUSSIAN = ("https://example.org/post?a=1&b=2", "https://example.org/about",
                        "https://%D0%BF%D1%80%D0%B8%D0%BC%D0%B5%D1%80.%D1%80%D1%84/%D0%BF%D1%83%D1%82%D1%8C")
GO = re.compile(r"https?://[^\s\"'<>]+/cgi/go\.py\?l=[a-z0-9_.-]+&(?:amp;)?n=\d+&(?:amp;)?t=[0-9a-f]{32}")


@pytest.fixture
def server(site, tmp_path: Path) -> Iterator[Server]:
    port = free_port()
    site.set(site_url=f"http://127.0.0.1:{port}", language="en")
    site.service("news")
    for address in ("anna@example.org", "boris@example.org"):
        site.subscriber("news", address)
    served = Server(site, port, tmp_path / "serve")
    served.start()
    yield served
    code, _, err = served.stop()
    assert code == 0, err
    assert TRACEBACK not in err, err


def newsletter(site, tmp_path: Path, *flags: str) -> str:
    (tmp_path / "body.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "body.html").write_text(HTML, encoding="utf-8")
    job = site.cli("newsletter", "create", "--services", "news", "--subject", "News",
                   "--body-file", str(tmp_path / "body.txt"), "--html-file",
                   str(tmp_path / "body.html"), *flags).stdout.strip()
    site.run_at()
    return job


def letters_of(site, subject: str = "News") -> list:
    return [m for m in site.outbox() if str(m["Subject"]) == subject]


def parts(message) -> tuple[str, str]:
    html = message.get_body(("html",))
    return plain_text(message), html.get_content() if html else ""


def history(site) -> dict:
    return {entry["job"]: entry for entry in json.loads(
        site.cli("newsletter", "history", "--json").stdout)}


def go_cgi(site, query: str, method: str = "GET") -> Page:
    """cgi/go.py of the checkout as mod_cgi runs it: a process, a CGI environment."""
    script = CHECKOUT / "cgi" / "go.py"
    env = {"GATEWAY_INTERFACE": "CGI/1.1", "SERVER_NAME": "localhost", "SERVER_PORT": "80",
           "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": method, "SCRIPT_NAME": "/cgi/go.py",
           "SCRIPT_FILENAME": str(script), "QUERY_STRING": query, "REMOTE_ADDR": "127.0.0.1",
           "PATH": os.environ["PATH"], "VYKHUKHOL_DATA": str(site.root)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, timeout=60)
    head, _, body = done.stdout.partition(b"\r\n\r\n")
    headers = dict(line.split(": ", 1) for line in head.decode("latin-1").split("\r\n"))
    return Page(int(headers.pop("Status").split()[0]), {k.lower(): v for k, v in headers.items()},
                body, done.stderr.decode())


def test_a_counted_newsletter_redirects_to_its_own_links_and_counts_them(site, server,
                                                                          tmp_path) -> None:
    job = newsletter(site, tmp_path, "--clicks")
    letters = letters_of(site)
    assert len(letters) == 2
    text, html = parts(letters[0])
    links = GO.findall(text)
    assert len(links) == 3, text  # the post (once, twice written), the about page, … and the post again
    assert links[0] == links[2] and links[0] != links[1]
    assert "(http" in text and links[1] + ")." in text  # the bracket and the stop stay outside
    # Never rewritten: other schemes, links made of template values, images.
    assert "mailto:owner@example.org" in text and "javascript:alert(1)" in text
    assert "https://example.org/u?e=anna@example.org" in text or \
        "https://example.org/u?e=boris@example.org" in text
    assert "/cgi/unsubscribe.py?" in text
    assert 'href="mailto:owner@example.org"' in html and 'href="javascript:alert(1)"' in html
    assert 'src="https://example.org/pixel.png"' in html and "/cgi/unsubscribe.py?" in html
    html_links = [link.replace("&amp;", "&") for link in GO.findall(html)]
    assert html_links[0] == links[0] and len(html_links) == 2  # the same post: the same number
    # Every recipient's letter has the same links: nothing in them names a reader.
    assert GO.findall(parts(letters[1])[0]) == links

    answers = [server.get(path_of(link)) for link in (links[0], links[0], links[1], html_links[1])]
    assert [a.status for a in answers] == [302] * 4, answers
    assert [a.header("Location") for a in answers] == [POST, POST, ABOUT, RUSSIAN]
    assert_security_headers(answers[0])
    assert server.head(path_of(links[1])).status == 302  # answered, not counted

    entry = history(site)[job]
    assert entry["clicks"] == 4
    assert entry["links"] == [{"number": 1, "url": POST, "clicks": 2},
                              {"number": 2, "url": ABOUT, "clicks": 1},
                              {"number": 3, "url": RUSSIAN, "clicks": 1}]
    plain = site.cli("newsletter", "history").stdout.splitlines()
    assert plain[0].split("\t")[9] == "clicks" and plain[1].split("\t")[9] == "4"
    # Aggregates only: the hour, the link's number and its clicks, nothing of the reader.
    counted = (site.data.clicks / f"{job}.counts").read_text()
    assert re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d\t[123]\t[12]\n){3,6}", counted), counted
    assert "127.0.0.1" not in counted and "@" not in counted


def altered(link: str, **changes: str) -> str:
    split = urlsplit(link)
    fields = {k: v[0] for k, v in parse_qs(split.query).items()}
    fields.update(changes)
    return f"{split.path}?{urlencode(fields)}"


def test_an_altered_or_unknown_link_is_a_400_page_and_leads_nowhere(site, server, tmp_path) -> None:
    job = newsletter(site, tmp_path, "--clicks")
    link = GO.findall(parts(letters_of(site)[0])[0])[0]
    token = parse_qs(urlsplit(link).query)["t"][0]
    forged = tokens.click_token(b"not the site's secret" * 2, job, 1)
    for path in (altered(link, t="0" * 32), altered(link, t=forged),  # a bad signature
                 altered(link, n="2"), altered(link, n="7"),  # another number, its token kept
                 altered(link, l="20200101-000000-abcdef"),  # another letter
                 altered(link, n="1x"), altered(link, t=token + "x"), "/cgi/go.py",
                 altered(link, n="0")):
        page = server.get(path)
        assert page.status == 400, (path, page)
        assert "location" not in page.headers
        assert "This link leads nowhere" in page.body and "<style>" in page.body, page.body
        assert_security_headers(page)
    # A link that was never signed for this letter cannot name its links either.
    own = tokens.click_link("", site.settings().secret, job, 2)
    assert server.get(own).status == 302  # the control: the real token of link 2 works
    assert history(site)[job]["clicks"] == 1  # only that one counted
    assert server.post(path_of(link), b"").status == 405


def test_off_by_default_nothing_is_rewritten_or_stored(site, server, tmp_path) -> None:
    job = newsletter(site, tmp_path)
    text, html = parts(letters_of(site)[0])
    assert not GO.search(text) and not GO.search(html)
    assert "https://example.org/post?a=1&b=2" in text
    assert not site.data.clicks.exists()
    entry = history(site)[job]
    assert entry["clicks"] is None and entry["links"] == []
    assert server.get(tokens.click_link("", site.settings().secret, job, 1)).status == 400


def test_a_series_letter_with_clicks_yes_is_counted_as_a_cgi_process(site, tmp_path) -> None:
    site.set(language="ru")
    site.service("course")
    site.cli("letter", "add", "course", "--subject", "Урок", "--delay", "0s",
             "--body", "Читайте https://example.org/lesson-1, пишите mailto:a@example.org", "--clicks")
    assert "Clicks: yes" in (site.data.root / "services/main/course/letters/001.txt").read_text()
    site.subscriber("course", "vera@example.org")
    site.run_at()
    (link,) = GO.findall(plain_text(site.outbox()[0]))
    assert "mailto:a@example.org" in plain_text(site.outbox()[0])
    letter = parse_qs(urlsplit(link).query)["l"][0]
    assert re.fullmatch(r"course\.1\.[0-9a-f]{12}", letter), letter

    answer = go_cgi(site, urlsplit(link).query)
    assert answer.status == 302 and answer.header("Location") == "https://example.org/lesson-1", answer
    assert go_cgi(site, urlsplit(link).query, "HEAD").status == 302
    refused = go_cgi(site, urlsplit(link).query.replace("&n=1", "&n=2"))
    assert refused.status == 400 and "location" not in refused.headers, refused
    assert "Ссылка никуда не ведёт" in refused.body, refused.body  # the site's language
    assert TRACEBACK not in answer.stderr + refused.stderr
    counted = (site.data.clicks / f"{letter}.counts").read_text()
    assert counted.count("\n") == 1 and counted.endswith("\t1\n")  # the GET, not the HEAD

    # A letter whose links are edited is a new letter: the old link keeps its target.
    site.cli("letter", "remove", "course", "1")
    site.cli("letter", "add", "course", "--subject", "Урок", "--delay", "0s",
             "--body", "Теперь https://example.org/lesson-2", "--clicks")
    site.subscriber("course", "gleb@example.org")
    site.run_at()
    (new,) = GO.findall(plain_text(site.outbox()[-1]))
    assert parse_qs(urlsplit(new).query)["l"][0] != letter
    assert go_cgi(site, urlsplit(link).query).header("Location") == "https://example.org/lesson-1"
    assert go_cgi(site, urlsplit(new).query).header("Location") == "https://example.org/lesson-2"


def test_clicks_of_processes_at_the_same_moment_are_each_counted_once(site, tmp_path) -> None:
    """Twelve CGI processes of one link started together: twelve clicks counted."""
    from vykhukhol.newsletters import clicks

    clicks.prepare(site.data, "http://localhost", site.settings().secret, "job-1",
                   "https://example.org/a https://example.org/b", None)
    script = CHECKOUT / "cgi" / "go.py"
    env = {"GATEWAY_INTERFACE": "CGI/1.1", "REQUEST_METHOD": "GET", "SCRIPT_NAME": "/cgi/go.py",
           "PATH": os.environ["PATH"], "VYKHUKHOL_DATA": str(site.root),
           "QUERY_STRING": urlsplit(tokens.click_link("", site.settings().secret, "job-1", 2)).query}
    started = [subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE) for _ in range(12)]
    answers = [process.communicate(timeout=120) for process in started]
    assert all(out.startswith(b"Status: 302") and not err for out, err in answers), answers[0]
    assert [link.clicks for link in clicks.counts(site.data, "job-1")] == [0, 12]
    assert re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d\t2\t\d+\n){1,2}",
                        (site.data.clicks / "job-1.counts").read_text())


def test_the_clicks_of_a_newsletters_second_body_count_in_its_history(site, tmp_path) -> None:
    """A newsletter in two languages: each body's links are counted under a letter of
    its own, and the history and the admin's list show the job's clicks of both."""
    from datetime import timedelta

    from vykhukhol import services as svc
    from vykhukhol.services import subscribers as subs
    from vykhukhol.states import SubscriberState
    from vykhukhol.timeutil import now

    site.set(language="en")
    site.service("news")
    site.subscriber("news", "anna@example.org")
    back = now() - timedelta(hours=1)
    boris = subs.Subscriber("boris@example.org", "", SubscriberState.ACTIVE, back, back,
                            ip="127.0.0.1").with_language("ru")
    subs.add(svc.find_service(site.data, "news").subscribers_path, boris)
    job = site.cli("newsletter", "create", "--services", "news", "--subject", "News", "--body",
                   f"Read {POST} and {ABOUT}", "--subject-ru", "Новости", "--body-ru",
                   f"Читайте {ABOUT} и https://example.org/ru", "--clicks").stdout.split()[0]
    site.run_at()
    english = GO.findall(plain_text(letters_of(site)[0]))
    russian = GO.findall(plain_text(letters_of(site, "Новости")[0]))
    assert parse_qs(urlsplit(russian[0]).query)["l"][0] == f"{job}.ru"
    for link in (english[0], english[1], russian[0], russian[1], russian[1]):
        assert go_cgi(site, urlsplit(link).query).status == 302

    entry = history(site)[job]
    assert entry["clicks"] == 5
    assert entry["links"] == [{"number": 1, "url": POST, "clicks": 1},
                              {"number": 2, "url": ABOUT, "clicks": 2},
                              {"number": 3, "url": "https://example.org/ru", "clicks": 2}]
    assert site.cli("newsletter", "history").stdout.splitlines()[1].split("\t")[9] == "5"
