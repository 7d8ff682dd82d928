"""The subscribe page's answer time told where an address lies in the file.

A post looked its address up in the subscriber file before it answered, and
the lookup stopped at the first match: on a million-line list an address
near the top answered in a few milliseconds, one in the middle in twenty, an
absent one in eighty to a hundred. Now the answer comes before the file is
read at all; the lookup, the new line and the letter come after it.

Structural, not timed: a real CGI process of cgi/subscribe.py is run while
this test holds the subscriber file's record lock, so any read of the file
before the answer would hold the answer back (for the lock's 20 seconds).
The answer must come whole, the file untouched, and once the lock is let go
the address is stored and its letter written.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from urllib.parse import urlencode

import pytest

from support.webkit import CHECKOUT, cgi_environ, parse_cgi
from vykhukhol import files
from vykhukhol import services as svc

ANSWER_WITHIN = 8.0  # seconds: a start-up on a busy machine, far below the lock's wait


@pytest.fixture
def news(site):
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])
    site.subscriber("news", "known@example.org")
    return svc.find_service(site.data, "news").subscribers_path


def read_until_closed(stream, seconds: float) -> tuple[bytes, bool]:
    """What ``stream`` gives within ``seconds``, and whether it was closed by then."""
    got, deadline = b"", time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([stream], [], [], left)
        if not ready:
            break
        chunk = os.read(stream.fileno(), 65536)
        if not chunk:
            return got, True
        got += chunk
    return got, False


@pytest.mark.parametrize("email", ["new@example.org", "known@example.org"])
def test_the_answer_comes_before_the_subscriber_file_is_read(site, news, email):
    body = urlencode({"service": "news", "email": email, "name": ""}).encode()
    environ = cgi_environ(site, "cgi/subscribe.py", "POST")
    environ.update(CONTENT_TYPE="application/x-www-form-urlencoded", CONTENT_LENGTH=str(len(body)))
    before = news.read_bytes()
    with files.record_lock(news):
        script = CHECKOUT / "cgi" / "subscribe.py"
        child = subprocess.Popen([str(script)], env=environ, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 cwd=script.parent)
        try:
            child.stdin.write(body)
            child.stdin.close()
            out, closed = read_until_closed(child.stdout, ANSWER_WITHIN)
            assert closed, f"no whole answer while the subscriber file was locked: {out[:300]!r}"
            answer = parse_cgi(out)
            assert answer.status == 200 and email in answer.body, answer
            assert news.read_bytes() == before  # nothing read or written before the answer
        except BaseException:
            child.kill()
            child.wait()
            raise
    assert child.wait(timeout=60) == 0
    subscribers = site.subscribers("news")
    assert email in subscribers
    if email == "new@example.org":
        assert [m for m in site.outbox() if email in str(m["To"])]
