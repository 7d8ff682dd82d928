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


@given(st.binary(max_size=200), st.binary(max_size=300))
def test_mac_is_the_hmac_module_s_whole_digest(secret: bytes, message: bytes) -> None:
    assert tokens.mac(secret, message) == hmac.new(secret, message, hashlib.sha256).digest()


@given(st.binary(max_size=100), st.text(max_size=40), st.emails())
def test_a_bounce_tag_and_an_erased_entry_are_what_hashlib_makes(secret: bytes, name: str,
                                                                address: str) -> None:
    """returntag and the suppression list hash without hashlib (which loads
    OpenSSL on a subscribe post), and say what hashlib and hmac say."""
    from vykhukhol import returntag
    from vykhukhol.members import suppression

    name_id = hashlib.blake2s(name.encode(), digest_size=returntag.NAME_BYTES).digest()
    message = "\n".join(("s", name, address.strip().lower())).encode()
    mac = hmac.new(secret, message, hashlib.sha256).digest()[:returntag.MAC_BYTES]
    assert returntag.parse(returntag.make(secret, "s", name, address)) == ("s", name_id, mac)
    assert suppression.hashed(secret, address) == suppression.HASHED + hmac.new(
        secret, b"suppressed\0" + address.strip().lower().encode(), hashlib.sha256).hexdigest()
