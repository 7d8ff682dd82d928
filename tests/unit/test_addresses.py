"""Address checks: the plain-address shortcut answers as email-validator does.

``check_email`` answers a plain address itself (importing email-validator
costs a CGI process ~30 ms) and hands anything else to email-validator; these
tests hold the shortcut to the validator's answers, so an upgrade of
email-validator that refuses more fails here rather than on a live form.
"""

from __future__ import annotations

import email_validator
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vykhukhol import addresses
from vykhukhol.addresses import check_email, plain_address
from vykhukhol.errors import BadInput


def validator_answer(address: str) -> str | None:
    """What check_email would say through email-validator alone (None: refused)."""
    try:
        return addresses.validated_address(address)
    except BadInput:
        return None


ATEXT = "abcXYZ019!#$%&'*+/=?^_`{|}~-"
label = st.text("abcxyzABCXYZ0189-", min_size=1, max_size=70)
local_part = st.lists(st.text(ATEXT, min_size=1, max_size=20), min_size=1, max_size=4).map(".".join)
plainish = st.builds(lambda local, labels, tld: f"{local}@{'.'.join(labels)}.{tld}",
                     local_part, st.lists(label, min_size=1, max_size=4),
                     st.sampled_from(["com", "ORG", "ru", "Test", "localhost", "x", "c0m",
                                      "onion", "arpa", "xn--p1ai", "example", "museum"]))
anything = st.text(ATEXT + "@.-[]\"<> \u212a\u0130\u00e9\u0444\uff20", max_size=40)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(plainish, anything))
def test_the_shortcut_answers_as_email_validator_does(address):
    shortcut = plain_address(address)
    if shortcut is not None:
        assert shortcut == validator_answer(address)


@settings(max_examples=300, deadline=None)
@given(st.one_of(plainish, anything))
def test_check_email_accepts_and_refuses_as_email_validator_does(address):
    try:
        ours = check_email(address)
    except BadInput:
        ours = None
    stripped = address.strip()
    plain_rules = stripped and len(stripped) <= addresses.MAX_EMAIL \
        and not any(ch in stripped for ch in "\r\n\t\0 ") \
        and "=?" not in stripped  # refused too: mail software would decode it
    assert ours == (validator_answer(stripped) if plain_rules else None)


@pytest.mark.parametrize("address, expected", [
    ("Reader.One+tag@Example.NET", "Reader.One+tag@example.net"),
    ("o'brien@mail.example.co.uk", "o'brien@mail.example.co.uk"),
    ("x@a-b.example.org", "x@a-b.example.org"),
])
def test_a_plain_address_keeps_its_local_part_and_lowers_its_domain(address, expected):
    assert plain_address(address) == expected == validator_answer(address)


@pytest.mark.parametrize("address", [
    "user@host.test", "user@host.localhost", "user@xn--80ak6aa92e.com", "user@ab--cd.com",
    "user@host.c", "user@host.c0m", "user@[192.0.2.1]", "\"quoted\"@example.org",
    "user@пример.рф", "user@host", "a..b@example.org", "user@-host.example.org",
])
def test_an_address_that_is_not_plain_goes_to_email_validator(address):
    assert plain_address(address) is None


def test_every_domain_email_validator_reserves_is_left_to_it():
    for name in email_validator.SPECIAL_USE_DOMAIN_NAMES:
        assert name.rsplit(".", 1)[-1] in addresses.RESERVED_TLDS, name


def _by_categories(text: str, replaced) -> str:
    """What a cleaner gives when it asks Unicode's tables of every character."""
    import unicodedata

    return "".join(" " if replaced(unicodedata.category(ch)) else ch for ch in text)


NAMES = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=120) | st.sampled_from(
    ["Анна", "Новый Читатель", "a\tb\r\nc", "x\u2028y\u2029z", "nbsp\u00a0here", "zero\u200bwidth",
     "bidi\u202ehere", "\x7f\x85\x00", "  spaced   out  ", ""])


@settings(max_examples=400)
@given(NAMES)
def test_a_name_is_cleaned_as_unicodes_categories_say(name: str) -> None:
    """clean_name reads Unicode's tables only for a name that is not all
    printable: held to the reading of every character's category."""
    expected = " ".join(_by_categories(name, lambda c: c[0] == "C").split())[:addresses.MAX_NAME]
    assert addresses.clean_name(name) == expected


@settings(max_examples=400)
@given(NAMES)
def test_a_header_text_is_cleaned_as_unicodes_categories_say(value: str) -> None:
    from vykhukhol.mail.header_values import clean_header_text

    expected = " ".join(_by_categories(value, lambda c: c in ("Cc", "Zl", "Zp")).split())
    assert clean_header_text(value) == expected
