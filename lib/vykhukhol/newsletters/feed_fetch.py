"""A site's feed fetched and read for :mod:`.feeds`: one bounded HTTP GET,
conditional, and feedparser's reading of what came back (docs/using/feeds.md#feed-bounds).

Bounds, so a feed can never stop or stall a run, nor grow what is kept of it:

* at most :data:`MAX_BYTES` of body (a longer one is refused as soon as it
  passes the mark, not read to its end);
* at most ``seconds`` (:data:`SECONDS`) from the connect to the last byte,
  the status line and headers included: a watchdog shuts the socket at the
  deadline, so a server that drips a byte every second cannot hold a run
  (each connect or read also waits at most :data:`SOCKET_SECONDS`);
* only ``http`` and ``https``, redirects too (at most :data:`MAX_REDIRECTS`);
* an answer cut short (fewer bytes than its Content-Length) or a document
  that is not well-formed XML is a problem, never a feed with fewer items;
* a document of more than :data:`MAX_LISTED` items is refused before it is
  parsed (130 000 tiny items fit in 5 MiB and take feedparser half a
  minute); of the rest, at most :data:`MAX_ITEMS` items, and of each item at most
  :data:`MAX_TITLE`, :data:`MAX_LINK`, :data:`MAX_KEY` and :data:`MAX_SUMMARY`
  characters; an item's link that is not http(s) is left out.

The request carries the ETag and Last-Modified of the last answer
(``If-None-Match``, ``If-Modified-Since``), so an unchanged feed costs its
server a 304 and us nothing. It deliberately does not decide what is new or
write anything: every problem is a :class:`FeedProblem` with a sentence.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import NamedTuple

from vykhukhol.errors import BadInput
from vykhukhol.files.runlog import one_line

MAX_BYTES = 5 * 1024 * 1024   # a feed of 50 long posts is ~0.5 MiB
SECONDS = 10.0                # the whole answer, connect to last byte
SOCKET_SECONDS = 5.0          # one connect or read
MAX_REDIRECTS = 5
MAX_ITEMS = 200               # items of one document read (feeds list the newest first)
MAX_LISTED = 2000             # items a document may list at all: feedparser reads every one
MAX_TITLE = 300               # characters of an item's title
MAX_LINK = 2000               # characters of an item's link (a longer one is left out)
MAX_KEY = 2000                # characters of an item's id that tell it apart
MAX_SUMMARY = 5000            # characters of an item's summary kept for its letter
MAX_HTML = 20 * MAX_SUMMARY   # characters of an item's HTML read to make its summary
AGENT = "Vykhukhol-feeds/1 (a mailing list following its site)"
REDIRECTS = (301, 302, 303, 307, 308)


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
    link: str                # http or https, else ""
    summary: str             # plain text, tags removed
    published: str           # as the feed wrote it


class _Deadline:
    """The whole answer's deadline: at it, the watched socket is shut, which
    ends a read blocked on it at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.passed = False
        self._sock: socket.socket | None = None
        self._guard = threading.Lock()
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        return max(self.end - time.monotonic(), 0.01)

    def watch(self, sock: socket.socket | None) -> None:
        with self._guard:
            self._sock = sock
            if self.passed:
                self._shut()

    def check(self) -> None:
        if self.passed or time.monotonic() > self.end:
            self.passed = True
            raise FeedProblem(_("the feed took longer than {seconds} s to come; not read"),
                              seconds=int(self.seconds))

    def cancel(self) -> None:
        self._timer.cancel()

    def _cut(self) -> None:
        with self._guard:
            self.passed = True
            self._shut()

    def _shut(self) -> None:
        if self._sock is not None:
            try:  # the plain socket's shutdown: an SSL socket's own would unwrap it first
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)
            except OSError:
                pass


def fetch(url: str, etag: str = "", modified: str = "", seconds: float = SECONDS,
          max_bytes: int = MAX_BYTES) -> Answer:
    """GET ``url`` inside the bounds, following http(s) redirects;
    :class:`FeedProblem` for anything but a 200 or 304 within them."""
    headers = {"User-Agent": AGENT, "Accept": "application/rss+xml, application/atom+xml, "
               "application/xml;q=0.9, text/xml;q=0.9, */*;q=0.1"}
    if etag:
        headers["If-None-Match"] = etag
    if modified:
        headers["If-Modified-Since"] = modified
    deadline = _Deadline(seconds)
    try:
        for _hop in range(MAX_REDIRECTS + 1):
            answer = _get(url, headers, deadline, max_bytes)
            if isinstance(answer, Answer):
                return answer if answer.changed else Answer(False, b"", etag, modified, "")
            url = answer
        raise FeedProblem(_("the feed redirects more than {n} times; not followed"),
                          n=MAX_REDIRECTS)
    finally:
        deadline.cancel()


def _get(url: str, headers: dict[str, str], deadline: _Deadline,
         max_bytes: int) -> Answer | str:
    """One request: its :class:`Answer`, or the address it redirects to."""
    import http.client
    import ssl
    from urllib.parse import urljoin, urlsplit

    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError as exc:  # a URL that cannot be taken apart, a port out of range
        raise FeedProblem(_("not a usable address: {reason}"), reason=str(exc)) from None
    if parts.scheme not in ("http", "https") or not host:
        raise FeedProblem(_("not an http or https address: {url}"), url=one_line(url)[:300])
    timeout = min(SOCKET_SECONDS, deadline.left())
    conn = (http.client.HTTPSConnection(host, port, timeout=timeout,
                                        context=ssl.create_default_context())
            if parts.scheme == "https" else http.client.HTTPConnection(host, port, timeout=timeout))
    try:
        try:
            conn.connect()
        except OSError as exc:  # refused, unknown host, a certificate that does not fit
            deadline.check()
            raise FeedProblem(_("cannot connect: {reason}"),
                              reason=str(exc) or type(exc).__name__) from None
        deadline.watch(conn.sock)
        try:
            conn.request("GET", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
                         headers=headers)
            response = conn.getresponse()
            if response.status in REDIRECTS:
                target = urljoin(url, response.getheader("Location", "") or "")
                if urlsplit(target).scheme not in ("http", "https"):
                    raise FeedProblem(_("the feed redirects to {url}, not an http or https "
                                        "address; not followed"), url=one_line(target)[:300])
                return target
            if response.status == 304:
                return Answer(False, b"", "", "", "")
            if response.status != 200:
                raise FeedProblem(_("the server answered {status} {reason}"),
                                  status=response.status, reason=one_line(response.reason)[:200])
            body = _body(response, deadline, max_bytes)
            return Answer(True, body, response.getheader("ETag", "") or "",
                          response.getheader("Last-Modified", "") or "",
                          response.getheader("Content-Type", "") or "")
        except http.client.IncompleteRead:  # a chunked answer that stopped short
            deadline.check()
            raise FeedProblem(_("the feed came cut off: the connection closed before its end; "
                                "not read")) from None
        except (http.client.HTTPException, OSError) as exc:  # a timeout, a reset, a drop
            deadline.check()  # the watchdog's cut reads as a dropped connection
            raise FeedProblem(_("no answer in time: {reason}"),
                              reason=str(exc) or type(exc).__name__) from None
        except (ValueError, UnicodeError) as exc:  # a path http.client will not send
            raise FeedProblem(_("not a usable address: {reason}"), reason=str(exc)) from None
    finally:
        conn.close()


def _body(response, deadline: _Deadline, max_bytes: int) -> bytes:
    """The answer's body within the bounds; a body cut short is a problem."""
    chunks, size = [], 0
    while True:
        chunk = response.read1(64 * 1024)  # what has come: a drip cannot hold it
        deadline.check()
        if not chunk:
            break
        size += len(chunk)
        if size > max_bytes:
            raise FeedProblem(_("the feed is larger than {size} MiB; not read"),
                              size=max_bytes // (1024 * 1024))
        chunks.append(chunk)
    if response.length:  # bytes its Content-Length promised that never came
        raise FeedProblem(_("the feed came cut off: the connection closed before its end; "
                            "not read"))
    return b"".join(chunks)


def items(body: bytes, content_type: str = "") -> list[Item]:
    """The entries of an RSS 2.0 or Atom document, oldest first (feeds list
    the newest first), each field within its bound; :class:`FeedProblem` when
    it is not a feed (an HTML page) or not whole (cut off, broken XML)."""
    import re

    import feedparser  # only when a feed is read

    listed = len(re.findall(rb"<(?:[A-Za-z_][\w.-]*:)?(?:item|entry)[\s/>]", body))
    if listed > MAX_LISTED:
        raise FeedProblem(_("the feed lists more than {n} items; not read"), n=MAX_LISTED)
    parsed = feedparser.parse(body, response_headers={"content-type": content_type}
                              if content_type else None, sanitize_html=True,
                              resolve_relative_uris=False)
    if not parsed.get("version"):
        looks = body.lstrip()[:200].lower()
        if looks.startswith((b"<!doctype html", b"<html")) or b"<html" in looks:
            raise FeedProblem(_("this is an HTML page, not a feed (RSS or Atom)"))
        reason = str(parsed.get("bozo_exception") or "not RSS or Atom")
        raise FeedProblem(_("not a feed (RSS or Atom): {reason}"), reason=reason[:200])
    _check_whole(body, parsed.get("encoding") or "utf-8")
    found = []
    for entry in parsed.entries[:MAX_ITEMS]:
        title = _one_line(entry.get("title", ""), MAX_TITLE)
        link = _one_line(entry.get("link", ""), MAX_LINK + 1)
        key = _one_line(entry.get("id", ""), MAX_KEY) or link[:MAX_KEY] or title
        if not key:
            continue
        html = entry.get("summary", "") or entry.get("description", "")
        summary = _text(str(html)[:MAX_HTML])
        found.append(Item(key, title, link if _web_link(link) else "", summary[:MAX_SUMMARY],
                          _one_line(entry.get("published", "") or entry.get("updated", ""), 100)))
    return list(reversed(found))


def _check_whole(body: bytes, encoding: str) -> None:
    """:class:`FeedProblem` unless ``body`` is well-formed XML, read as
    feedparser read it: a document cut off, or with a tag left open, is not
    taken as a feed with fewer items. HTML's named entities, a bare ``&`` and
    blank lines before the XML declaration (common in hand-made feeds, read
    well by feedparser) are let pass."""
    import re
    from xml.parsers import expat

    try:
        text = body.decode(encoding, "replace")
    except LookupError:
        text = body.decode("utf-8", "replace")
    text = re.sub(r"&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)", "&amp;",
                  text.lstrip("\ufeff \t\r\n"))  # blank lines before <?xml: a common slip
    parser = expat.ParserCreate()
    try:
        parser.Parse(text, True)  # a str: read as UTF-8, whatever the declaration says
    except expat.ExpatError as exc:
        raise FeedProblem(_("the feed is not whole XML ({reason}, line {line}): cut off or "
                            "broken; nothing was taken from it"),
                          reason=expat.ErrorString(exc.code), line=exc.lineno) from None


def _web_link(link: str) -> bool:
    """Only an http(s) link of a sane length reaches a letter (never javascript:, data:)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(link)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc) and len(link) <= MAX_LINK


def _one_line(text: object, limit: int) -> str:
    """``text`` on one line a terminal shows as text, at most ``limit``
    characters (read from at most a few times that many, so a huge field
    costs no more than a small one)."""
    return one_line(str(text)[:4 * limit])[:limit]


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
