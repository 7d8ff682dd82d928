"""The confirmation sent after the answer must
not slow the next request.

Under Apache's mod_cgi the answer was on the pipe before the letter was
sent, but the CGI process kept its standard output open while it mailed,
and Apache ends a request only at that end of file: on a kept-alive
connection, the next request waited for the previous post's letter (and a
new address's own answer came only once its letter was tried: 3.6-4.2 s
against the slow server's 3). So a client learned from the answers' times
whether an address got a letter (a new one) or not (one already on the
list). The script now closes its streams and does the work in a child of
its own session, which Apache's end of the request does not end: the
letters are still tried.

Run through a real Apache with mod_cgi (tests/support/apachekit.py's
installation) and a mail server on loopback that takes seconds to greet.
"""

from __future__ import annotations

import http.client
import time
from urllib.parse import urlencode

from support import apachekit, webkit
from support.webkit import SLOW_HELLO

apache = apachekit.apache  # the fixture: Apache + mod_cgi, a copied installation
slow_mail_server = webkit.slow_mail_server  # the fixture: seconds before it refuses each letter


def test_the_next_request_on_the_connection_does_not_wait_for_the_letter(apache,
                                                                         slow_mail_server):
    apache.cli_batch(("settings", "set", "mail.transport", "smtp"),
                     ("settings", "set", "mail.smtp_host", "127.0.0.1"),
                     ("settings", "set", "mail.smtp_port", str(slow_mail_server.port)))
    conn = http.client.HTTPConnection("127.0.0.1", apache.port, timeout=30)
    took = []
    try:
        for email in ("brand.new@example.net", "second@example.net", "third@example.net"):
            began = time.monotonic()
            conn.request("POST", "/cgi/subscribe.py",
                         urlencode({"service": "news", "email": email}),
                         {"Content-Type": "application/x-www-form-urlencoded"})
            answer = conn.getresponse()
            answer.read()
            assert answer.status == 200 and not answer.will_close, answer.status
            took.append(time.monotonic() - began)
    finally:
        conn.close()
    assert max(took) < SLOW_HELLO * 0.8, took
    # and every letter was still tried: the end of the request did not end the work
    deadline = time.monotonic() + 10
    while len(slow_mail_server.greeted) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(slow_mail_server.greeted) == 3, slow_mail_server.greeted
