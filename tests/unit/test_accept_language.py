"""The browser's Accept-Language read for a reader's own language
(docs/using/languages.md#reader-language): the best of ru and en by q-value,
a region ignored, anything else (or malformed) counting for nothing, and a
header of any size read in bounded time."""

from __future__ import annotations

import time

import pytest

from vykhukhol.i18n import accepted_language, known_language, reader_language


@pytest.mark.parametrize(("header", "expected"), [
    ("ru-RU,ru;q=0.9,en-US;q=0.8,en;q=0.7", "ru"),
    ("en-US,en;q=0.9", "en"),
    ("de-DE,de;q=0.9,en;q=0.8,ru;q=0.7", "en"),
    ("de,en;q=0.1,ru;q=0.2", "ru"),
    ("RU", "ru"),
    (" en-gb ; q=0.5 ", "en"),
    ("ru;q=0.5,en;q=0.5", "ru"),      # equals: the first listed
    ("en;q=0,ru;q=0.001", "ru"),      # q=0: not acceptable
    ("en;q=0", None),
    ("ru;q=1.5,en;q=0.1", "en"),      # a weight over 1 is malformed
    ("ru;q=abc,en;q=0.1", "en"),
    ("ru;q=0.1234,en;q=0.1", "en"),   # four decimals: malformed
    ("ru;q=٠.9,en;q=0.1", "en"),      # digits must be ASCII ones
    ("en;q=1.", "en"),
    ("*", None),
    ("xx, de, fr", None),
    ("", None),
    ("russian,english", None),
])
def test_the_best_known_language_of_a_header(header: str, expected: str | None) -> None:
    assert accepted_language(header) == expected


def test_only_the_start_of_a_huge_header_is_read_and_quickly() -> None:
    huge = "xx;q=1," * 10_000 + "en"
    started = time.perf_counter()
    for _ in range(100):
        assert accepted_language(huge) is None  # "en" lies past what is read
    assert time.perf_counter() - started < 0.5
    assert accepted_language("en," + "x" * 1_000_000) == "en"


def test_a_form_choice_wins_and_an_unknown_one_falls_to_the_browser() -> None:
    assert reader_language("en", "ru-RU,ru") == "en"
    assert reader_language("xx", "ru-RU,ru") == "ru"
    assert reader_language(None, "") is None
    assert known_language("EN") is None and known_language(["en"]) is None
