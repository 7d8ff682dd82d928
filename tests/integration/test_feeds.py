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

from support.feedkit import FeedServer, atom, rss
from support.servetools import subprocess_env
from vykhukhol.newsletters import feeds
from vykhukhol.timeutil import now

LIB = Path(__file__).resolve().parents[2] / "lib"


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
