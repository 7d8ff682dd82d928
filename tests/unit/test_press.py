"""A press writes each copy byte for byte as build_message would."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vykhukhol import mail
from vykhukhol.errors import BadInput

DATE = datetime(2026, 11, 29, 20, 30, 5, tzinfo=timezone.utc)
MSGID = "<179598301720.9751.17559313668583561934@example.org>"

# Pieces an attacker types: encoded words, line ends of every kind, long runs.
hostile = st.lists(st.sampled_from([
    "a", " ", "\t", "\r", "\n", "\x00", "\x0b", "\u0085", "\u2028", "\u2029", "Ж", "😀", '"', "\\",
    "<", ">", ",", "@", "=?", "?=", "=?utf-8?q?", "=?utf-8?b?", "=0D=0A", "Bcc: x@evil.test",
    "=?utf-8?q?=0D=0ABcc:_inj@evil.test?=", "=?utf-8?b?DQpCY2M6IGluakBldmlsLnRlc3Q=?=",
    "=?utf-8?q?=0D=0A=0D=0AFAKE?=", "x" * 80, "Ж" * 40,
]), max_size=10).map("".join)
names = st.one_of(
    st.sampled_from(["", "John Smith", "Иван Петров", "J. R. R. Tolkien", "a\r\nBcc: x@y",
                     "O'Brien, Pat", '"quoted"', "x" * 90, "  two  spaces ", "=?utf-8?q?hi?="]),
    st.text(max_size=40),
    hostile,
)
addresses = st.one_of(
    st.sampled_from(["u1@example.com", "a.b+c@sub.example.org", "a..b@example.com",
                     ".lead@example.com", "x@пример.рф", "very." + "long" * 20 + "@example.com",
                     "o'hara@example.com", "a/b=c@example.com"]),
    st.from_regex(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,20}@[a-z0-9-]{1,10}\.[a-z]{2,4}",
                  fullmatch=True),
)
texts = st.one_of(
    st.sampled_from(["", "\n", "Hello\n", "line two  \n.dot\n" + "x" * 100, "=3D =\r\nmixed\rends",
                     "Здравствуйте, Иван!\n\nТекст.\n", "tab\t\nend ", "a" * 75 + " \n" + "b" * 77 + "\t"]),
    st.text(max_size=300),
)
subjects = st.one_of(
    st.sampled_from(["Lesson 1", "Урок 1 — привет", "x" * 120, "=?utf-8?q?hi?=", "a\nb", ""]),
    st.text(max_size=80),
    hostile,
)
urls = st.one_of(
    st.none(),
    st.sampled_from(["https://example.org/u?s=news&e=u1%40example.com&t=abc",
                     "https://example.org/u?x==?utf-8?q?a?=", "http://e.org/" + "a" * 200]),
)

mailtos = st.one_of(
    st.none(),
    st.sampled_from(["news+s1abcdefghijklmnopqrstuvwx@example.org", "list@example.org",
                     "x@пример.рф", "not an address", "b@" + "d" * 900 + ".org"]),
)


def both(**fields):
    common = dict(from_name=fields.pop("from_name", "Выхухоль News"),
                  from_email=fields.pop("from_email", "list@example.org"),
                  run_id=fields.pop("run_id", "0123456789abcdef"),
                  list_id=fields.pop("list_id", "news.example.org"))
    expected = mail.build_message(**common, **fields, date=DATE, message_id=MSGID)
    press = mail.Press(**common)
    got = press.write(**fields, date=DATE, message_id=MSGID)
    return expected.as_bytes(policy=mail.POLICY), got


def encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=names, address=addresses, subject=subjects, text=texts, url=urls, mailto=mailtos)
@example(name="Иван", address="u1@example.com", subject="Урок", text="Текст\n", url=None,
         mailto=None)
def test_a_pressed_letter_is_byte_for_byte_the_built_one(name, address, subject, text, url,
                                                        mailto):
    try:
        expected, got = both(to_email=address, to_name=name, subject=subject, text=text,
                             unsubscribe_url=url, unsubscribe_mailto=mailto)
    except (BadInput, UnicodeEncodeError) as exc:  # then the press must refuse the same way
        with pytest.raises(type(exc)):
            mail.Press(from_name="Выхухоль News", from_email="list@example.org",
                       run_id="0123456789abcdef", list_id="news.example.org").write(
                to_email=address, to_name=name, subject=subject, text=text,
                unsubscribe_url=url, unsubscribe_mailto=mailto, date=DATE, message_id=MSGID)
        return
    assert got.data == expected
    assert got.from_address == "list@example.org"


@settings(max_examples=100, deadline=None)
@given(from_name=names, run_id=st.text(min_size=1, max_size=30))
def test_the_shared_headers_are_the_built_ones(from_name, run_id):
    try:
        expected, got = both(from_name=from_name, run_id=run_id, to_email="u@example.com",
                             subject="S", text="T\n", list_id=None)
    except BadInput:
        with pytest.raises(BadInput):
            mail.Press(from_name=from_name, from_email="list@example.org", run_id=run_id)
        return
    assert got.data == expected


def test_one_press_writes_many_different_copies_from_its_caches():
    press = mail.Press(from_name="News", from_email="list@example.org", run_id="r1",
                       list_id="news.example.org")
    for i in range(3):  # the second and third copies come from the caches
        for name, text in (("Ann", "Hi Ann\nSame line\n"), ("Иван", "Hi Иван\nSame line\n")):
            got = press.write(to_email=f"u{i}@example.com", to_name=name, subject=f"S {name}",
                              text=text, unsubscribe_url=f"https://e.org/u?{i}", date=DATE,
                              message_id=MSGID)
            expected = mail.build_message(from_name="News", from_email="list@example.org",
                                          to_email=f"u{i}@example.com", to_name=name,
                                          subject=f"S {name}", text=text, run_id="r1",
                                          list_id="news.example.org",
                                          unsubscribe_url=f"https://e.org/u?{i}", date=DATE,
                                          message_id=MSGID)
            assert got.data == expected.as_bytes(policy=mail.POLICY)


def test_an_html_letter_is_written_by_the_package_whole():
    press = mail.Press(from_name="News", from_email="list@example.org", run_id="r1")
    got = press.write(to_email="u@example.com", subject="S", text="T", html="<p>T</p>")
    parsed = got.message()
    assert parsed.get_content_type() == "multipart/alternative"
    assert parsed.get_body(("html",)).get_content().strip() == "<p>T</p>"


def test_without_a_date_and_id_a_copy_gets_now_and_a_fresh_id():
    press = mail.Press(from_name="News", from_email="list@example.org", run_id="r1")
    one = press.write(to_email="u@example.com", subject="S", text="T").message()
    two = press.write(to_email="u@example.com", subject="S", text="T").message()
    assert one["Message-ID"] != two["Message-ID"]
    assert one["Message-ID"].endswith("@example.org>")
    assert abs((one["Date"].datetime - datetime.now(timezone.utc)).total_seconds()) < 5


@pytest.mark.parametrize("ch", [" ", "\t", "\n", "\r", "\x0b", "\x1c", "\x7f", "\x85", "\xa0",
                                "\u2028", "\u3000", "\u200b", "\ufeff"])
def test_an_address_with_white_space_or_a_control_character_is_refused(ch):
    with pytest.raises(BadInput):
        mail.check_address(f"a{ch}b@example.org")


def test_one_click_goes_only_with_an_https_link_and_the_mailto_always():
    """RFC 8058 3.1: List-Unsubscribe-Post needs an https URI; the mailto: the bounce reader honours."""
    bounce = "news+s1abcdefghijklmnopqrstuvwx@example.org"
    for url, one_click in (("https://e.org/u?1", True), ("http://e.org/u?1", False)):
        built, pressed = both(to_email="u@example.com", subject="S", text="T\n",
                              unsubscribe_url=url, unsubscribe_mailto=bounce)
        assert pressed.data == built
        assert f"List-Unsubscribe: <{url}>, <mailto:{bounce}?subject=unsubscribe>\r\n".encode() \
            in built
        assert (b"\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n" in built) is one_click


@pytest.mark.parametrize("tag", ["s1abcdefghijklmnopqrstuvwxyz234567abcd", "n1x"])
def test_the_tag_header_is_written_alike_by_both(tag):
    """X-Vykhukhol-Tag (provider callbacks find the letter by it) from the press and the package."""
    expected, got = both(to_email="u@example.com", subject="S", text="T\n", tag=tag)
    assert got.data == expected
    assert f"\r\nX-Vykhukhol-Tag: {tag}\r\n".encode() in expected


@pytest.mark.parametrize("tag", ["S1UPPER", "a b", "x\r\nBcc: evil@example.org", ""])
def test_a_tag_that_is_not_a_plain_word_is_refused_by_both(tag):
    with pytest.raises(BadInput):
        both(to_email="u@example.com", subject="S", text="T\n", tag=tag)
    with pytest.raises(BadInput):
        mail.Press(from_name="N", from_email="list@example.org", run_id="r").write(
            to_email="u@example.com", subject="S", text="T\n", tag=tag)
