"""The providers' callbacks: their own proofs could be
skipped, and three requests got a traceback instead of a 4xx.

- ``/generic`` took the key alone, so posting there bypassed every
  provider's signature: it now needs ``hooks.generic_secret`` and an
  ``X-Vykhukhol-Signature`` HMAC over the body (off without the setting).
- Mailgun signs only timestamp and token: a captured signature with other
  event data was applied. Tokens are remembered for the 900 s window.
- SNS: a MessageId holding a newline, Subject left out, verified with the
  original's signature (the same canonical string) under a new id.
- The certificate's host pattern took sns.s3.amazonaws.com-style hosts, and
  a certificate made out to anyone was used.
- A SigningCertURL with a tab in its host (urlsplit drops it; the fetch
  raised http.client.InvalidURL), and a hooks.sendgrid_public_key on an
  unsupported curve (accepted by `settings set`; then every SendGrid
  callback was a 500).

Each through a real ``vykhukhol serve`` (tests/support/hookkit.py's
installation: a local CA, a loopback HTTPS "SNS"); nothing leaves the machine.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time

from support import hookkit as kit
from support.servetools import subprocess_env

hooked = kit.hooked  # the fixture: serve, a local CA and a loopback SNS
# A P-256 key whose curve OID is changed to one no library knows (1.2.840.10045.3.1.9).
ODD_CURVE = ("MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQkDQgAE2KBFf3CMfHiOJdFimzGOkU3/CLvcHmXxd8dRnwU8O9ge"
             "VeBBf3hUumZFAaZUm+RgDrvXIt8qV07J2pP7XgsuHA==")


def generic(address: str, event: str) -> str:
    return json.dumps({"address": address, "kind": "permanent", "id": event,
                       "diagnostic": "550 5.1.1 user unknown"})


def test_the_generic_form_needs_its_own_signature(hooked):
    kit.subscribe(hooked, "gen-victim@example.net", "news")
    body = generic("gen-victim@example.net", "gen-1")
    for headers in ({"X-Vykhukhol-Signature": ""}, {"X-Vykhukhol-Signature": "sha256=" + "0" * 64},
                    {"X-Vykhukhol-Signature": hashlib.sha256(body.encode()).hexdigest()}):
        status, text = hooked.post("generic", body, path="/cgi/hook.py/generic", headers=headers)
        assert status == 403 and "Signature" in text, (headers, text)
    assert "gen-victim@example.net" in hooked.subscribers("news")
    assert hooked.post("generic", body) == (200, "ok: 1 applied, 0 seen before\n")
    assert "gen-victim@example.net" not in hooked.subscribers("news")


def test_the_generic_form_is_off_without_its_secret(hooked):
    kit.subscribe(hooked, "gen-off@example.net", "news")
    kit.settings_mod.update(hooked.data.settings, {"hooks.generic_secret": ""})
    try:
        status, text = hooked.post("generic", generic("gen-off@example.net", "gen-off"))
        assert status == 403 and "generic_secret" in text, text
    finally:
        kit.settings_mod.update(hooked.data.settings, {"hooks.generic_secret": kit.GENERIC_SECRET})
    assert "gen-off@example.net" in hooked.subscribers("news")


def test_a_mailgun_signature_carries_one_event_only(hooked):
    kit.subscribe(hooked, "mg-first@example.net", "news")
    kit.subscribe(hooked, "mg-victim@example.net", "news")
    first = kit.mailgun_body("mailgun_failed.json", "mg-first@example.net", "mg-replay-1")
    assert hooked.post("mailgun", first)[0] == 200
    replayed = json.loads(kit.mailgun_body("mailgun_failed.json", "mg-victim@example.net",
                                           "mg-replay-2"))
    replayed["signature"] = json.loads(first)["signature"]
    status, text = hooked.post("mailgun", json.dumps(replayed))
    assert status == 403 and "token" in text, text
    assert "mg-victim@example.net" in hooked.subscribers("news")
    # Mailgun's own retry of the same request still goes through (applied once).
    assert hooked.post("mailgun", first) == (200, "ok: 0 applied, 1 seen before\n")


def test_a_newline_in_a_signed_sns_field_is_refused(hooked):
    kit.subscribe(hooked, "sns-shift@example.net", "news")
    signed = json.loads(kit.sns_message(hooked, "bounce", "sns-shift@example.net", "sns-shift"))
    assert hooked.post("ses", json.dumps(signed))[0] == 200
    kit.subscribe(hooked, "sns-shift@example.net", "news")  # back on the list
    # The same canonical string, read as another message: a new id, the old signature.
    shifted = dict(signed, MessageId=f"sns-shift\nSubject\n{signed['Subject']}")
    del shifted["Subject"]
    status, text = hooked.post("ses", json.dumps(shifted))
    assert status == 400 and "line break" in text, text
    assert "sns-shift@example.net" in hooked.subscribers("news")


def test_only_sns_hosts_and_certificates_made_out_to_sns(hooked):
    from vykhukhol.bounces.providers.ses import allowed_url

    for url in ("https://sns.s3.amazonaws.com/x.pem", "https://sns.amazonaws.amazonaws.com/x.pem",
                "https://sns.eu-west-1.amazonaws.com\t.evil.example/x.pem",
                "https://sns.eu-west-1.amazonaws.com/x.pem\n"):
        assert not allowed_url(url), url
    assert allowed_url("https://sns.us-gov-west-1.amazonaws.com/x.pem")
    assert allowed_url("https://sns.cn-northwest-1.amazonaws.com.cn/x.pem")

    kit.subscribe(hooked, "sns-cert@example.net", "news")
    # A certificate for another name (signed by the same trusted CA, with the SNS key):
    # kept as a fetched one is, so only its subject differs.
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    url = hooked.sns.url("/SimpleNotificationService-other.pem")
    authority = hooked.authority
    good = x509.load_pem_x509_certificate(authority.signing_pem)
    other = (x509.CertificateBuilder()
             .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mallory.example")]))
             .issuer_name(good.issuer).public_key(authority.sign_key.public_key())
             .serial_number(x509.random_serial_number()).not_valid_before(good.not_valid_before_utc)
             .not_valid_after(good.not_valid_after_utc).sign(authority.sign_key, hashes.SHA256()))
    kept = hooked.data.root / "bounces" / "sns" / (hashlib.sha256(url.encode()).hexdigest()[:32]
                                                    + ".pem")
    kept.write_bytes(other.public_bytes(serialization.Encoding.PEM))
    message = kit.sns_message(hooked, "bounce", "sns-cert@example.net", "sns-cert", cert=url)
    status, text = hooked.post("ses", message)
    assert status == 403 and "certificate" in text, text
    assert "sns-cert@example.net" in hooked.subscribers("news")


def test_a_tab_in_the_certificate_host_is_a_403_not_a_traceback(hooked):
    hits = len(hooked.sns.hits)
    host, port = hooked.sns.host.split(":")
    message = kit.sns_message(hooked, "bounce", "sns-tab@example.net", "sns-tab",
                              cert=f"https://{host}\t:{port}/x.pem")
    status, text = hooked.post("ses", message)
    assert status == 403 and "certificate" in text, text
    assert len(hooked.sns.hits) == hits
    assert "Traceback" not in hooked.proc.stderr()


def test_a_sendgrid_key_of_another_curve_is_refused_and_never_a_500(hooked):
    done = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(hooked.data.root),
                           "settings", "set", "hooks.sendgrid_public_key", ODD_CURVE],
                          capture_output=True, text=True, env=subprocess_env(), timeout=60)
    assert done.returncode != 0 and "P-256" in done.stderr, done
    assert "Traceback" not in done.stderr
    before = kit.settings_mod.load(hooked.data.settings)["hooks.sendgrid_public_key"]
    # written into settings.ini by hand: the callback refuses, it does not crash
    path = hooked.data.settings
    path.write_text(path.read_text().replace(before, ODD_CURVE))
    try:
        stamp = str(int(time.time()))
        status, text = hooked.post("sendgrid", "[]", headers={
            "X-Twilio-Email-Event-Webhook-Signature": "MEUCIQ==",
            "X-Twilio-Email-Event-Webhook-Timestamp": stamp})
        assert status == 403 and "P-256" in text, text
    finally:
        path.write_text(path.read_text().replace(ODD_CURVE, before))
    assert "Traceback" not in hooked.proc.stderr()
