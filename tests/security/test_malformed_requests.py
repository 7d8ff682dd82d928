"""A request with more than 200 query fields answered 500.

Every malformed request — too many fields, a broken %-escape, bytes that are
not UTF-8, a bad Content-Length, a broken multipart body — gets a 400 page,
never a 500 or a traceback, under a real ``vykhukhol serve`` and the real CGI
scripts alike.
"""

from __future__ import annotations

import socket

import pytest

from support import webkit
from support.webkit import TRACEBACK, Answer, parse_cgi, run_cgi

served = webkit.served  # the fixture: a real `vykhukhol serve`

MANY = "&".join(f"f{n}=1" for n in range(250))
BOUNDARY = "xyz"

# (name, method, query, body, content type, Content-Length or None for the body's)
BAD = [
    ("too many query fields", "GET", "service=news&" + MANY, b"", "", None),
    ("a broken %-escape", "GET", "service=news%zz", b"", "", None),
    ("a query that is not UTF-8", "GET", "service=%ff%fenews", b"", "", None),
    ("too many form fields", "POST", "", ("service=news&" + MANY).encode(),
     "application/x-www-form-urlencoded", None),
    ("a form that is not UTF-8", "POST", "", b"service=news&email=%ff%fe@example.org",
     "application/x-www-form-urlencoded", None),
    ("a Content-Length that is not a number", "POST", "", b"service=news",
     "application/x-www-form-urlencoded", "twelve"),
    ("a broken multipart body", "POST", "", b"--xyz\r\nContent-Disposition: form-data\r\n\r\nx",
     f"multipart/form-data; boundary={BOUNDARY}", None),
]
SCRIPTS = ["cgi/subscribe.py", "cgi/confirm.py", "cgi/unsubscribe.py", "cgi/manage.py",
           "admin/index.py"]


@pytest.fixture
def news(site):
    return site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])


def assert_400_page(answer: Answer, what: str) -> None:
    assert answer.status == 400, (what, answer)
    assert answer.body.lstrip().lower().startswith("<!doctype html>"), (what, answer)
    assert TRACEBACK not in answer.body and TRACEBACK not in answer.stderr, (what, answer.stderr)


def raw_request(port: int, method: str, target: str, body: bytes, ctype: str,
                length: str | None) -> Answer:
    """Bytes on the wire, as an attacker sends them (no client library tidies them)."""
    head = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    if method == "POST":
        head += [f"Content-Type: {ctype}", f"Content-Length: {length or len(body)}"]
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    status_line, _, rest = received.partition(b"\r\n")
    answer = parse_cgi(rest)
    answer.status = int(status_line.split()[1])
    return answer


@pytest.mark.parametrize("script", SCRIPTS)
def test_malformed_requests_get_a_400_page_from_serve(site, news, served, script):
    """Each malformed request to each page of serve: 400, a page, no traceback."""
    path = "/admin/login" if script == "admin/index.py" else "/" + script
    for what, method, query, body, ctype, length in BAD:
        target = path + (f"?{query}" if query else "")
        answer = raw_request(served.port, method, target, body, ctype, length)
        if length is not None and not length.isdigit():
            # waitress answers this one itself, before the app: its own plain 400
            assert answer.status == 400 and TRACEBACK not in answer.body, (what, answer)
            continue
        assert_400_page(answer, what)
    served.stop()
    assert TRACEBACK not in served.stderr()


@pytest.mark.parametrize("script", SCRIPTS)
def test_malformed_requests_get_a_400_page_from_the_cgi_scripts(site, news, script):
    """The same requests to each CGI script: 400, a page, no traceback."""
    site.set(language="en")
    path_info = "/login" if script == "admin/index.py" else ""
    for what, method, query, body, ctype, length in BAD:
        extra = {"CONTENT_LENGTH": length} if length is not None else {}
        answer = run_cgi(site, script, method, query=query, body=body, content_type=ctype,
                         path_info=path_info, **extra)
        assert_400_page(answer, what)


def test_the_cron_url_answers_400_to_too_many_fields(site, served):
    """The renamed cron script too (text, not a page, but 400 and no traceback)."""
    cron = "/cgi/" + sorted(site.cgi_dir.glob("cron-*.py"))[0].name
    answer = raw_request(served.port, "GET", f"{cron}?{MANY}", b"", "", None)
    assert answer.status == 400, answer
    assert TRACEBACK not in answer.body
