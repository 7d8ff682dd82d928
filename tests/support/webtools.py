"""Helpers shared by the web tests (test_web_flow.py, test_cgi.py): what a page
answered, the forms on it, and the checks every public page must pass.

Plain functions over the standard library, so a failing assertion shows the
page a subscriber would have seen.
"""

from __future__ import annotations

import email
import email.policy
import re
import socket
from dataclasses import dataclass, field
from email.message import EmailMessage
from html.parser import HTMLParser
from urllib.parse import urlencode, urlsplit

TRACEBACK = "Traceback"


def free_port() -> int:
    """A local port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Page:
    """One answer: status, headers (names lower-cased), body as text."""

    status: int
    headers: dict[str, str]
    raw: bytes
    stderr: str = ""  # a CGI script's error stream

    @property
    def body(self) -> str:
        return self.raw.decode("utf-8", errors="replace")

    def header(self, name: str) -> str:
        return self.headers.get(name.lower(), "")

    @property
    def content_type(self) -> str:
        return self.header("Content-Type")

    def forms(self) -> list[Form]:
        parser = _FormParser()
        parser.feed(self.body)
        return parser.forms

    def __repr__(self) -> str:  # what a failed assertion prints
        return f"Page({self.status}, {self.content_type!r}, {self.body[:600]!r})"


@dataclass
class Form:
    action: str
    method: str
    fields: dict[str, str] = field(default_factory=dict)
    hidden: dict[str, str] = field(default_factory=dict)
    buttons: int = 0

    def encoded(self, **overrides: str) -> bytes:
        values = dict(self.fields)
        values.update(overrides)
        return urlencode(values).encode("ascii")


class _FormParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[Form] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append(Form(values.get("action", ""), values.get("method", "get").lower()))
        elif self.forms and tag == "input" and values.get("name"):
            form = self.forms[-1]
            form.fields[values["name"]] = values.get("value", "")
            if values.get("type") == "hidden":
                form.hidden[values["name"]] = values.get("value", "")
        elif self.forms and tag == "button":
            self.forms[-1].buttons += 1


def assert_clean_page(page: Page) -> None:
    """A page a person may see: HTML, no server error, no traceback."""
    assert page.status < 500, page
    assert page.content_type.startswith("text/html"), page
    assert page.body.lstrip().lower().startswith("<!doctype html>"), page
    assert TRACEBACK not in page.body, page


def assert_security_headers(page: Page) -> None:
    """The headers every page carries: no sniffing, no referrer (links hold tokens), a CSP."""
    assert page.header("X-Content-Type-Options") == "nosniff", page.headers
    assert page.header("Referrer-Policy") == "no-referrer", page.headers
    assert page.header("Content-Security-Policy"), page.headers


def plain_text(message: EmailMessage) -> str:
    part = message.get_body(("plain",))
    assert part is not None, message
    return part.get_content()


def parse_message(data: bytes) -> EmailMessage:
    parsed = email.message_from_bytes(data, policy=email.policy.default)
    assert isinstance(parsed, EmailMessage)
    return parsed


def link_in(text: str, script: str) -> str:
    """The one link to ``script`` (confirm.py, unsubscribe.py) in a letter's text."""
    found = re.findall(rf"https?://\S+/cgi/{re.escape(script)}\?\S+", text)
    assert len(found) == 1, f"expected one {script} link in:\n{text}"
    return found[0]


def list_unsubscribe(message: EmailMessage) -> str:
    """The https/http URL of the List-Unsubscribe header."""
    value = str(message["List-Unsubscribe"] or "")
    found = re.findall(r"<(https?://[^>]+)>", value)
    assert len(found) == 1, f"List-Unsubscribe: {value!r}"
    return found[0]


def path_of(url: str) -> str:
    """Path and query of a URL, exactly as given (for a request line)."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")
