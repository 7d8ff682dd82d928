"""cgi/go.py, the counted link, must be no open redirect.

A redirector under the site's name is what phishing letters want: "click
https://lists.example.org/cgi/go.py?…" leading anywhere. go.py leads only to
a link stored for a letter (data/clicks/<letter>.links), chosen by a number
that the site's HMAC signs with the letter; every other request is the same
400 page, which repeats nothing of the request. Replayed with the checkout's
real cgi/go.py as CGI processes (tests/support/webkit.py's ``run_cgi``).
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from support.webkit import TRACEBACK, run_cgi
from vykhukhol import tokens
from vykhukhol.newsletters import clicks

LETTER = "20261201-090000-abcdef"
EVIL = "https://evil.example/phish"


@pytest.fixture
def counted(site):
    site.set(language="en")
    clicks.prepare(site.data, "https://lists.example.org", site.settings().secret, LETTER,
                   "Read https://example.org/a", None)
    return site


def query(site, letter: str = LETTER, number: int | str = 1, **more: str) -> str:
    token = tokens.click_token(site.settings().secret, letter, int(number)) \
        if str(number).isdigit() else "0" * 32
    return urlencode({"l": letter, "n": number, "t": token, **more})


def refused(site, query_string: str) -> None:
    answer = run_cgi(site, "cgi/go.py", query=query_string)
    assert answer.status == 400, answer
    assert "location" not in answer.headers, answer.headers
    assert "evil" not in answer.body and "phish" not in answer.body  # nothing echoed
    assert TRACEBACK not in answer.stderr, answer.stderr


def test_a_target_in_the_url_is_never_followed(counted) -> None:
    for name in ("u", "url", "next", "to", "target", "redirect"):
        answer = run_cgi(counted, "cgi/go.py", query=query(counted, **{name: EVIL}))
        assert answer.status == 302 and answer.headers["location"] == "https://example.org/a"
    refused(counted, urlencode({"u": EVIL}))
    refused(counted, urlencode({"l": LETTER, "n": 1, "t": "0" * 32, "u": EVIL}))


@pytest.mark.parametrize("letter", ["../settings", "..%2fsettings", "/etc/passwd",
                                    f"{LETTER}/../../settings", f"{LETTER}.links", "a" * 200,
                                    "news.1.0123456789ab/..", "Job", ""])
def test_a_letter_name_never_leaves_the_clicks_folder(counted, letter: str) -> None:
    refused(counted, query(counted, letter=letter))


@pytest.mark.parametrize("number", ["0", "2", "999", "99999999", "-1", "1.0", "01x", "", "١"])
def test_a_number_the_letter_has_not_is_refused(counted, number: str) -> None:
    refused(counted, query(counted, number=number))


def test_a_stored_link_edited_into_something_else_is_refused(counted) -> None:
    """An edited .links file (FTP) cannot make go.py send another scheme or a header."""
    path = counted.data.click_file(LETTER, "links")
    for line in ("javascript:alert(1)", "//evil.example/", "https://пример.рф/",
                 "data:text/html,x", "https://example.org/a b", "https://example.org/\x00"):
        path.write_text(line + "\n", encoding="utf-8")
        refused(counted, query(counted))
    assert not counted.data.click_file(LETTER, "counts").exists()  # refused: nothing counted
    # A line end inside ends the line: what follows is never a header.
    path.write_bytes(b"https://example.org/a\rSet-Cookie: x=1\n")
    answer = run_cgi(counted, "cgi/go.py", query=query(counted))
    assert answer.headers["location"] == "https://example.org/a" and not answer.cookies
