"""The DKIM signer: OpenSSL's RSA step says exactly what dkimpy's own would,
and a signature verifies with the record keygen prints (real key files)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import dkim
import pytest

from vykhukhol import mail
from vykhukhol.mail import dkim as mail_dkim

FIXED = 1796000000  # the t= of every signature compared here


@pytest.fixture
def key(tmp_path):
    path, record = mail_dkim.keygen(tmp_path, "example.org", "sel")
    name, rest = record.split(" IN TXT ")
    return path, {name.encode(): "".join(re.findall(r'"([^"]*)"', rest)).encode()}


def letters() -> list[bytes]:
    press = mail.Press(from_name="Выхухоль", from_email="news@example.org", run_id="r1",
                       list_id="news.example.org")
    out = [press.write(to_email="u@example.com", to_name=name, subject=subject, text=text,
                       html=html, unsubscribe_url="https://e.org/u?1",
                       unsubscribe_mailto="news+s1abcdefghijklmnopqrstuvwx@example.org").data
           for name, subject, text, html in (
               ("Ann", "Lesson", "Hello\n", None),
               ("Иван Петров", "Урок — первый", "Здравствуйте!\n" * 40, None),
               ("", "HTML", "Text", "<p>Привет</p>"))]
    out.append(mail.build_message(from_name="V", from_email="a@example.org",
                                  to_email="admin@example.org", subject="alert", text="x",
                                  run_id="r").as_bytes(policy=mail.POLICY))
    return out


def test_openssl_signs_byte_for_byte_what_dkimpy_would(key, monkeypatch):
    path, records = key
    monkeypatch.setattr(dkim, "time", SimpleNamespace(time=lambda: FIXED))
    signer = mail_dkim.Signer("example.org", "sel", path)
    assert signer.fast, "the cryptography package is installed here: OpenSSL must do the RSA"
    written = letters()
    pure_rsa = mail_dkim._PURE_RSA

    def not_here(*args):
        raise AssertionError("dkimpy's pure-Python RSA ran on the fast path")

    monkeypatch.setattr(mail_dkim, "_PURE_RSA", not_here)
    fast = [signer.sign(data) for data in written]
    monkeypatch.setattr(dkim, "RSASSA_PKCS1_v1_5_sign", pure_rsa)
    pure = [signer.sign(data) for data in written]
    assert fast == pure
    for signed in fast:
        assert dkim.verify(signed, dnsfunc=lambda name, timeout=5: records.get(name))


def test_spec_12s_headers_are_signed_and_from_subject_and_the_list_pair_over_signed(key):
    path, _ = key
    signer = mail_dkim.Signer("example.org", "sel", path)
    list_letter, _, _, alert = (signer.sign(data) for data in letters())
    fields = dkim.util.parse_tag_value(list_letter.split(b"\r\nFrom:")[0][len(b"DKIM-Signature:"):])
    assert b"".join(fields[b"h"].split()) == (
        b"from:to:subject:date:message-id:mime-version:content-type:content-transfer-encoding:"
        b"list-id:list-unsubscribe:list-unsubscribe-post:"
        b"from:subject:list-unsubscribe:list-unsubscribe-post")
    fields = dkim.util.parse_tag_value(alert.split(b"\r\nFrom:")[0][len(b"DKIM-Signature:"):])
    # Absent list headers are signed as empty: none can be added after signing.
    assert b"".join(fields[b"h"].split()) == (
        b"from:to:subject:date:message-id:mime-version:content-type:content-transfer-encoding:"
        b"from:subject:list-unsubscribe:list-unsubscribe-post")


@pytest.mark.parametrize("content, words", [
    (None, "does not exist"),
    (b"", "is not an RSA private key"),
    (b"-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
     "is not an RSA private key"),
])
def test_a_missing_or_broken_key_is_a_clear_error(tmp_path, content, words):
    path = tmp_path / "k.key"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(mail_dkim.DkimKeyError, match=words):
        mail_dkim.Signer("example.org", "sel", path)


def test_the_dns_record_is_cut_into_strings_of_at_most_255():
    record = mail_dkim.dns_record("example.org", "s", b"\x01" * 600)
    strings = re.findall(r'"([^"]*)"', record)
    assert len(strings) == 4 and all(len(s) <= 255 for s in strings)
    assert record.startswith('s._domainkey.example.org. IN TXT "v=DKIM1; k=rsa; p=AQEB')
