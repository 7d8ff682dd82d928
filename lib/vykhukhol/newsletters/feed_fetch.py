"""A site's feed fetched and read for :mod:`.feeds`: one bounded HTTP GET,
conditional, and feedparser's reading of what came back.

Bounds, so a feed can never stop or stall a run: at most :data:`MAX_BYTES`
of body (a longer one is refused as soon as it passes the mark, not read to
its end), at most :data:`SECONDS` from the request to the last byte (each
socket operation waits at most :data:`SOCKET_SECONDS`, so a server that
drips a byte at a time is cut off within ``SECONDS + SOCKET_SECONDS``), only
``http`` and ``https`` URLs. The request carries the ETag and Last-Modified of
the last answer (``If-None-Match``, ``If-Modified-Since``), so an unchanged
feed costs its server a 304 and us nothing.

It deliberately does not follow the feed anywhere else, decide what is new,
or write anything: every problem is a :class:`FeedProblem` with a sentence.
"""

from __future__ import annotations

import time
from typing import NamedTuple

from vykhukhol.errors import BadInput
from vykhukhol.files.runlog import one_line

MAX_BYTES = 5 * 1024 * 1024   # a feed of 50 long posts is ~0.5 MiB
SECONDS = 10.0                # the whole answer
SOCKET_SECONDS = 5.0          # one connect or read
MAX_SUMMARY = 5000            # characters of an item's summary kept for its letter
AGENT = "Vykhukhol-feeds/1 (a mailing list following its site)"


def _(text: str) -> str:  # marks a text for the catalog (tools/i18n.py extract)
    return text


class FeedProblem(BadInput):
    """The feed cannot be read or is not a feed; ``message`` says why."""


class Answer(NamedTuple):
    changed: bool            # False: 304 Not Modified
    body: bytes
    etag: str
    modified: str
    content_type: str


class Item(NamedTuple):
    key: str                 # the item's id (guid, Atom id), else its link, else its title
    title: str
    link: str
    summary: str             # plain text, tags removed
    published: str           # as the feed wrote it


def fetch(url: str, etag: str = "", modified: str = "", seconds: float = SECONDS,
          max_bytes: int = MAX_BYTES) -> Answer:
    """GET ``url`` inside the bounds; :class:`FeedProblem` for anything but a
    200 or 304 within them."""
    import urllib.error
    import urllib.request
    from urllib.parse import urlsplit

    if urlsplit(url).scheme not in ("http", "https"):
        raise FeedProblem(_("not an http or https address: {url}"), url=url)
    headers = {"User-Agent": AGENT, "Accept": "application/rss+xml, application/atom+xml, "
               "application/xml;q=0.9, text/xml;q=0.9, */*;q=0.1"}
    if etag:
        headers["If-None-Match"] = etag
    if modified:
        headers["If-Modified-Since"] = modified
    deadline = time.monotonic() + seconds
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=min(SOCKET_SECONDS, seconds)) as answer:
            chunks, size = [], 0
            while True:
                chunk = answer.read1(64 * 1024)  # what has come: a drip cannot hold it
                if not chunk:
                    break
                size += len(chunk)
                if size > max_bytes:
                    raise FeedProblem(_("the feed is larger than {size} MiB; not read"),
                                      size=max_bytes // (1024 * 1024))
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise FeedProblem(_("the feed took longer than {seconds} s to come; not read"),
                                      seconds=int(seconds))
            return Answer(True, b"".join(chunks), answer.headers.get("ETag", ""),
                          answer.headers.get("Last-Modified", ""),
                          answer.headers.get("Content-Type", ""))
    except urllib.error.HTTPError as exc:
        if exc.code == 304:
            return Answer(False, b"", etag, modified, "")
        raise FeedProblem(_("the server answered {status} {reason}"), status=exc.code,
                          reason=one_line(exc.reason)[:200]) from None
    except urllib.error.URLError as exc:
        raise FeedProblem(_("cannot connect: {reason}"), reason=str(exc.reason)) from None
    except (TimeoutError, OSError) as exc:  # a read that timed out, a reset connection
        raise FeedProblem(_("no answer in time: {reason}"),
                          reason=str(exc) or type(exc).__name__) from None
    except ValueError as exc:  # a URL urllib cannot take apart
        raise FeedProblem(_("not a usable address: {reason}"), reason=str(exc)) from None


def items(body: bytes, content_type: str = "") -> list[Item]:
    """The entries of an RSS 2.0 or Atom document, oldest first (feeds list
    the newest first); :class:`FeedProblem` when it is not a feed (an HTML
    page, a broken document)."""
    import feedparser  # only when a feed is read

    parsed = feedparser.parse(body, response_headers={"content-type": content_type}
                              if content_type else None, sanitize_html=True,
                              resolve_relative_uris=False)
    if not parsed.get("version"):
        looks = body.lstrip()[:200].lower()
        if looks.startswith((b"<!doctype html", b"<html")) or b"<html" in looks:
            raise FeedProblem(_("this is an HTML page, not a feed (RSS or Atom)"))
        reason = str(parsed.get("bozo_exception") or "not RSS or Atom")
        raise FeedProblem(_("not a feed (RSS or Atom): {reason}"), reason=reason[:200])
    found = []
    for entry in parsed.entries:
        title = _one_line(entry.get("title", ""))
        link = _one_line(entry.get("link", ""))
        key = _one_line(entry.get("id", "")) or link or title
        if not key:
            continue
        summary = _text(entry.get("summary", "") or entry.get("description", ""))
        found.append(Item(key, title, link, summary[:MAX_SUMMARY],
                          _one_line(entry.get("published", "") or entry.get("updated", ""))))
    return list(reversed(found))


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _text(html: str) -> str:
    """An item's summary as plain text: tags dropped, entities read, paragraphs
    kept as blank lines."""
    from html.parser import HTMLParser

    class Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.parts: list[str] = []

        def handle_starttag(self, tag: str, attrs) -> None:
            if tag in ("p", "br", "div", "li", "h1", "h2", "h3", "blockquote"):
                self.parts.append("\n")

        def handle_data(self, data: str) -> None:
            self.parts.append(data)

    reader = Text()
    reader.feed(html)
    reader.close()
    lines = [" ".join(line.split()) for line in "".join(reader.parts).split("\n")]
    out: list[str] = []
    blank = False
    for line in lines:
        if line:
            if blank and out:
                out.append("")
            out.append(line)
            blank = False
        else:
            blank = True
    return "\n".join(out)
