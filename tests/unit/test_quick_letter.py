"""The confirmation request written without the e-mail package is byte for
byte the one the e-mail package writes (mail/quick_letter.py), and lands in
the outbox as the outbox transport would put it (mail/confirm_letter.py)."""

from __future__ import annotations

import sys
import time
from datetime import datetime, timedelta, timezone
from email import quoprimime, utils

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vykhukhol import mail
from vykhukhol import services as svc
from vykhukhol.errors import BadInput
from vykhukhol.mail import confirm_letter, quick_letter

DATE = datetime(2026, 11, 29, 20, 30, 5, tzinfo=timezone.utc)
MSGID = "<179598301720.9751.17559313668583561934@example.org>"

# Pieces an attacker types: encoded words, line ends of every kind, quotes, long runs.
hostile = st.lists(st.sampled_from([
    "a", " ", "\t", "\r", "\n", "\r\n", "\x00", "\x0b", "\x0c", "\x1c", "\u0085", "\u2028",
    "\u2029", "Ж", "😀", '"', "\\", "<", ">", ",", "@", ";", "=?", "?=", "=?utf-8?q?",
    "=?utf-8?b?", "=0D=0A", "Bcc: x@evil.test", "=?utf-8?q?=0D=0ABcc:_inj@evil.test?=",
    "=?utf-8?b?DQpCY2M6IGluakBldmlsLnRlc3Q=?=", "x" * 80, "Ж" * 40, "=", "=3D", " \t",
]), max_size=12).map("".join)
names = st.one_of(
    st.sampled_from(["", "John Smith", "Иван Петров", "J. R. R. Tolkien", "a\r\nBcc: x@y",
                     "O'Brien, Pat", '"quoted"', 'say "hi" \\ there', "x" * 90, "  two  spaces ",
                     "=?utf-8?q?hi?=", "Выхухоль «Новости»"]),
    st.text(max_size=40),
    hostile,
)
addresses = st.one_of(
    st.sampled_from(["u1@example.com", "a.b+c@sub.example.org", "x@пример.рф",
                     "very." + "long" * 20 + "@example.com", "o'hara@example.com",
                     "bad address@example.com", "no-at-sign", ""]),
    st.from_regex(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,20}@[a-z0-9-]{1,10}\.[a-z]{2,4}",
                  fullmatch=True),
)
subjects = st.one_of(
    st.sampled_from(["Please confirm your subscription: News", "Подтвердите подписку: Новости",
                     "Подтвердите подписку: " + "Очень длинное название рассылки " * 4,
                     "x" * 120, "=?utf-8?q?hi?=", "a\nb", ""]),
    st.text(max_size=120),
    hostile,
)
# Line by line: white space at the ends, lines of 75 to 80 characters, = near a break.
edges = st.lists(st.sampled_from(["a" * 73, "a" * 74, "a" * 75, "a" * 76, "a" * 77, "Ж", "=",
                                  " ", "\t", "\n", "\r", "\r\n", "\x0b", "\x85", ".", "😀"]),
                 max_size=12).map("".join)
texts = st.one_of(st.text(max_size=300), edges, hostile,
                  st.sampled_from(["", "\n", "Здравствуйте, Иван!\n\nТекст.\n", "tab\t\nend ",
                                   "a" * 75 + " \n" + "b" * 77 + "\t", "=3D =\r\nmixed\rends"]))
runs = st.one_of(st.just("web-0123abcd"), st.text(max_size=30), st.sampled_from(
    ["r" * 70, "a=?b", "", " x ", "web-1.2_3+4"]))


def built(**fields) -> bytes:
    return mail.build_message(**fields, date=DATE, message_id=MSGID).as_bytes(policy=mail.POLICY)


def utf8(*values: str) -> bool:
    try:
        for value in values:
            value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(from_name=names, to_name=names, address=addresses, subject=subjects, text=texts,
       run_id=runs)
@example(from_name="Выхухоль", to_name='Eve "the" \\ one', address="u1@example.com",
         subject="Подтвердите подписку: Новости", text="Текст\n", run_id="web-0123abcd")
def test_a_quick_letter_is_byte_for_byte_the_built_one(from_name, to_name, address, subject,
                                                       text, run_id):
    fields = dict(from_name=from_name, from_email="list@example.org", to_email=address,
                  to_name=to_name, subject=subject, text=text, run_id=run_id)
    try:
        expected = built(**fields)
    except (BadInput, UnicodeEncodeError) as exc:  # the quick writer refuses the same way
        with pytest.raises(type(exc)):
            quick_letter.letter(**fields, date=DATE, message_id=MSGID)
        return
    got = quick_letter.letter(**fields, date=DATE, message_id=MSGID)
    if got is None:  # left to the e-mail package: only a run id it would fold or parse
        assert not quick_letter._PLAIN_RUN.fullmatch(mail.clean_header_text(run_id)) \
            or len(f"X-Vykhukhol-Run: {mail.clean_header_text(run_id)}") > 78
        return
    assert got == expected


@settings(max_examples=300, deadline=None)
@given(line=st.binary(max_size=200) | edges.map(lambda t: t.encode("utf-8")))
def test_a_body_line_is_quoted_as_the_e_mail_package_quotes_it(line):
    for raw in line.splitlines() or [b""]:
        expected = quoprimime.body_encode(raw.decode("latin-1") + "\n", 78).replace("\n", "\r\n")
        assert quick_letter._quoted_line(raw) == expected


def test_the_date_and_the_message_id_are_written_as_the_e_mail_package_writes_them():
    moment = datetime(2026, 1, 4, 0, 0, 9, tzinfo=timezone.utc)
    for day in range(400):
        shifted = moment + timedelta(days=day, hours=day % 24, minutes=day % 60)
        assert quick_letter.date_value(shifted) == utils.format_datetime(shifted)
    east = moment.astimezone(timezone(timedelta(hours=3)))
    assert quick_letter.date_value(east) == utils.format_datetime(east)
    before = int(time.time() * 100)
    made = quick_letter.made_message_id("example.org")
    ours = made[1:-1].split("@")[0].split(".")
    theirs = utils.make_msgid(domain="example.org")[1:-1].split("@")[0].split(".")
    assert len(ours) == len(theirs) == 3 and all(part.isdigit() for part in ours)
    assert before <= int(ours[0]) <= int(time.time() * 100) and int(ours[1]) == int(theirs[1])
    assert made.endswith("@example.org>")


def test_a_message_id_the_e_mail_package_would_fold_is_left_to_it():
    long_id = "<" + "1" * 80 + "@example.org>"
    assert quick_letter.letter(from_name="", from_email="l@example.org", to_email="u@example.org",
                               to_name="", subject="S", text="T", run_id="r",
                               message_id=long_id) is None


HOSTILE_NAMES = ["", "Ivan", "Иван «Петров»", "Eve\r\nBcc: victim@example.net", '"Q" \\ x',
                 "=?utf-8?q?=0D=0ABcc:_x@evil.test?=", "a\u2028b\u2029c\x85d\x00e\tf",
                 "x" * 100, "Ж" * 60]


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_the_quick_request_is_the_full_one_in_both_languages(site, lang):
    site.set(language=lang)
    site.service("news", title="Новости «Выхухоли» — " + "очень " * 12, from_name='Вы "хухоль"')
    site.service("plain", title="News\u2028letter", from_name="")
    settings_ = site.settings()
    for name in ("news", "plain"):
        service = svc.find_service(site.data, name)
        for whom in HOSTILE_NAMES:
            for email in ("reader@example.org", "maria@пример.рф"):
                full = confirm_letter.confirmation(service, settings_, email, whom, "web-0001",
                                                   DATE, date=DATE, message_id=MSGID)
                quick = confirm_letter.quick_bytes(service, settings_, email, whom, "web-0001",
                                                   DATE, date=DATE, message_id=MSGID)
                assert quick is not None
                assert quick == (full.data, full.envelope_from), (name, whom, email)


def test_a_subscribe_puts_in_the_outbox_what_the_transport_would(site, monkeypatch):
    """The file the quick way writes is the transport's, but for its Message-ID and Date."""
    site.service("news", title="Новости")
    settings_ = site.settings()
    service = svc.find_service(site.data, "news")
    assert confirm_letter.hand_over(site.data.outbox, service, settings_, "Ann@Example.org",
                                        "Ann", "web-0001", DATE) is True
    quick_file, = site.data.outbox.glob("*.eml")
    quick = quick_file.read_bytes()
    quick_file.unlink()
    message = confirm_letter.confirmation(service, settings_, "Ann@Example.org", "Ann", "web-0001",
                                          DATE)
    with mail.open_transport(mail.config_from_settings(settings_, site.data.outbox)) as transport:
        transport.send(message, "Ann@Example.org")
    full_file, = site.data.outbox.glob("*.eml")
    assert quick_file.name.split("-", 2)[2] == full_file.name.split("-", 2)[2]

    def steady(data: bytes) -> list[bytes]:
        return [line for line in data.split(b"\r\n")
                if not line.startswith((b"Message-ID:", b"Date:"))]
    assert steady(quick) == steady(full_file.read_bytes())
    assert quick.startswith(b"Return-Path: <")


def fake_sendmail(folder, status=0):
    script = folder / "sendmail"
    script.write_text(f"#!{sys.executable}\n"
                      "import sys, pathlib\n"
                      f"out = pathlib.Path({str(folder)!r})\n"
                      "n = len(list(out.glob('argv-*')))\n"
                      "(out / f'argv-{n}').write_text('\\n'.join(sys.argv[1:]))\n"
                      "(out / f'stdin-{n}').write_bytes(sys.stdin.buffer.read())\n"
                      f"sys.exit({status})\n")
    script.chmod(0o755)
    return script


def test_sendmail_gets_what_the_sendmail_transport_would_give_it(site, tmp_path):
    site.set(mail__transport="sendmail", mail__sendmail_path=str(fake_sendmail(tmp_path)))
    site.service("news", title="Новости")
    settings_ = site.settings()
    service = svc.find_service(site.data, "news")
    assert confirm_letter.hand_over(site.data.outbox, service, settings_, "ann@example.org",
                                    "Анна", "web-0001", DATE) is True
    message = confirm_letter.confirmation(service, settings_, "ann@example.org", "Анна",
                                          "web-0001", DATE)
    with mail.open_transport(mail.config_from_settings(settings_, site.data.outbox)) as transport:
        transport.send(message, "ann@example.org")
    quick, full = ((tmp_path / f"stdin-{n}").read_bytes() for n in (0, 1))
    assert (tmp_path / "argv-0").read_text() == (tmp_path / "argv-1").read_text()
    assert b"\r\n" not in quick

    def steady(data: bytes) -> list[bytes]:
        return [line for line in data.split(b"\n")
                if not line.startswith((b"Message-ID:", b"Date:"))]
    assert steady(quick) == steady(full)


def test_a_sendmail_that_refuses_is_the_transports_failure(site, tmp_path):
    site.set(mail__transport="sendmail", mail__sendmail_path=str(fake_sendmail(tmp_path, 75)))
    site.service("news")
    service = svc.find_service(site.data, "news")
    assert confirm_letter.hand_over(site.data.outbox, service, site.settings(), "u@example.org",
                                    "", "web-0001", DATE) is False
    site.set(mail__sendmail_path=str(tmp_path / "gone"))  # no such program: nothing is run
    assert confirm_letter.hand_over(site.data.outbox, service, site.settings(), "u@example.org",
                                    "", "web-0001", DATE) is False
    assert len(list(tmp_path.glob("argv-*"))) == 1


@pytest.mark.parametrize("setting", [{"mail.dev_redirect": "dev@example.org"},
                                     {"mail.transport": "smtp"},
                                     {"mail.dkim_domain": "example.org"}])
def test_signing_a_redirect_or_another_transport_take_the_full_way(site, setting):
    site.set(**setting)
    site.service("news")
    service = svc.find_service(site.data, "news")
    assert confirm_letter.hand_over(site.data.outbox, service, site.settings(),
                                        "u@example.org", "", "web-0001", DATE) is None
    assert not list(site.data.outbox.glob("*.eml"))
