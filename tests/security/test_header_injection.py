"""Header injection (docs/reference/transports.md#transports-headers,
docs/reference/security.md#security-strangers): nothing a stranger or an
editor types can add a header, end the header block or add a line to a letter,
on any Python the project accepts, patched for CVE-2024-6923 or not.

The attack as it was run: a subscribe POST to a real ``vykhukhol serve`` with
the name ``=?utf-8?q?=0D=0ABcc:_inj@evil.test?=`` made the e-mail package
decode the encoded word and write its CR LF into the ``To`` header of the
confirmation letter (a ``Bcc:`` header); ``=?utf-8?q?=0D=0A=0D=0AFAKE?=``
ended the header block; ``{{ name }}`` in a subject did the same; the admin's
outbox page then answered 500. Here the same POSTs, a real ``vykhukhol cron``
through SMTP (aiosmtpd on loopback) and through a sendmail program, and a
property test over build_message and Press.

Each letter is checked twice: parsed by the e-mail package, and by a strict
reading of its raw bytes (header lines split on the line end: the list of
header names must be exactly the one a harmless letter of the same kind has).
A display name made of several encoded words is compared with RFC 2047's
reading (``email.header.decode_header``: the white space between two encoded
words is not text); the e-mail package's address parser keeps that white
space (a known deviation of its own), so it is compared only where one word
holds the whole name.
"""

from __future__ import annotations

import email
import email.policy
import http.client
import re
import shlex
import socket
import time
import unicodedata
from collections.abc import Iterator
from datetime import datetime, timezone
from email.header import decode_header, make_header
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from aiosmtpd.controller import Controller
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from support.servetools import PASSWORD, ServeProcess
from vykhukhol import mail
from vykhukhol.addresses import clean_name
from vykhukhol.errors import BadInput
from vykhukhol.mail import clean_header_text

BCC = "=?utf-8?q?=0D=0ABcc:_inj@evil.test?="
FAKE_BODY = "=?utf-8?q?=0D=0A=0D=0AFAKE?="
HOSTILE_NAMES = [
    BCC,
    FAKE_BODY,
    "=?utf-8?b?DQpCY2M6IGluakBldmlsLnRlc3Q=?=",  # "\r\nBcc: inj@evil.test" in base64
    "=?UTF-8?Q?=0AX-Evil:_1?= Иван =?utf-8?q?=0D=0A=0D=0A?= Петров",
    '"=?utf-8?q?=0D=0A?=" <evil@evil.test>, =?utf-8?q?=0D=0ATo:_x@evil.test?=',
]
# What a subscriber file can hold besides (no CR, LF or tab: they end a line or a field).
STORED_NAMES = HOSTILE_NAMES + [
    "Ann\u2028Bcc: line@evil.test",
    "Bob\u0085Subject: next\u2029X-Evil: 2\x00end",
    "Долгое Имя Подписчика " * 4 + BCC,
]
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
TRACEBACK = "Traceback"


# --- reading a letter strictly -----------------------------------------------------------


def header_block(data: bytes, linesep: bytes = b"\r\n") -> list[bytes]:
    """The raw header lines of a letter, its line ends checked: only ``linesep``
    ends a line, and the header block ends at the first empty line."""
    other = b"\n" if linesep == b"\r\n" else b"\r"
    assert other not in data.replace(linesep, b""), "a bare line end in the letter"
    assert all(byte < 128 for byte in data), "a letter must be 7-bit"
    head, blank, _ = data.partition(linesep + linesep)
    assert blank, "no empty line between the headers and the body"
    return head.split(linesep)


def header_names(data: bytes, linesep: bytes = b"\r\n") -> list[str]:
    """Header names as a strict reader finds them: one per line that does not
    start with white space; every other line is a continuation."""
    names = []
    for line in header_block(data, linesep):
        assert len(line) <= 998, "a header line longer than SMTP allows"
        if line[:1] in (b" ", b"\t"):
            assert names, "a continuation line before any header"
            continue
        name, colon, _ = line.partition(b":")
        assert colon and re.fullmatch(rb"[!-9;-~]+", name), f"not a header line: {line!r}"
        names.append(name.decode("ascii"))
    return names


def raw_header(data: bytes, wanted: str, linesep: bytes = b"\r\n") -> str:
    """The one header called ``wanted``, as written, unfolded."""
    values: list[list[str]] = []
    for line in header_block(data, linesep):
        text = line.decode("ascii")
        if text[:1] in (" ", "\t"):
            values[-1].append(text)
        else:
            name, _, value = text.partition(":")
            values.append([name, value.lstrip(" ")])
    [found] = [parts[1:] for parts in values if parts[0].lower() == wanted.lower()]
    return "".join(found)


def parsed(data: bytes, linesep: bytes = b"\r\n") -> email.message.EmailMessage:
    message = email.message_from_bytes(data.replace(linesep, b"\r\n"), policy=email.policy.default)
    assert isinstance(message, email.message.EmailMessage)
    return message


def rfc2047(value: str) -> str:
    """``value`` decoded by RFC 2047's rules (adjacent encoded words join)."""
    return str(make_header(decode_header(value)))


def display_name(data: bytes, header: str, linesep: bytes = b"\r\n") -> str:
    """The display name of ``header`` as a mail reader shows it."""
    raw = raw_header(data, header, linesep)
    phrase = raw.rpartition("<")[0].strip() if raw.endswith(">") else ""
    by_package = parsed(data, linesep)[header].addresses[0].display_name
    if phrase.count("=?") > 1:  # several encoded words: see the module's docstring
        return rfc2047(phrase)
    if "=?" in phrase:
        assert by_package == rfc2047(phrase)
    return by_package  # plain words, a quoted string or one encoded word


def one_line(value: str) -> str:
    """What a template sees of a value (it cannot end a line)."""
    return "".join(" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch for ch in value)


def body_lines(message: email.message.EmailMessage) -> list[str]:
    text = message.get_body(("plain",)).get_content().replace("\r\n", "\n")
    assert "\r" not in text
    assert text.split("\n") == text.splitlines() + [""] * text.endswith("\n"), \
        "a character in the body that a reader takes for a line end"
    return text.split("\n")


# --- the attack as it was run: subscribe POSTs to a real serve -------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Http:
    """Requests to one ``vykhukhol serve``, with the admin's cookie once logged in."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, fields: dict[str, str] | None = None
                ) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = dict(FORM) if fields is not None else {}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        try:
            conn.request(method, path, urlencode(fields).encode() if fields is not None else None,
                         headers)
            response = conn.getresponse()
            for name, value in response.getheaders():
                if name.lower() == "set-cookie":
                    key, _, rest = value.partition("=")
                    self.cookies[key.strip()] = rest.split(";")[0]
            return response.status, response.read().decode("utf-8", "replace")
        finally:
            conn.close()

    def log_in(self) -> None:
        """As a browser does: the form's hidden fields (if any) with the password."""
        status, page = self.request("GET", "/admin/login")
        assert status == 200, page
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page))
        status, page = self.request("POST", "/admin/login", {**fields, "password": PASSWORD})
        assert status == 303, page


@pytest.fixture
def served(site: Any, tmp_path: Path) -> Iterator[Http]:
    """``vykhukhol serve`` over a site whose confirmation letter has the name
    in its subject and its body; mail goes to the outbox."""
    site.service("news", confirm_subject="Подтвердите подписку, {{ name }}",
                 confirm_body="Hello {{ name }}!\nConfirm: {{ confirm_url }}\nBye\n")
    port = free_port()
    running = ServeProcess(site, port, tmp_path / "serve", ready_path="/cgi/subscribe.py?service=news")
    running.start()
    try:
        yield Http(port)
    finally:
        code, _, err = running.stop()
        assert TRACEBACK not in err, err


def outbox_letter(site: Any, address: str) -> bytes:
    """The one letter to ``address``; serve writes it just after its answer."""
    deadline = time.monotonic() + 10
    while True:
        found = [p for p in site.data.outbox.glob("*.eml") if p.name.endswith(f"-{address}.eml")]
        if found or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    [path] = found
    return path.read_bytes()


def test_a_name_of_encoded_line_breaks_posted_to_subscribe_adds_no_header(site, served):
    status, page = served.request("POST", "/cgi/subscribe.py",
                                  {"service": "news", "email": "ann@example.org", "name": "Ann"})
    assert status == 200, page
    control = outbox_letter(site, "ann@example.org")
    expected = header_names(control)
    # The outbox writes the envelope first, as a receiving server would.
    assert [n.lower() for n in expected][:4] == ["return-path", "from", "to", "subject"]

    for i, name in enumerate(HOSTILE_NAMES):
        address = f"victim{i}@example.org"
        status, page = served.request("POST", "/cgi/subscribe.py",
                                      {"service": "news", "email": address, "name": name})
        assert status == 200, page
        data = outbox_letter(site, address)
        assert header_names(data) == expected, data[:800]
        message = parsed(data)
        assert list(message.keys()) == expected
        assert "Bcc" not in message and message.defects == []
        stored = clean_name(name)
        assert display_name(data, "To") == stored
        assert message["To"].addresses[0].addr_spec == address
        assert message["Subject"] == f"Подтвердите подписку, {stored}"
        lines = body_lines(message)
        assert lines[0] == f"Hello {stored}!" and lines[2:] == ["Bye", ""], lines

    served.log_in()
    status, page = served.request("GET", "/admin/outbox")
    assert status == 200 and TRACEBACK not in page, page[:2000]
    assert "Bcc: inj@evil.test" in page or "=?utf-8?q?=0D=0ABcc:_inj@evil.test?=" in page
    for path in site.data.outbox.glob("*.eml"):
        status, page = served.request("GET", f"/admin/outbox/{path.name}")
        assert status == 200 and TRACEBACK not in page, page[:2000]


# Letters nobody should find in an outbox, put there by hand: the pages show them anyway.
BROKEN_LETTERS = {
    "empty.eml": b"",
    "no-headers.eml": b"just a body\r\nof two lines\r\n",
    "binary.eml": bytes(range(256)) * 40,
    "latin1.eml": b"Subject: caf\xe9 \xff\xfe\r\nTo: J\xf6rg <j@example.org>\r\n"
                  b"Content-Type: text/plain; charset=x-unknown-8\r\n\r\nk\xf6rper \x00\x1b[31m\r\n",
    "encoded-crlf.eml": (f"From: {BCC} <a@example.org>\r\nTo: {FAKE_BODY} <b@example.org>\r\n"
                         f"Subject: {BCC}\r\nDate: {BCC}\r\n\r\nbody\r\n").encode(),
    "bad-charset.eml": b"Subject: =?x-nonesuch?q?abc?= =?utf-8?b?!!!?=\r\nDate: 32 Foo 99999 99:99\r\n"
                       b"Content-Type: text/plain; charset=idna\r\n"
                       b"Content-Transfer-Encoding: base64\r\n\r\n%%%not base64\xff\r\n",
    "broken-mime.eml": b"Subject: parts\r\nMIME-Version: 1.0\r\n"
                       b"Content-Type: multipart/alternative\r\n\r\n--x\r\nContent-Type: text/html;"
                       b" charset=\"utf-8\r\n\r\n<p>never closed\r\n--x\r\n",
    "deep.eml": b"Content-Type: multipart/mixed; boundary=a\r\n\r\n"
                + b"".join(b"--a\r\nContent-Type: multipart/mixed; boundary=a\r\n\r\n" for _ in range(3000)),
    "huge-header.eml": b"Subject: " + b"x" * 3_000_000 + b"\r\nX-Many: " + b"=?utf-8?q?a?= " * 50_000
                       + b"\r\n\r\nbody\r\n",
}


def test_the_outbox_pages_show_any_file_found_there_without_a_500(site, served):
    site.data.outbox.mkdir(exist_ok=True)
    for file, data in BROKEN_LETTERS.items():
        (site.data.outbox / file).write_bytes(data)
    served.log_in()
    status, page = served.request("GET", "/admin/outbox")
    assert status == 200 and TRACEBACK not in page, page[:3000]
    for file in BROKEN_LETTERS:
        status, page = served.request("GET", f"/admin/outbox/{file}")
        assert status == 200 and TRACEBACK not in page, (file, page[:3000])
    status, page = served.request("GET", "/admin/outbox/latin1.eml")
    assert "rper" in page and "\x00" not in page and "\x1b" not in page


# --- a real cron run: series letters and a newsletter through SMTP and sendmail ----------------


class Keeper:
    """An aiosmtpd handler that keeps every letter's bytes."""

    def __init__(self) -> None:
        self.letters: list[bytes] = []

    async def handle_DATA(self, server, session, envelope) -> str:
        self.letters.append(bytes(envelope.original_content))
        return "250 OK"


SAVING_SENDMAIL = """#!/bin/sh
number=$(ls {folder} | wc -l)
exec cat > {folder}/$(printf %05d "$number").eml
"""


def prepare_run(site: Any) -> None:
    """A series whose letter and a newsletter both put the name in the subject
    and the body; one harmless subscriber and one per hostile name."""
    site.service("series", from_name="Выхухоль =?utf-8?q?=0D=0AReply-To:_x@evil.test?=",
                 letters=[("Урок 1 для {{ name }}", "0s", "Hello {{ name }}\nLesson one.\n")])
    site.subscriber("series", "ann@example.org", name="Ann", ago=7200)
    for i, name in enumerate(STORED_NAMES):
        site.subscriber("series", f"victim{i}@example.org", name=name, ago=7200)
    site.ok("newsletter", "create", "--services", "series", "--subject", "News for {{ name }}",
            "--body", "Hi {{ name }}\nThe news.\n")


def check_run(letters: list[bytes], linesep: bytes) -> None:
    """Every letter of the run against the harmless one of its kind."""
    by_kind: dict[str, list[bytes]] = {}
    for data in letters:
        subject = parsed(data, linesep)["Subject"]
        assert subject, f"a letter without a subject: {data[:800]!r}"
        kind = subject.split(" ")[0]  # Урок / News / the completion report
        by_kind.setdefault(kind, []).append(data)
    assert {"Урок", "News"} <= set(by_kind), list(by_kind)
    assert len(by_kind["Урок"]) == len(by_kind["News"]) == len(STORED_NAMES) + 1
    for kind, group in by_kind.items():
        expected = header_names(group[0], linesep)
        for data in group:
            assert header_names(data, linesep) == expected, data[:1000]
            message = parsed(data, linesep)
            assert list(message.keys()) == expected and "Bcc" not in message
            assert "Reply-To" not in message and "X-Evil" not in message
            if kind not in ("Урок", "News"):
                continue
            address = message["To"].addresses[0].addr_spec
            name = "Ann" if address == "ann@example.org" else \
                STORED_NAMES[int(address.removeprefix("victim").partition("@")[0])]
            shown = clean_header_text(name)
            assert display_name(data, "To", linesep) == shown
            assert display_name(data, "From", linesep) == \
                "Выхухоль =?utf-8?q?=0D=0AReply-To:_x@evil.test?="
            assert message["Subject"] == clean_header_text(
                f"Урок 1 для {one_line(name)}" if kind == "Урок" else f"News for {one_line(name)}")
            first = "Hello" if kind == "Урок" else "Hi"
            assert body_lines(message)[:4] == [f"{first} {one_line(name)}",
                                           "Lesson one." if kind == "Урок" else "The news.", "",
                                           "-- "]  # then the footer (docs/using/services.md#footer)


@pytest.fixture
def smtp_keeper() -> Iterator[tuple[int, Keeper]]:
    keeper = Keeper()
    port = free_port()
    controller = Controller(keeper, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port, keeper
    finally:
        controller.stop()


def test_a_cron_run_over_smtp_writes_every_letter_with_only_its_own_headers(site, smtp_keeper):
    port, keeper = smtp_keeper
    site.use_smtp(port)
    prepare_run(site)
    result = site.cli("cron")
    assert TRACEBACK not in result.stderr, result.stderr
    check_run(keeper.letters, b"\r\n")


def test_a_cron_run_through_sendmail_writes_every_letter_with_only_its_own_headers(site, tmp_path):
    folder = tmp_path / "piped"
    folder.mkdir()
    program = tmp_path / "sendmail"
    program.write_text(SAVING_SENDMAIL.format(folder=shlex.quote(str(folder))))
    program.chmod(0o755)
    site.set(mail__transport="sendmail", mail__sendmail_path=str(program),
             mail__from_email="list@example.org")
    prepare_run(site)
    result = site.cli("cron")
    assert TRACEBACK not in result.stderr, result.stderr
    check_run([p.read_bytes() for p in sorted(folder.glob("*.eml"))], b"\n")


def test_dev_redirect_keeps_the_original_recipient_in_a_header_of_our_own_writing(site, smtp_keeper):
    port, keeper = smtp_keeper
    site.use_smtp(port)
    site.set(mail__dev_redirect="dev@example.org")
    prepare_run(site)
    site.cli("cron")
    assert keeper.letters
    for data in keeper.letters:
        names = header_names(data)
        assert names.count("X-Vykhukhol-Original-To") == 1 and "Bcc" not in names
        original = parsed(data)["X-Vykhukhol-Original-To"]
        assert original == rfc2047(raw_header(data, "X-Vykhukhol-Original-To"))
        assert "\r" not in original and "\n" not in original


# --- the property: whatever the name, subject or address, only our headers ----------------------

ALPHABET = st.sampled_from([
    "a", "Z", "0", " ", "  ", "\t", "\r", "\n", "\r\n", "\x00", "\x0b", "\x0c", "\x1c", "\x7f",
    "\u0085", "\u2028", "\u2029", "\xa0", "\u3000", "Ж", "ё", "€", "😀", "\ud7ff", '"', "\\", "<",
    ">", ",", ";", ":", "@", "(", ")", ".", "?", "=", "_", "=?", "?=", "=?utf-8?q?", "=?utf-8?b?",
    "=0D=0A", "=0A", "DQo=", "Bcc: x@evil.test", "=?utf-8?q?=0D=0ABcc:_inj@evil.test?=",
    "=?utf-8?b?DQpCY2M6IGluakBldmlsLnRlc3Q=?=", "=?UTF-8?Q?=0D=0A=0D=0AFAKE?=", "x" * 80,
    "Ж" * 40, "=?iso-8859-1?q?=E9?=", "{{ name }}",
])
hostile_text = st.lists(ALPHABET, max_size=12).map("".join)
ADDRESS = st.sampled_from([
    "u@example.com", "=?utf-8?q?=0D=0A?=@example.com", "a=?b@example.com", "o'hara@example.com",
    "very." + "long" * 20 + "@example.com", "x@пример.рф", "?=@example.com",
])
DATE = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
MSGID = "<1.2.3@example.org>"


def written(name: str, from_name: str, subject: str, address: str, how: str) -> bytes:
    """One letter by ``build_message`` or a press, plain or with an HTML part."""
    fields = dict(to_email=address, to_name=name, subject=subject, text=f"Hi {one_line(name)}\n",
                  html="<p>Hi</p>\n" if how == "html" else None,
                  unsubscribe_url="https://lists.example.org/u?e=1", date=DATE, message_id=MSGID)
    shared = dict(from_name=from_name, from_email="list@example.org", run_id="run-1",
                  list_id="news.example.org")
    if how == "pressed":
        return mail.Press(**shared).write(**fields).data
    return mail.build_message(**shared, **fields).as_bytes(policy=mail.POLICY)


OUR_HEADERS = ["From", "To", "Subject", "Date", "Message-ID", "List-Id", "List-Unsubscribe",
               "List-Unsubscribe-Post", "X-Vykhukhol-Run"]
EXPECTED = {"built": OUR_HEADERS + ["Content-Type", "Content-Transfer-Encoding", "MIME-Version"],
            "html": OUR_HEADERS + ["MIME-Version", "Content-Type"]}
EXPECTED["pressed"] = EXPECTED["built"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=hostile_text, from_name=hostile_text, subject=hostile_text, address=ADDRESS,
       how=st.sampled_from(sorted(EXPECTED)))
@example(name=BCC, from_name=FAKE_BODY, subject="Урок для " + BCC, address="u@example.com",
         how="built")
def test_any_name_subject_or_address_gives_exactly_our_headers(name, from_name, subject, address,
                                                                how):
    try:
        data = written(name, from_name, subject, address, how)
    except BadInput:
        assert "=?" in address, address  # an address that would be decoded is refused
        return
    assert "=?" not in address
    assert header_names(data) == EXPECTED[how], data[:1500]
    assert all(len(line) <= 78 or line.startswith((b"To:", b" <"))
               for line in header_block(data)), "a header line we could have folded"
    message = parsed(data)
    assert list(message.keys()) == EXPECTED[how]
    assert display_name(data, "To") == clean_header_text(name)
    assert display_name(data, "From") == clean_header_text(from_name)
    assert message["Subject"] == clean_header_text(subject)
    assert rfc2047(raw_header(data, "Subject")) == clean_header_text(subject)
    assert message["To"].addresses[0].addr_spec == mail.check_address(address)
    assert body_lines(message) == [f"Hi {one_line(name)}", ""]
    # Written again as sendmail and dev_redirect do, the headers keep their bytes.
    again = mail.Outgoing(data, "list@example.org").message().as_bytes(policy=mail.POLICY)
    assert again.partition(b"\r\n\r\n")[0] == data.partition(b"\r\n\r\n")[0]


@pytest.mark.parametrize("field, value", [
    ("unsubscribe_url", "https://lists.example.org/u?a=?utf-8?q?=0D=0ABcc:_x@evil.test?="),
    ("list_id", "=?utf-8?q?=0D=0ABcc=3A_x=40evil.test?=.example.org"),
])
@pytest.mark.parametrize("pressed", [False, True])
def test_a_list_header_value_with_an_encoded_word_is_refused_not_decoded(field, value, pressed):
    """List-Unsubscribe and List-Id are written verbatim, but the e-mail package
    decodes an encoded word even inside a URL; such a value is refused."""
    shared = dict(from_name="News", from_email="list@example.org", run_id="run-1",
                  list_id="news.example.org")
    fields = dict(to_email="u@example.com", subject="S", text="T\n",
                  unsubscribe_url="https://lists.example.org/u?e=1")
    (shared if field == "list_id" else fields)[field] = value
    with pytest.raises(BadInput):
        if pressed:
            mail.Press(**shared).write(**fields)
        else:
            mail.build_message(**shared, **fields)
