"""The web copy of a letter in the reader's language (docs/using/archive.md#archive-languages):
a Russian site whose letters are written in English too, real sender runs
(`vykhukhol cron`), the `web_url` links taken from the letters each reader
got, followed through the real cgi/view.py as mod_cgi starts it, and the
archive's files read as they are served."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from support.webkit import run_cgi
from support.webtools import plain_text
from vykhukhol import services as svc
from vykhukhol.services import due_summary
from vykhukhol.services import subscribers as subs
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now

ANNA, BORIS = "anna@example.org", "boris@example.org"  # she reads English; he has no language
VIEW = re.compile(r"https?://\S+/cgi/view\.py\?\S+")


def reader(site: Any, email: str, language: str | None) -> None:
    back = now() - timedelta(hours=1)
    sub = subs.Subscriber(email, email.split("@")[0].title(), SubscriberState.ACTIVE, back, back,
                          ip="127.0.0.1")
    subs.add(svc.find_service(site.data, "news").subscribers_path, sub.with_language(language))
    due_summary.forget_due(site.data, "news")


def letters(site: Any, email: str) -> dict[str, str]:
    """The text of each letter ``email`` got, by subject."""
    return {str(m["Subject"]): plain_text(m) for m in site.outbox() if email in str(m["To"])}


@pytest.fixture
def sent(site: Any, tmp_path: Path) -> Any:
    """Letter 1 public, letter 2 private, a public and a private newsletter, each
    written in Russian and English; everything gone out."""
    site.set(archive_dir=str(tmp_path / "archive"), language="ru")
    site.service("news", letters=[])
    for n in (1, 2):
        site.ok("letter", "add", "news", "--subject", f"Урок {n}", "--delay", "0s",
                "--body", f"Урок {n} для {{{{ name }}}}: {{{{ web_url }}}}",
                "--subject-en", f"Lesson {n}", "--body-en", f"Lesson {n} for {{{{ name }}}}: {{{{ web_url }}}}",
                *(["--public"] if n == 1 else []))
    site.ok("archive", "on", "news")
    reader(site, ANNA, "en")
    reader(site, BORIS, None)
    for _ in range(2):
        site.ok("cron")
    for public in (True, False):
        site.ok("newsletter", "create", "--services", "news", "--subject", f"Новости {public}",
                "--body", "Новости: {{ web_url }}", "--subject-en", f"News {public}",
                "--body-en", "News: {{ web_url }}", *(["--public"] if public else []))
    site.ok("cron")
    site.archive = tmp_path / "archive" / "news"
    return site


def web_url(text: str) -> str:
    return re.search(r"https?://\S+", text.split(": ", 1)[1]).group()


def view(site: Any, url: str) -> Any:
    page = run_cgi(site, "cgi/view.py", query=urlsplit(url).query)
    assert page.status == 200, page
    return page


def test_the_copy_in_the_browser_of_a_private_letter_is_in_the_readers_language(sent) -> None:
    anna, boris = letters(sent, ANNA), letters(sent, BORIS)
    link = web_url(anna["Lesson 2"])
    assert parse_qs(urlsplit(link).query)["hl"] == ["en"]
    page = view(sent, link)
    assert "Lesson 2 for Anna" in page.body and "Урок" not in page.body
    assert '<html lang="en">' in page.body
    page = view(sent, web_url(boris["Урок 2"]))
    assert "Урок 2 для Boris" in page.body and '<html lang="ru">' in page.body
    # hl is not signed: it changes which of the letter's own versions is shown, nothing else
    page = view(sent, web_url(boris["Урок 2"]) + "&hl=en")
    assert "Lesson 2 for Boris" in page.body
    # The private newsletter, the same way: each reader's body.
    page = view(sent, VIEW.search(anna["News False"]).group())
    assert "News:" in page.body and "Новости" not in page.body
    assert "Новости:" in view(sent, VIEW.search(boris["Новости False"]).group()).body


def test_the_public_archive_lists_a_letter_once_and_offers_its_other_language(sent) -> None:
    anna, boris = letters(sent, ANNA), letters(sent, BORIS)
    assert web_url(anna["Lesson 1"]).endswith("/archive/news/letter-001.en.html")
    assert web_url(boris["Урок 1"]).endswith("/archive/news/letter-001.html")
    english = (sent.archive / "letter-001.en.html").read_text(encoding="utf-8")
    russian = (sent.archive / "letter-001.html").read_text(encoding="utf-8")
    assert '<html lang="en">' in english and "<h1>Lesson 1</h1>" in english
    assert "Lesson 1 for :" in english  # rendered for nobody: no name
    assert 'href="letter-001.html" hreflang="ru" lang="ru">Русский</a>' in english
    assert '<html lang="ru">' in russian and "<h1>Урок 1</h1>" in russian
    assert 'href="letter-001.en.html" hreflang="en" lang="en">English</a>' in russian
    index = (sent.archive / "index.html").read_text(encoding="utf-8")
    assert index.count('href="letter-001.html"') == 1 and index.count("Урок 1") == 1
    assert index.count('href="letter-001.en.html"') == 1 and "Lesson 1" not in index
    assert "letter-002" not in index
    jobs = sorted(p.name for p in sent.archive.glob("news-*.html"))
    assert len(jobs) == 2 and jobs[0].endswith(".en.html"), jobs
    assert "News True" in (sent.archive / jobs[0]).read_text(encoding="utf-8")
    assert index.count(f'href="{jobs[1]}"') == 1 and index.count(f'href="{jobs[0]}"') == 1
    feed = (sent.archive / "feed.atom").read_text(encoding="utf-8")
    assert feed.count("<entry>") == 2 and "Lesson 1" not in feed
    # The public newsletter's copy "in the browser" leads to the page of Anna's language.
    page = view(sent, VIEW.search(anna["News True"]).group())
    assert "News:" in page.body and f'{jobs[0]}"' in page.body
