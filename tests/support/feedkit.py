"""A site's feed on loopback for the feed tests: RSS and Atom documents as blogs
write them, and a server that answers them (with an ETag and 304s), or an HTML
page, 100 MB, a slow trickle, a redirect, or a document cut in the middle."""

from __future__ import annotations

import threading
import time
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from vykhukhol.timeutil import now


def rss(*items: tuple[str, ...]) -> bytes:
    """An RSS 2.0 document, newest item first, as a blog writes it: each item
    (guid, title, summary), its link the blog's page of the guid, or
    (guid, title, summary, link)."""
    entries = "".join(
        f"<item><title>{item[1]}</title>"
        f"<link>{item[3] if len(item) > 3 else 'https://blog.example.org/' + item[0]}</link>"
        f"<guid isPermaLink=\"false\">{item[0]}</guid><description>{item[2]}</description>"
        f"<pubDate>{format_datetime(now())}</pubDate></item>"
        for item in items)
    return (f'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>'
            f"<title>Blog</title><link>https://blog.example.org/</link>"
            f"<description>posts</description>{entries}</channel></rss>").encode()


def atom(*entries: tuple[str, str]) -> bytes:
    """An Atom 1.0 feed (RFC 4287), newest entry first."""
    body = "".join(f"<entry><id>tag:blog.example.org,2026:{key}</id><title>{title}</title>"
                   f'<link href="https://blog.example.org/{key}"/><updated>2026-12-01T08:00:00Z'
                   f"</updated><summary>About {title}</summary></entry>" for key, title in entries)
    return (f'<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
            f"<id>tag:blog.example.org,2026:feed</id><title>Blog</title>"
            f"<updated>2026-12-01T08:00:00Z</updated>{body}</feed>").encode()


class FeedServer:
    """The site: serves ``body`` with an ETag, answers 304 to its ETag, and
    can answer HTML, 100 MB, a byte at a time, a redirect to ``location``,
    or ``body`` cut in half (its Content-Length whole) instead."""

    def __init__(self) -> None:
        self.body = rss()
        self.mode = "feed"
        self.location = ""
        self.requests: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                outer.requests.append(dict(self.headers))
                etag = f'"{hash(outer.body) & 0xffffffff:x}"'
                if outer.mode == "html":
                    self._answer(b"<!DOCTYPE html><html><body>Not found</body></html>",
                                 "text/html")
                elif outer.mode == "huge":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/rss+xml")
                    self.end_headers()
                    chunk = b"<rss>" + b" " * (1024 * 1024)
                    try:
                        for _ in range(100):  # 100 MB, if anybody read it all
                            self.wfile.write(chunk)
                    except OSError:
                        pass
                elif outer.mode == "slow":
                    self.send_response(200)
                    self.end_headers()
                    try:
                        for _ in range(100):
                            self.wfile.write(b" ")
                            self.wfile.flush()
                            time.sleep(0.2)
                    except OSError:
                        pass
                elif outer.mode == "redirect":
                    self.send_response(302)
                    self.send_header("Location", outer.location)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif outer.mode == "cut":  # the connection drops half-way
                    self.send_response(200)
                    self.send_header("Content-Type", "application/rss+xml")
                    self.send_header("Content-Length", str(len(outer.body)))
                    self.end_headers()
                    self.wfile.write(outer.body[:len(outer.body) // 2])
                    self.close_connection = True
                elif self.headers.get("If-None-Match") == etag:
                    self.send_response(304)
                    self.end_headers()
                else:
                    self._answer(outer.body, "application/rss+xml", etag)

            def _answer(self, body: bytes, ctype: str, etag: str = "") -> None:
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                if etag:
                    self.send_header("ETag", etag)
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/feed.xml"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
