"""The service page's "Letters from the site's feed" in a real browser (issue
29 item 2): follow a feed served on loopback, see its last read, see a broken
feed's problem there and on Status, and follow none again."""

from __future__ import annotations

import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from vykhukhol import services as svc
from vykhukhol.newsletters import feed_settings
from vykhukhol.timeutil import now

RSS = (b'<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>'
       b"<link>https://blog.example.org/</link><description>d</description>"
       b"<item><title>Old</title><guid>p1</guid><link>https://blog.example.org/p1</link>"
       b"</item></channel></rss>")


def serve(answer: dict[str, bytes]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            body = answer["body"]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_following_a_feed_from_the_service_page_shows_its_reads_and_problems(site, server,
                                                                           browser):
    site.service("news")
    answer = {"body": RSS}
    blog = serve(answer)
    url = f"http://127.0.0.1:{blog.server_address[1]}/feed.xml"
    try:
        b = browser
        b.log_in()
        b.open("/admin/services/news")
        assert "{{ title }}" in b.find("#feed_letter").get_attribute("value")
        b.fill("#feed_url", url)
        b.fill("#feed_every", "2h")
        b.press("#feed-save")
        assert "follows the feed" in b.flash()
        assert f"Follows {url}, read every 2 hours." in b.text("#feed-state")
        site.run_at(now())
        b.reload()
        assert "Last read:" in b.text("#feed-state")
        answer["body"] = b"<!DOCTYPE html><html><body>moved</body></html>"
        site.run_at(now() + timedelta(hours=3))
        b.reload()
        assert "HTML page, not a feed" in b.text("#feed-problem")
        b.screenshot("feed-problem-en")
        b.open("/admin/")
        assert "The feed of news" in b.text("body")
        b.open("/admin/services/news")
        b.fill("#feed_letter", "Subject: {{ title\n\nbroken")
        b.press("#feed-save")
        assert "subject" in b.text(".error").lower()
        b.open("/admin/services/news")
        b.press("#feed-off")
        assert "follows no feed" in b.flash()
        assert feed_settings.load(svc.find_service(site.data, "news")) is None
    finally:
        blog.shutdown()
        blog.server_close()
