"""Letters from the site's feed (docs/using/feeds.md#feeds): a local HTTP
server on loopback serves the feed; the sender's runs read it at most once
per ``every``, turn each new item into one newsletter to the service's
confirmed subscribers, and never send an item twice — changed items, broken
feeds, and a real ``vykhukhol cron`` killed with SIGKILL between the record
and the newsletter included."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from support import webkit
from support.feedkit import FeedServer, atom, rss
from support.servetools import subprocess_env
from support.webkit import Browser
from vykhukhol.newsletters import feeds
from vykhukhol.timeutil import now

LIB = Path(__file__).resolve().parents[2] / "lib"
served = webkit.served  # the fixture: a real `vykhukhol serve`


@pytest.fixture
def blog():
    server = FeedServer()
    yield server
    server.close()


def to(message) -> str:
    return message["To"].addresses[0].addr_spec


def letters(site, subject: str) -> list[str]:
    return sorted(to(m) for m in site.outbox() if str(m["Subject"]) == subject)


def following(site, blog, **kw):
    site.service("news")
    site.subscriber("news", "ann@example.org", "Ann")
    site.subscriber("news", "bob@example.org", "Bob")
    site.subscriber("news", "new@example.org", state="new")
    blog.body = rss(("p1", "Old post", "Was there before"))
    site.ok("service", "feed", "news", blog.url, "--every", "1h", **kw)


def test_the_first_read_marks_what_is_there_and_a_new_item_is_one_newsletter(site, blog):
    following(site, blog)
    start = now()
    site.run_at(start)
    assert site.outbox() == []  # the old post is marked as seen, not sent
    assert "first read, 1 item there marked as seen" in site.log()
    blog.body = rss(("p2", "Fresh {{ 7*7 }} post", "<p>About <b>ducks</b> &amp; geese</p>"),
                    ("p1", "Old post", "Was there before"))
    site.run_at(start + timedelta(minutes=30))
    assert len(blog.requests) == 1  # not due yet: read at most once an hour
    site.run_at(start + timedelta(hours=1, minutes=1))  # read: the newsletter is made
    site.run_at(start + timedelta(hours=1, minutes=2))  # sent
    subject = "Fresh {{ 7*7 }} post"  # the feed's text is data, never template code
    assert letters(site, subject) == ["ann@example.org", "bob@example.org"]
    [letter] = [m for m in site.outbox() if to(m) == "ann@example.org"
                and str(m["Subject"]) == subject]
    text = letter.get_body(("plain",)).get_content()
    assert "About ducks & geese" in text and "https://blog.example.org/p2" in text
    assert "unsubscribe" in text.lower() and letter["List-Unsubscribe"]
    for hours in (3, 5):
        site.run_at(start + timedelta(hours=hours))
    assert letters(site, subject) == ["ann@example.org", "bob@example.org"]
    assert blog.requests[-1].get("If-None-Match")  # conditional GET with the last ETag


def test_a_changed_item_sends_nothing_and_an_unchanged_feed_costs_a_304(site, blog):
    following(site, blog)
    start = now()
    site.run_at(start)
    blog.body = rss(("p1", "Old post, edited", "Now longer"))
    site.run_at(start + timedelta(hours=2))
    site.run_at(start + timedelta(hours=4))
    assert site.outbox() == []
    assert [r.get("If-None-Match") is not None for r in blog.requests] == [False, True, True]


def test_the_owners_template_says_the_item_in_its_words(site, blog, tmp_path):
    template = tmp_path / "letter.txt"
    template.write_text("Subject: New on the blog: {{ title }}\n\nHello {{ name }}!\n"
                        "{{ title|upper }} — {{ link }}\n{{ unsubscribe_url }}\n")
    following(site, blog, )
    site.ok("service", "feed", "news", blog.url, "--template", str(template))
    start = now()
    site.run_at(start)
    blog.body = rss(("p9", "Весна", "Текст"), ("p1", "Old post", "Was there before"))
    site.run_at(start + timedelta(hours=2))
    site.run_at(start + timedelta(hours=2, minutes=1))
    [letter] = [m for m in site.outbox() if to(m) == "ann@example.org"]
    assert str(letter["Subject"]) == "New on the blog: Весна"
    text = letter.get_body(("plain",)).get_content()
    assert "Hello Ann!" in text and "ВЕСНА — https://blog.example.org/p9" in text


@pytest.mark.parametrize(("mode", "said"), [
    ("html", "this is an HTML page, not a feed"),
    ("huge", "larger than 5 MiB"),
    ("slow", "took longer than 1 s"),
])
def test_a_broken_feed_is_one_log_line_and_a_status_warning_never_a_stopped_run(
        site, blog, monkeypatch, mode, said):
    from vykhukhol.newsletters import feed_fetch

    monkeypatch.setattr(feed_fetch, "SECONDS", 1.0)
    monkeypatch.setattr(feed_fetch, "SOCKET_SECONDS", 0.5)
    following(site, blog)
    site.service("tips", letters=[("Tip one", "0s", "Hello")])
    site.subscriber("tips", "tip@example.org")
    blog.mode = mode
    started = time.monotonic()
    report = site.run_at(now())
    assert time.monotonic() - started < 8
    assert [to(m) for m in site.outbox()] == ["tip@example.org"]  # the run went on
    lines = [line for line in site.log().splitlines() if "feed of news" in line]
    assert len(lines) == 1 and said in lines[0], lines
    assert "handed over 1" in report
    status = site.ok("status")
    assert "The feed of news" in status and said in status
    blog.mode = "feed"  # fixed: the next read (an hour on) is a first read, the warning goes
    site.run_at(now() + timedelta(hours=2))
    assert "The feed of news" not in site.ok("status")


def test_bad_settings_are_refused_in_one_line(site, blog, tmp_path):
    from support.clikit import refused

    site.service("news")
    refused(site, "service", "feed", "news", "ftp://example.org/feed", says=("not a feed address",))
    refused(site, "service", "feed", "news", blog.url, "--every", "1m", says=("at most every",))
    broken = tmp_path / "broken.txt"
    broken.write_text("Subject: {{ title\n\ntext\n")
    refused(site, "service", "feed", "news", blog.url, "--template", str(broken))
    refused(site, "service", "feed", "nope", blog.url)
    assert "follows no feed" in site.ok("service", "feed", "news")


def test_turning_it_off_stops_the_reads(site, blog):
    following(site, blog)
    site.run_at(now())
    assert "follows no feed" not in site.ok("service", "feed", "news")
    site.ok("service", "feed", "news", "--off")
    site.run_at(now() + timedelta(hours=2))
    assert len(blog.requests) == 1


# --- kill -9 between the record and the newsletter (a real `vykhukhol cron`) ------------

KILLER = """
import os, signal, sys
sys.path.insert(0, {lib!r})
from vykhukhol import newsletters
made = newsletters.create
def create(*args, **kw):
    if {after!r}:
        made(*args, **kw)
    os.kill(os.getpid(), signal.SIGKILL)  # kill -9, here and nowhere else
newsletters.create = create
from vykhukhol.cli import main
sys.exit(main(["--data", {data!r}, "cron"]))
"""


@pytest.mark.parametrize("after", [False, True], ids=["before-the-job", "after-the-job"])
def test_a_run_killed_between_record_and_newsletter_sends_the_item_once(site, blog, after):
    following(site, blog)
    site.run_at(now() - timedelta(hours=2))  # the first read, two hours ago
    blog.body = rss(("p2", "Killed post", "x"), ("p1", "Old post", "Was there before"))
    script = KILLER.format(lib=str(LIB), data=str(site.root), after=after)
    killed = subprocess.run([sys.executable, "-c", script], env=subprocess_env(),
                            capture_output=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    waiting = [r for r in feeds.records(site.data, "news").values() if r.status == "new"]
    assert len(waiting) == 1  # recorded before the newsletter existed
    assert (site.data.newsletters / f"{waiting[0].job}.job").exists() is after
    for _ in range(3):
        site.cli("cron")
    assert letters(site, "Killed post") == ["ann@example.org", "bob@example.org"]
    assert [r.status for r in feeds.records(site.data, "news").values()] == ["seen", "made"]


def test_the_idle_cron_tick_goes_the_full_way_when_the_feed_is_due(site, blog):
    from vykhukhol.sender import idle

    following(site, blog)
    site.ok("service", "feed", "news", blog.url, "--every", "10m")
    start = now()
    site.run_at(start)  # the first read
    time.sleep(idle.RACY_SECONDS + 0.1)  # files changed a moment ago prove nothing
    site.run_at(start)  # nothing to send: the run leaves an idle proof
    proof = idle.read_proof(str(site.root))
    assert proof is not None
    assert float(proof.values["until"]) <= start.timestamp() + 600  # not MAX_IDLE: the next read


def test_an_atom_feeds_new_entry_is_one_newsletter(site, blog):
    following(site, blog)
    blog.body = atom(("a1", "First"))
    start = now()
    site.run_at(start)
    blog.body = atom(("a2", "Второй пост"), ("a1", "First"))
    site.run_at(start + timedelta(hours=2))
    site.run_at(start + timedelta(hours=2, minutes=1))
    assert letters(site, "Второй пост") == ["ann@example.org", "bob@example.org"]
    assert letters(site, "First") == []


# --- the default letter, and a feed that came broken --------------------------------------

def new_item(site, blog, title: str = "Fresh post") -> None:
    """The first read, a new item two hours on, its newsletter made and sent."""
    start = now()
    site.run_at(start)
    blog.body = rss(("p2", title, "About it"), ("p1", "Old post", "Was there before"))
    site.run_at(start + timedelta(hours=2))
    site.run_at(start + timedelta(hours=2, minutes=1))


FOOTED_RU = ("Subject: {{ title }}\n\n{{ title }}\n\n{{ summary }}\n\nЧитать на сайте: {{ link }}\n\n"
             "--\nВы получили это письмо как подписчик рассылки «{{ service }}». "
             "Отписаться: {{ unsubscribe_url }}\n")


@pytest.mark.parametrize("kept", ["", FOOTED_RU], ids=["none", "as-1.0-wrote-it"])
def test_the_default_letter_carries_one_footer(site, blog, kept):
    following(site, blog)
    if kept:  # the default with its own footer, as 1.0 wrote it into feed.txt
        (site.data.services / "main" / "news" / "feed.txt").write_text(kept, encoding="utf-8")
    new_item(site, blog)
    [letter] = [m for m in site.outbox() if to(m) == "ann@example.org"]
    text = letter.get_body(("plain",)).get_content()
    assert "https://blog.example.org/p2" in text
    assert text.count("/unsubscribe") == 1, text  # the service's footer, not a second one


def test_the_default_letter_speaks_the_language_set_when_it_is_made(site, blog, tmp_path):
    site.set(language="en")
    following(site, blog)
    site.set(language="ru")
    new_item(site, blog)
    [letter] = [m for m in site.outbox() if to(m) == "ann@example.org"]
    assert "Читать на сайте: https://blog.example.org/p2" in letter.get_body(("plain",)).get_content()
    template = site.data.services / "main" / "news" / "feed.txt"
    assert not template.exists()
    english = tmp_path / "letter.txt"  # the default, as the admin's form shows it, saved unchanged
    english.write_text("Subject: {{ title }}\n\n{{ title }}\n\n{{ summary }}\n\n"
                       "Read it on the site: {{ link }}\n", encoding="utf-8")
    site.ok("service", "feed", "news", blog.url, "--template", str(english))
    assert not template.exists()  # still the default: it follows `language`


@pytest.mark.parametrize(("mode", "said"), [
    ("cut", "the feed came cut off"),
    ("xml", "the feed is not whole XML (no element found, line 1)"),
])
def test_a_feed_that_came_broken_is_a_warning_not_a_shorter_feed(site, blog, mode, said):
    following(site, blog)
    start = now()
    site.run_at(start)
    whole = rss(("p3", "Third", "c"), ("p2", "Second", "b"), ("p1", "Old post", "Was there"))
    blog.body = whole[:whole.index(b"<title>Second")] if mode == "xml" else whole
    blog.mode = "cut" if mode == "cut" else "feed"
    site.run_at(start + timedelta(hours=2))
    site.run_at(start + timedelta(hours=2, minutes=1))
    assert [r.status for r in feeds.records(site.data, "news").values()] == ["seen"]
    assert letters(site, "Third") == []
    status = site.ok("status")
    assert "The feed of news" in status and said in status
    assert said in site.ok("service", "feed", "news")
    blog.mode, blog.body = "feed", whole  # whole again: both items are new, none was lost
    site.run_at(start + timedelta(hours=3, minutes=5))
    site.run_at(start + timedelta(hours=3, minutes=6))
    assert letters(site, "Second") == letters(site, "Third") == ["ann@example.org",
                                                                "bob@example.org"]
    assert "The feed of news" not in site.ok("status")


def test_the_feed_box_shows_a_broken_read_and_a_dropped_item(site, blog, served):
    following(site, blog)
    start = now()
    site.run_at(start)
    whole = rss(("p2", "Doomed post", "b"), ("p1", "Old post", "Was there"))
    blog.body = whole[:-20]
    site.run_at(start + timedelta(hours=2))
    admin = Browser(served.port)
    admin.log_in()
    page = admin.get("/admin/services/news")
    assert page.status == 200 and 'id="feed-problem"' in page.body
    assert "The last read failed: the feed is not whole XML" in page.body
    (site.data.services / "main" / "news" / "feed.txt").write_text(
        "Subject: {{ title\n\nbroken by hand\n", encoding="utf-8")
    blog.body = whole
    for minutes in range(6):
        site.run_at(start + timedelta(hours=3, minutes=minutes))
    page = admin.get("/admin/services/news")
    assert 'id="feed-problem"' not in page.body
    assert "The item “Doomed post” could not become a letter in 3 tries and was dropped" \
        in page.body


def test_a_sloppy_but_whole_feed_is_read_as_feedparser_reads_it():
    from vykhukhol.newsletters import feed_fetch

    sloppy = b'\n\n' + rss(("p2", "Ducks&nbsp;&amp; geese & swans", "s"), ("p1", "Old", "o"))
    assert [item.title for item in feed_fetch.items(sloppy)] == ["Old",
                                                                 "Ducks & geese & swans"]
