"""A one-click unsubscribe (RFC 8058: ``List-Unsubscribe-Post``) with a bad
token answers 400. The POST comes from a mail provider, not a person: a 200
would have it tell its user the list is left while letters keep coming
(docs/reference/security.md#security-strangers). A person's button with a bad
token still gets the generic page. Replayed with the checkout's real
cgi/unsubscribe.py as CGI processes."""

from __future__ import annotations

from urllib.parse import urlencode

from support.webkit import TRACEBACK, run_cgi
from vykhukhol import tokens

ONE_CLICK = b"List-Unsubscribe=One-Click"


def test_a_one_click_post_with_a_bad_token_is_a_400_and_removes_nobody(site) -> None:
    site.set(language="en")
    site.service("news")
    site.subscriber("news", "anna@example.org")
    good = tokens.make(site.settings().secret, "news", "anna@example.org", "unsubscribe")
    for token in ("0" * len(good), good[:-1], "",
                  tokens.make(site.settings().secret, "news", "boris@example.org", "unsubscribe")):
        fields = urlencode({"s": "news", "e": "anna@example.org", "t": token})
        answer = run_cgi(site, "cgi/unsubscribe.py", "POST", query=fields, body=ONE_CLICK)
        assert answer.status == 400, (token, answer)
        assert "not valid" in answer.body and TRACEBACK not in answer.stderr
        assert "anna@example.org" in site.subscribers("news")

    by_hand = run_cgi(site, "cgi/unsubscribe.py", "POST", body=urlencode(
        {"s": "news", "e": "anna@example.org", "t": "0" * len(good)}).encode())
    assert by_hand.status == 200 and "You are unsubscribed" in by_hand.body  # nothing told
    assert "anna@example.org" in site.subscribers("news")

    fields = urlencode({"s": "news", "e": "anna@example.org", "t": good})
    answer = run_cgi(site, "cgi/unsubscribe.py", "POST", query=fields, body=ONE_CLICK)
    assert answer.status == 200 and "You are unsubscribed" in answer.body
    assert "anna@example.org" not in site.subscribers("news")
