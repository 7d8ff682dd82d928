"""The light ini reader gives configparser's values, or none at all.

:func:`vykhukhol.files.ini.read_ini` reads settings.ini and service.ini for
the subscribe form's fast path; where it answers, its sections, keys and
values must be exactly what ``configparser.ConfigParser(interpolation=None)``
reads from the same text, and where configparser refuses a file (or reads
it by rules the light reader does not follow) it must give None, so the
full reader decides. Checked on generated files of every kind of line,
hostile ones included, and on the files our writers make.
"""

from __future__ import annotations

import configparser

from hypothesis import example, given, settings
from hypothesis import strategies as st

from vykhukhol import settings as settings_mod
from vykhukhol.files.ini import read_ini, read_sections


def full(text: str) -> dict[str, dict[str, str]] | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    return {name: dict(parser.items(name, raw=True)) for name in parser.sections()}


def agrees(text: str) -> None:
    light = read_ini(text)
    if light is not None:
        assert light == full(text), text
        # and what the full reader adds from [DEFAULT] is nothing
        assert "DEFAULT" not in text or full(text) == light


words = st.sampled_from(["main", "security", "service", "Main", "DEFAULT", "", "a]b", "x y",
                         "language", "secret", "title", "Title", "ru", "en", "é", "\u2028", "\x0b",
                         "\ufeff", "=", ":", ";", "#", "[", "]", " ", "\t", "\r", "%(x)s", "\\n"])
piece = st.lists(words, max_size=4).map("".join)
line = st.one_of(
    st.builds(lambda s: f"[{s}]", piece),
    st.builds(lambda k, d, v: f"{k}{d}{v}", piece, st.sampled_from(["=", " = ", ":", " : ", "=="]),
              piece),
    st.builds(lambda p, s: f"{p}{s}", st.sampled_from(["#", ";", " #", "\t;"]), piece),
    st.builds(lambda i, s: f"{i}{s}", st.sampled_from([" ", "\t", "  "]), piece),
    piece,
    st.text(max_size=12),
)


@settings(max_examples=600, deadline=None)
@given(st.lists(line, max_size=12).map("\n".join))
@example("[main]\nlanguage = ru\n\n[security]\nsecret = " + "k" * 43 + "\n")
@example("[main]\nlanguage = en\n  continued\n")
@example("[main]\nlanguage = en\nLanguage = ru\n")
@example("[main]\n[main]\n")
@example("[DEFAULT]\nlanguage = en\n[main]\n")
@example("language = en\n")
@example("[main] trailing\nx = 1\n")
@example("[main]\nkey\n")
@example("[main]\n x = 1\n")
@example("[main]\nx = 1 ; not a comment\n# comment\n; comment\n\n\ny: 2 = 3\n")
@example("\ufeff[main]\n")
@example("[main]\nx =\n\n  \n")
def test_the_light_reader_reads_as_configparser_or_not_at_all(text: str) -> None:
    agrees(text)
    sections_and_error_agree(text)


def sections_and_error_agree(text: str) -> None:
    """read_sections, which settings.ini's and service.ini's readers use: what
    configparser reads (up to its error, as it leaves them) and its error's line."""
    parser = configparser.ConfigParser(interpolation=None)
    problem = None
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        problem = exc.message.splitlines()[0]
    assert read_sections(text) == (
        {name: dict(parser.items(name, raw=True)) for name in parser.sections()}, problem), text


@settings(max_examples=300, deadline=None)
@given(st.lists(line, max_size=12).map("\n".join))
@example("[main]\nlanguage = en\n[main]\nlanguage = ru\n")
@example("[DEFAULT]\nlanguage = en\n[main]\nx = 1\n")
@example("x = 1\n[main]\n")
def test_sections_are_configparser_s_wherever_it_is_needed(text: str) -> None:
    sections_and_error_agree(text)


def test_the_files_our_writers_make_are_read_lightly(site) -> None:
    site.service("news", title="Новости «Выхухоли» & <b>", from_name="Выхухоль")
    for path in (site.data.settings, site.data.services / "main" / "news" / "service.ini"):
        text = path.read_text(encoding="utf-8")
        assert read_ini(text) is not None, path
        agrees(text)
    raw = settings_mod.load(site.data.settings).raw
    light = read_ini(site.data.settings.read_text(encoding="utf-8"))
    assert light is not None
    for name, value in raw.items():
        section, _, key = name.rpartition(".")
        assert light[section or "main"][key] == value, name
