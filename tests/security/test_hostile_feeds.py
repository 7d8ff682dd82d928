"""A hostile feed costs nothing (docs/using/feeds.md#feed-bounds): a server on
loopback that drips its status line is cut off at the whole answer's
deadline; a five-million-character title is kept at its bound; a redirect to
ftp:// is refused before anything connects there; javascript: and data: links
never reach a letter; two feeds with the same guid each send their item; an
item that cannot become a letter is tried a few times, then dropped with a
warning on Status."""

from __future__ import annotations

import socket
import threading
import time
from datetime import timedelta

import pytest

from support.feedkit import FeedServer, rss
from vykhukhol.newsletters import feed_fetch, feeds
from vykhukhol.timeutil import now


@pytest.fixture
def blog():
    server = FeedServer()
    yield server
    server.close()


def dripping_server(answer: bytes, every: float) -> tuple[socket.socket, str]:
    """Accepts one connection and sends ``answer`` a byte every ``every`` seconds,
    status line and headers included, for as long as the other side listens."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def drip() -> None:
        conn, _ = server.accept()
        try:
            conn.recv(4096)
            for byte in answer:
                conn.sendall(bytes([byte]))
                time.sleep(every)
        except OSError:
            pass
        finally:
            conn.close()

    threading.Thread(target=drip, daemon=True).start()
    return server, f"http://127.0.0.1:{server.getsockname()[1]}/feed.xml"


def test_a_server_dripping_its_status_line_is_cut_off_at_the_deadline():
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/rss+xml\r\n\r\n" + rss()
    server, url = dripping_server(answer, every=2.0)
    began = time.monotonic()
    try:
        with pytest.raises(feed_fetch.FeedProblem) as refused:
            feed_fetch.fetch(url, seconds=3.0)
    finally:
        server.close()
    assert time.monotonic() - began < 3.0 + 1.5  # the deadline, not a socket wait per byte
    assert "took longer than 3 s" in refused.value.message


def test_a_redirect_to_ftp_is_refused_before_anything_connects_there(blog):
    ftp = socket.socket()
    ftp.bind(("127.0.0.1", 0))
    ftp.listen(1)
    ftp.settimeout(0.5)
    blog.mode, blog.location = "redirect", f"ftp://127.0.0.1:{ftp.getsockname()[1]}/feed.xml"
    try:
        with pytest.raises(feed_fetch.FeedProblem) as refused:
            feed_fetch.fetch(blog.url, seconds=3.0)
        with pytest.raises(TimeoutError):
            ftp.accept()[0].close()  # nobody came
    finally:
        ftp.close()
    assert "not an http or https address" in refused.value.message
    assert "ftp://" in refused.value.message


def to_ann(site) -> list:
    return [m for m in site.outbox() if m["To"].addresses[0].addr_spec == "ann@example.org"]


def following(site, blog, service: str = "news") -> None:
    site.service(service)
    site.subscriber(service, "ann@example.org", "Ann")
    site.ok("service", "feed", service, blog.url, "--every", "1h")


def test_a_five_million_character_title_is_kept_at_its_bound(site, blog):
    following(site, blog)
    blog.body = rss(("p1", "Old post", "Was there before"))
    start = now()
    site.run_at(start)
    huge = "A" * 4_500_000  # and the document still inside the 5 MiB it may have
    blog.body = rss(("p2", huge, "x" * 500_000), ("p1", "Old post", "Was there before"))
    site.run_at(start + timedelta(hours=2))
    record = feeds.records(site.data, "news")
    path = site.data.state / "feeds" / "news.items"
    assert path.stat().st_size < 64 * 1024  # not the ten megabytes the feed said
    assert [r.status for r in record.values()] == ["seen", "made"]  # no item waits: idle again
    site.run_at(start + timedelta(hours=2, minutes=1))
    [letter] = to_ann(site)
    assert len(str(letter["Subject"])) <= feed_fetch.MAX_TITLE


def test_javascript_and_data_links_never_reach_a_letter(site, blog):
    following(site, blog)
    blog.body = rss(("p1", "Old post", "Was there before"))
    start = now()
    site.run_at(start)
    blog.body = rss(("p3", "Data", "d", "data:text/html;base64,PHNjcmlwdD4="),
                    ("p2", "Script", "s", "javascript:alert(document.cookie)"),
                    ("p1", "Old post", "Was there before"))
    site.run_at(start + timedelta(hours=2))
    site.run_at(start + timedelta(hours=2, minutes=1))
    texts = {str(m["Subject"]): m.get_body(("plain",)).get_content() for m in to_ann(site)}
    assert set(texts) == {"Script", "Data"}
    for text in texts.values():
        assert "javascript:" not in text and "data:" not in text


def test_two_feeds_with_the_same_guid_each_send_their_item(site):
    first, second = FeedServer(), FeedServer()
    try:
        first.body = rss(("p1", "Old of the first", "old"))
        following(site, first)
        start = now()
        site.run_at(start)
        first.body = rss(("7", "Seven of the first", "new"), ("p1", "Old of the first", "old"))
        site.run_at(start + timedelta(hours=2))
        site.run_at(start + timedelta(hours=2, minutes=1))
        site.ok("service", "feed", "news", second.url)  # the site moved to a new blog engine
        second.body = rss(("p1", "Old of the second", "old"))
        site.run_at(start + timedelta(hours=3))
        second.body = rss(("7", "Seven of the second", "new"), ("p1", "Old of the second", "old"))
        site.run_at(start + timedelta(hours=5))
        site.run_at(start + timedelta(hours=5, minutes=1))
    finally:
        first.close()
        second.close()
    assert [str(m["Subject"]) for m in to_ann(site)] == ["Seven of the first",
                                                         "Seven of the second"]


def test_an_item_that_cannot_become_a_letter_is_dropped_after_its_tries(site, blog):
    following(site, blog)
    blog.body = rss(("p1", "Old post", "Was there before"))
    start = now()
    site.run_at(start)
    blog.body = rss(("p2", "Doomed post", "x"), ("p1", "Old post", "Was there before"))
    template = site.data.services / "main" / "news" / "feed.txt"
    template.write_text("Subject: {{ title\n\nbroken by hand\n", encoding="utf-8")
    moment = start + timedelta(hours=2)
    for _ in range(6):  # more runs than it has tries
        site.run_at(moment)
        moment += timedelta(minutes=1)
    assert [r.status for r in feeds.records(site.data, "news").values()] == ["seen", "dropped"]
    assert site.log().count("cannot be made") == feeds.MAX_TRIES < 6
    status = site.ok("status")
    assert "Doomed post" in status and "dropped" in status
    assert to_ann(site) == []
    # nothing waits: the idle tick may rest until the next read, not "now" for good
    assert feeds.next_read(site.data) >= (start + timedelta(hours=2, minutes=59)).timestamp()


def test_a_feed_of_a_hundred_thousand_items_costs_no_parse_and_of_a_thousand_its_newest():
    many = (b'<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>'
            + b"".join(b"<item><guid>%d</guid></item>" for n in range(100_000))
            + b"</channel></rss>")
    assert len(many) < feed_fetch.MAX_BYTES  # it fits: only its count stops it
    with pytest.raises(feed_fetch.FeedProblem) as refused:
        feed_fetch.items(many)
    assert "lists more than 2000 items" in refused.value.message
    found = feed_fetch.items(rss(*((f"g{n}", f"Post {n}", "") for n in range(1000, 0, -1))))
    assert len(found) == feed_fetch.MAX_ITEMS
    assert found[-1].title == "Post 1000"  # the newest, last: oldest first
