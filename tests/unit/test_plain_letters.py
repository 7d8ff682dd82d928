"""The confirmation request without Jinja2 says what the Jinja2 one says.

lib/vykhukhol/mail/plain_letters.py is generated from mail/texts.py by
tools/plain_letters.py; mail/confirm_letter.py writes the default request
with it. Here: the file is what the tool makes now, each function renders
its text as the sandbox does for any values, the line-end rule is
render's, and the whole letter is the one compose writes, byte for byte,
in both languages.
"""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vykhukhol import render
from vykhukhol import services as svc
from vykhukhol.mail import compose, confirm_letter, plain_letters, texts

CHECKOUT = Path(__file__).resolve().parents[2]
MOMENT = datetime(2026, 12, 3, 9, 30, tzinfo=timezone.utc)
HOSTILE = ["", "Ivan", "Иван «Петров»", "Eve\r\nBcc: victim@example.net", "{{ email }}",
           "a\u2028b\u2029c\x85d\x00e\tf", "   ", "0", "x" * 100, "<b>&amp;</b>"]


def test_the_generated_file_is_what_the_tool_makes_of_the_texts() -> None:
    done = subprocess.run([sys.executable, str(CHECKOUT / "tools" / "plain_letters.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_every_text_of_every_language_has_its_function() -> None:
    for table, part in ((texts.CONFIRM_SUBJECT, "subject"), (texts.CONFIRM_BODY, "body")):
        for lang, source in table.items():
            assert plain_letters.CONFIRM[(lang, part)][1] == source


values = st.text(alphabet=st.characters(codec="utf-8"), max_size=40) | st.sampled_from(HOSTILE)


@settings(max_examples=200, deadline=None)
@given(name=values, email=values, service=values, confirm_url=values)
def test_each_function_renders_its_text_as_the_sandbox_does(name, email, service, confirm_url):
    ctx = render.one_line_values({"name": name, "email": email, "service": service})
    ctx["confirm_url"] = confirm_url
    for (lang, part), (function, source) in plain_letters.CONFIRM.items():
        assert function(ctx) == render.render(source, ctx), (lang, part)


def test_the_line_end_rule_is_renders() -> None:
    every = "".join(map(chr, range(0x3000))) + "\u2028\u2029\ufeff\U0001f600"
    assert every.translate(confirm_letter.LINE_ENDS) == render.one_line_values({"v": every})["v"]


def comparable(letter: bytes) -> bytes:
    """The letter without what build_message makes anew each time (its Message-ID)."""
    return re.sub(rb"Message-ID: <[^>]+>", b"Message-ID: <x>", letter)


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_the_letter_is_composes_byte_for_byte(site, lang, monkeypatch) -> None:
    site.set(language=lang)
    site.service("news", title="Новости «Выхухоли»", from_name="Выхухоль")
    site.service("plain", title="News\u2028letter")
    monkeypatch.setattr("vykhukhol.mail.message.datetime", _Frozen)  # one Date for both
    settings_ = site.settings()
    for name in ("news", "plain"):
        service = svc.find_service(site.data, name)
        assert confirm_letter.plain(service, lang)
        for whom in HOSTILE:
            for email in ("reader@example.org", "maria@пример.рф"):
                ours = confirm_letter.confirmation(service, settings_, email, whom, "web-0001", MOMENT)
                theirs = compose.confirmation(service, settings_, email, whom, "web-0001", MOMENT)
                assert comparable(ours.data) == comparable(theirs.data), (name, whom, email)
                assert (ours.from_address, ours.envelope_from) == \
                    (theirs.from_address, theirs.envelope_from)


class _Frozen(datetime):
    @classmethod
    def now(cls, tz=None):  # type: ignore[override]
        return MOMENT if tz else MOMENT.replace(tzinfo=None)


def test_a_service_with_its_own_text_is_drawn_by_jinja(site) -> None:
    site.service("own", confirm_body="Hi {{ name | upper }}: {{ confirm_url }}\n")
    service = svc.find_service(site.data, "own")
    assert not confirm_letter.plain(service, "en")
    letter = confirm_letter.confirmation(service, site.settings(), "a@example.org", "ann",
                                         "web-0002", MOMENT)
    assert b"Hi ANN: " in letter.data
