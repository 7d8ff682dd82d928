"""tokens.query: the links' query strings, byte for byte what urllib writes."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vykhukhol import tokens

# Text as links carry it: any character but a lone surrogate (which neither can encode).
TEXT = st.text(st.characters(blacklist_categories=("Cs",)))


@given(st.dictionaries(TEXT, TEXT, max_size=5))
def test_query_is_urlencode(fields: dict[str, str]) -> None:
    assert tokens.query(fields) == urlencode(fields)


@pytest.mark.parametrize("value", ["anna+news@example.org", "a b&c=d", "Ёлка/%?#", "\u2028\x00~._-",
                                   "user'o\"brien@example.org", "😀"])
def test_query_matches_urlencode_on_the_hard_cases(value: str) -> None:
    assert tokens.query({"e": value, "s": "news"}) == urlencode({"e": value, "s": "news"})


def test_a_lone_surrogate_is_refused_like_urlencode_refuses_it() -> None:
    with pytest.raises(UnicodeEncodeError):
        urlencode({"e": "\udc80"})
    with pytest.raises(UnicodeEncodeError):
        tokens.query({"e": "\udc80"})
