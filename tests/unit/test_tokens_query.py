"""tokens.query and tokens.sign: the links' query strings, byte for byte what
urllib writes, and their HMAC, what the hmac module computes."""

from __future__ import annotations

import hashlib
import hmac
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


@given(st.binary(max_size=200), st.binary(max_size=300))
def test_sign_is_the_hmac_module_s_hmac_sha256(secret: bytes, message: bytes) -> None:
    """Keys shorter than, as long as and longer than SHA-256's block alike."""
    expected = hmac.new(secret, message, hashlib.sha256).hexdigest()[:tokens.TOKEN_LENGTH]
    assert tokens.sign(secret, message) == expected


@pytest.mark.parametrize("length", [0, 1, 63, 64, 65, 128])
def test_sign_at_the_block_s_edges(length: int) -> None:
    secret = bytes(range(length))
    assert tokens.sign(secret, b"news\nanna@example.org\nconfirm") == hmac.new(
        secret, b"news\nanna@example.org\nconfirm", hashlib.sha256).hexdigest()[:32]
