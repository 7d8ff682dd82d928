"""The DATA payload: byte for byte what smtplib's ``data`` sends, though the
transport skips the substitution when no line starts with a dot."""

from __future__ import annotations

import smtplib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vykhukhol.mail.smtp import _dot_stuffed

# Letters as bytes: dots, line ends of every kind and plain text, mixed.
PIECES = st.sampled_from([b".", b"..", b"\r\n", b"\n", b"\r", b"a", b"text ", b"\r\n.", b"=2E"])
LETTERS = st.lists(PIECES, max_size=40).map(b"".join)


def smtplib_payload(data: bytes) -> bytes:
    quoted = smtplib._quote_periods(data)
    if quoted[-2:] != smtplib.bCRLF:
        quoted += smtplib.bCRLF
    return quoted + b"." + smtplib.bCRLF


@given(LETTERS)
def test_the_payload_is_what_smtplib_sends(data: bytes) -> None:
    assert _dot_stuffed(data) == smtplib_payload(data)


@pytest.mark.parametrize("data", [b".", b".\r\n", b"a\r\n.b\r\n", b"a\n.\n", b"a\r\n", b"",
                                  b"no dots at line starts. here.\r\n"])
def test_the_hard_cases(data: bytes) -> None:
    assert _dot_stuffed(data) == smtplib_payload(data)
