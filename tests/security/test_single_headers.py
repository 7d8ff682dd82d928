"""Each header of an answer is sent once: two ``Cache-Control`` lines (or
two of any header the page and the defaults both set) leave a proxy or a
browser to choose which one to believe, and some join them into one. Replayed
with the checkout's real cgi/go.py as a CGI process, whose redirect is the
answer a stranger gets most (docs/reference/security.md#security-strangers)."""

from __future__ import annotations

import subprocess
from collections import Counter
from urllib.parse import urlencode

from support.webkit import CHECKOUT, cgi_environ
from vykhukhol import tokens
from vykhukhol.newsletters import clicks

LETTER = "20261201-090000-abcdef"


def header_names(site, query: str) -> tuple[str, Counter]:
    """The Status line and how often each header name came, as mod_cgi reads them."""
    done = subprocess.run([str(CHECKOUT / "cgi/go.py")], capture_output=True, timeout=60,
                          env=cgi_environ(site, "cgi/go.py", query=query), cwd=CHECKOUT / "cgi")
    assert done.returncode == 0, done.stderr
    head = done.stdout.partition(b"\r\n\r\n")[0].decode("latin-1")
    names = Counter(line.partition(":")[0].strip().lower() for line in head.split("\r\n"))
    status = next(line for line in head.split("\r\n") if line.lower().startswith("status:"))
    return status, names


def test_go_sends_each_header_once(site) -> None:
    site.set(language="en")
    clicks.prepare(site.data, "https://lists.example.org", site.settings().secret, LETTER,
                   "Read https://example.org/a", None)
    token = tokens.click_token(site.settings().secret, LETTER, 1)
    for query, code in ((urlencode({"l": LETTER, "n": 1, "t": token}), "302"),
                        (urlencode({"l": LETTER, "n": 2, "t": token}), "400")):
        status, names = header_names(site, query)
        assert code in status
        assert names["cache-control"] == 1 and max(names.values()) == 1, names
