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


# --- the signing process (several connections: DKIM on another core) ----------------

def test_the_signing_loop_writes_byte_for_byte_the_signers_header(key, monkeypatch):
    """The helper's loop, run here over pipes so the clock can be fixed: the
    same DKIM-Signature, byte for byte, as the Signer itself makes."""
    import io
    import struct

    from vykhukhol.mail import signing

    path, records = key
    monkeypatch.setattr(dkim, "time", SimpleNamespace(time=lambda: FIXED))
    written = letters()
    frames = b"".join(struct.pack(">I", len(d)) + d for d in written)
    out = io.BytesIO()
    signing.serve(["-", "-", "example.org", "sel", str(path)], io.BytesIO(frames), out)
    answers, stream = [], io.BytesIO(out.getvalue())
    while (frame := signing._read_frame(stream)) is not None:
        answers.append(frame)
    assert answers.pop(0) == b"!"  # ready, first
    signer = mail_dkim.Signer("example.org", "sel", path)
    assert answers == [b"+" + signer.header(data) for data in written]
    for answer, data in zip(answers, written, strict=True):
        assert dkim.verify(answer[1:] + data, dnsfunc=lambda name, timeout=5: records.get(name))


def test_the_signing_process_signs_each_threads_own_letter(key):
    """A real helper process, eight threads at once: each gets its own
    letter back signed (the answers come in the order the letters went in)."""
    import threading

    from vykhukhol.mail.signing import SigningProcess

    path, records = key
    press = mail.Press(from_name="V", from_email="news@example.org", run_id="r1")
    # Some letters far larger than a pipe's buffer (64 kB), among short ones.
    mine = {i: press.write(to_email=f"u{i}@example.com", subject=f"Letter {i}",
                           text=f"Hello {i}\n" * (1 + i % 7 + (20000 if i % 9 == 0 else 0))
                           ).data for i in range(64)}
    got: dict[int, bytes] = {}
    helper = SigningProcess("example.org", "sel", path)
    try:
        def work(numbers):
            for i in numbers:
                got[i] = helper.sign(mine[i])
        threads = [threading.Thread(target=work, args=(range(t, 64, 8),)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        helper.close()
    assert helper._process.returncode == 0
    for i, signed in got.items():
        assert signed.endswith(mine[i]) and signed.startswith(b"DKIM-Signature: ")
        assert dkim.verify(signed, dnsfunc=lambda name, timeout=5: records.get(name))
    assert len(got) == 64


def test_a_signing_process_that_dies_fails_its_letters_it_never_hangs(key):
    from vykhukhol.mail.signing import SigningProcess

    path, _ = key
    helper = SigningProcess("example.org", "sel", path)
    helper.sign(letters()[0])
    helper._process.kill()
    helper._process.wait()
    with pytest.raises(mail_dkim.DkimKeyError, match="signing process has ended"):
        for _ in range(3):  # the pipe may take one more letter before it breaks
            helper.sign(letters()[0])
    helper.close()


def test_a_signing_process_whose_key_is_broken_refuses_every_letter(tmp_path):
    from vykhukhol.mail.signing import SigningProcess

    path = tmp_path / "broken.key"
    path.write_text("not a key\n")
    helper = SigningProcess("example.org", "sel", path)
    try:
        with pytest.raises(mail_dkim.DkimKeyError, match="not an RSA private key"):
            helper.sign(letters()[0])
    finally:
        helper.close()


def test_a_signing_process_imports_dkimpy_without_dnspython(key):
    """dnspython cost a signing process 60-140 ms; a signer never asks the
    DNS. Signing leaves it out, and a verifier's look-up still gets the real
    dkimpy DNS module (run in a fresh process: this one imported dkim)."""
    import subprocess
    import sys

    path, _ = key
    code = f"""
import sys
from pathlib import Path
from vykhukhol.mail import dkim as mail_dkim
signer = mail_dkim.signer_for("example.org", "sel", Path({str(path)!r}))
signed = signer.sign(b"From: a@example.org\\r\\nSubject: x\\r\\n\\r\\nHello\\r\\n")
assert signed.startswith(b"DKIM-Signature: "), signed
assert "dns" not in sys.modules and "dkim.dnsplug" not in sys.modules, sorted(sys.modules)
import dkim
assert dkim.get_txt is mail_dkim._get_txt_later
from dkim import dnsplug
assert dnsplug.get_txt is not mail_dkim._get_txt_later and "dns.resolver" in sys.modules
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "ok", done.stderr


def test_a_run_killed_with_kill_9_leaves_no_signing_process_behind(key):
    """The helper reads until its pipe closes: the parent's death ends it."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    path, _ = key
    code = f"""
import os, signal
from pathlib import Path
from vykhukhol.mail.signing import SigningProcess
helper = SigningProcess("example.org", "sel", Path({str(path)!r}))
helper.sign(b"From: a@example.org\\r\\nSubject: x\\r\\n\\r\\nHello\\r\\n")
print(helper._process.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    pid = int(done.stdout.split()[0])
    status = Path(f"/proc/{pid}/status")
    for _ in range(100):
        if not status.exists() or "\nState:\tZ" in status.read_text():
            break  # gone, or a zombie waiting for whoever reaps orphans here
        time.sleep(0.05)
    else:
        raise AssertionError(f"the signing process {pid} outlived its parent")
