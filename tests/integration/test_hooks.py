"""Mail providers' callbacks over real HTTP
(docs/deliverability/providers.md#provider-callbacks): a real ``vykhukhol serve``
for every provider, and the CGI script as its own process.

Bodies are the providers' documented shapes (tests/data/hooks/, with its
README saying where each comes from), signed here with keys this test makes:
Mailgun's HMAC key, SendGrid's ECDSA pair, and for SES a local certificate
authority whose certificate for 127.0.0.1 a loopback HTTPS server presents
(``SSL_CERT_FILE`` makes ``serve`` trust it) while serving the SNS signing
certificate and the SubscribeURL. The environment variable
``VYKHUKHOL_TEST_SNS_HOST``, set for ``serve`` only, lets the verifier accept
that loopback host (it is no setting: docs/reference/security.md#test-seam); production accepts only
``https://sns.<region>.amazonaws.com/``, and a test shows another host is
refused without being asked. Nothing leaves the machine.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time

import pytest

from support.hookkit import (
    TOPIC,
    Hooked,
    cgi_install,
    hook_cgi,
    mailgun_body,
    payload,
    sns_message,
    subscribe,
)
from support.servetools import subprocess_env
from vykhukhol import returntag as tags
from vykhukhol import settings as settings_mod

# --- a local certificate authority and the loopback "SNS" --------------------


# --- the installation and its server ------------------------------------------


def snapshot(site: Hooked) -> dict[str, bytes]:
    """Every file of the data directory, for 'nothing changed'."""
    return {str(p.relative_to(site.data.root)): p.read_bytes()
            for p in sorted(site.data.root.rglob("*")) if p.is_file() and ".lock" not in p.name}


# --- the key, the provider's name, the body --------------------------------------

@pytest.mark.parametrize("provider", ["ses", "postmark", "mailgun", "sendgrid", "generic"])
def test_a_wrong_or_missing_key_is_403_and_changes_nothing(hooked, provider):
    subscribe(hooked, f"keyless-{provider}@example.net", "news")
    before = snapshot(hooked)
    body = payload("generic.json").replace("RECIPIENT", f"keyless-{provider}@example.net") \
        .replace("temporary", "permanent")
    for key in ("", "wrong" * 9, hooked.key[:-1] + ("A" if hooked.key[-1] != "A" else "B")):
        status, text = hooked.post(provider, body, key=key)
        assert status == 403, text
    assert snapshot(hooked) == before


def test_an_unknown_provider_is_404(hooked):
    status, text = hooked.post("sparkpost", "{}")
    assert status == 404 and "ses" in text


def test_a_body_over_a_megabyte_or_not_json_is_refused_and_changes_nothing(hooked):
    subscribe(hooked, "big@example.net", "news")
    before_subs = hooked.subscribers("news")
    status, text = hooked.post("generic", b"[" + b" " * 1_100_000 + b"]")
    assert status == 413, text
    for broken in ('{"address": "big@example.net", "kind": "permanent"', "\xff", "[]", '"text"',
                   '{"address": "not an address", "kind": "permanent"}',
                   '{"address": "big@example.net", "kind": "delete everything"}'):
        status, text = hooked.post("generic", broken.encode("latin-1"))
        assert status == 400, (broken, text)
    assert hooked.subscribers("news") == before_subs


# --- each provider ---------------------------------------------------------------

def test_generic_temporary_failure_is_noted_once_and_counts_nothing(hooked):
    subscribe(hooked, "full@example.net", "news")
    body = payload("generic.json").replace("RECIPIENT", "full@example.net").replace("evt-1", "evt-full")
    assert hooked.post("generic", body) == (200, "ok: 1 applied, 0 seen before\n")
    assert hooked.post("generic", body) == (200, "ok: 0 applied, 1 seen before\n")
    assert hooked.subscribers("news")["full@example.net"].failures == 0
    lines = [line for line in hooked.log() if line[4] == "full@example.net"]
    assert [(line[2], line[5]) for line in lines] == [("temporary", "generic"),
                                                      ("repeated", "generic")], lines


def suppressed(hooked: Hooked) -> str:
    path = hooked.data.root / "suppressed.txt"
    return path.read_text() if path.exists() else ""


def reworded(body: str, code: int, description: str) -> str:
    """A Mailgun event whose server said something else than "does not exist"."""
    return body.replace('"code": 550', f'"code": {code}').replace(
        "5.1.1 The email account that you tried to reach does not exist.", description)


def test_mailgun_address_gone_is_deleted_from_every_service_and_suppressed_once(hooked):
    """A callback saying the address does not exist (5.1.1) is an address gone."""
    subscribe(hooked, "gone@example.net", "news", "digest")
    body = mailgun_body("mailgun_failed.json", "gone@example.net", "mg-gone-1")
    status, text = hooked.post("mailgun", body)
    assert (status, text) == (200, "ok: 1 applied, 0 seen before\n")
    status, text = hooked.post("mailgun", body)  # Mailgun retries: the same event id
    assert (status, text) == (200, "ok: 0 applied, 1 seen before\n")
    assert "gone@example.net" not in hooked.subscribers("news")
    assert "gone@example.net" not in hooked.subscribers("digest")
    assert suppressed(hooked).count("gone@example.net\t") == 1
    line = next(line for line in hooked.log() if line[4] == "gone@example.net")
    assert line[2] == "permanent" and line[5] == "mailgun" and "550" in line[6]
    assert line[6].startswith("address gone: userunknown")


def test_mailgun_finds_the_letter_by_our_tag_in_the_envelope_sender(hooked):
    """The address is in both services, the tag names one: only that one counts (a
    soft failure: a full mailbox)."""
    subscribe(hooked, "tagged@example.net", "news", "digest")
    secret = settings_mod.load(hooked.data.settings).secret
    sender = tags.bounce_address("news@example.org", "+", tags.make(secret, tags.SERVICE, "digest",
                                                                     "tagged@example.net"))
    body = reworded(mailgun_body("mailgun_failed.json", "tagged@example.net", "mg-tagged",
                                 sender=sender), 552, "5.2.2 The mailbox is full.")
    assert hooked.post("mailgun", body)[0] == 200
    assert hooked.subscribers("news")["tagged@example.net"].failures == 0
    assert hooked.subscribers("digest")["tagged@example.net"].failures == 1
    assert "tagged@example.net" not in suppressed(hooked)


def test_mailgun_refusal_for_the_senders_reasons_counts_nothing(hooked):
    """5.7.1 "blocked" is about our host: the subscriber keeps a clean count."""
    subscribe(hooked, "kept@example.net", "news")
    for n in range(3):
        body = reworded(mailgun_body("mailgun_failed.json", "kept@example.net", f"mg-blk-{n}"),
                        550, "5.7.1 Service unavailable; client host blocked using Spamhaus")
        assert hooked.post("mailgun", body)[0] == 200
    assert hooked.subscribers("news")["kept@example.net"].failures == 0
    assert "kept@example.net" not in suppressed(hooked)
    assert all(line[6].startswith("sender refused: blocked") for line in hooked.log()
               if line[4] == "kept@example.net")


def test_mailgun_refuses_a_bad_signature_or_a_stale_timestamp(hooked):
    subscribe(hooked, "forged@example.net", "news")
    before = snapshot(hooked)
    forged = mailgun_body("mailgun_failed.json", "forged@example.net", "mg-forged", key="not the key")
    assert hooked.post("mailgun", forged)[0] == 403
    stale = mailgun_body("mailgun_failed.json", "forged@example.net", "mg-stale",
                         stamp=int(time.time()) - 3600)
    status, text = hooked.post("mailgun", stale)
    assert status == 403 and "timestamp" in text
    changed = {k for k in snapshot(hooked) if snapshot(hooked)[k] != before.get(k)}
    assert changed <= {"log/bounces.log"}  # the refusal is noted for the owner, nothing else
    assert hooked.subscribers("news")["forged@example.net"].failures == 0


def test_mailgun_complaint_unsubscribes_from_every_service(hooked):
    subscribe(hooked, "angry@example.net", "news", "digest")
    body = mailgun_body("mailgun_complained.json", "angry@example.net", "mg-angry")
    assert hooked.post("mailgun", body)[0] == 200
    for service in ("news", "digest"):
        found = hooked.subscribers(service).get("angry@example.net")
        assert found is None or found.state.value == "unsubscribed", found


def test_a_complaint_by_callback_suppresses_the_address(hooked):
    """A provider's complaint puts the address on the suppression list
    (from: the provider), so the subscribe form cannot bring it back."""
    from vykhukhol import settings as settings_mod
    from vykhukhol.members import membership, suppression

    subscribe(hooked, "angry2@example.net", "news")
    body = mailgun_body("mailgun_complained.json", "angry2@example.net", "mg-angry2")
    assert hooked.post("mailgun", body)[0] == 200
    [entry] = [e for e in suppression.entries(hooked.data) if e.address == "angry2@example.net"]
    assert (entry.why, entry.source) == ("complaint", "mailgun")
    assert membership.subscribe(hooked.data, settings_mod.load(hooked.data.settings), "news",
                                "angry2@example.net") == "suppressed"


def test_postmark_hard_bounce_and_complaint_and_its_basic_auth(hooked):
    subscribe(hooked, "pm-gone@example.net", "news")
    subscribe(hooked, "pm-angry@example.net", "news")
    bounce = payload("postmark_bounce.json").replace("RECIPIENT", "pm-gone@example.net")
    complaint = payload("postmark_spam_complaint.json").replace("RECIPIENT", "pm-angry@example.net")
    settings_mod.update(hooked.data.settings, {"hooks.postmark_user": "pm",
                                               "hooks.postmark_password": "pm-password"})
    try:
        assert hooked.post("postmark", bounce)[0] == 401
        wrong = base64.b64encode(b"pm:guess").decode()
        assert hooked.post("postmark", bounce, headers={"Authorization": f"Basic {wrong}"})[0] == 401
        assert hooked.subscribers("news")["pm-gone@example.net"].failures == 0
        right = {"Authorization": "Basic " + base64.b64encode(b"pm:pm-password").decode()}
        assert hooked.post("postmark", bounce, headers=right) == (200, "ok: 1 applied, 0 seen before\n")
        assert hooked.post("postmark", complaint, headers=right)[0] == 200
    finally:
        settings_mod.update(hooked.data.settings, {"hooks.postmark_user": "",
                                                   "hooks.postmark_password": ""})
    assert hooked.subscribers("news")["pm-gone@example.net"].failures == 1
    angry = hooked.subscribers("news").get("pm-angry@example.net")
    assert angry is None or angry.state.value == "unsubscribed"
    assert any(line[5] == "postmark" and line[2] == "complaint" for line in hooked.log())


def sendgrid_post(hooked: Hooked, body: str, stamp: str | None = None, key=None):
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    stamp = stamp or str(int(time.time()))
    signature = (key or hooked.sendgrid_key).sign(stamp.encode() + body.encode(),
                                                  ec.ECDSA(hashes.SHA256()))
    return hooked.post("sendgrid", body, headers={
        "X-Twilio-Email-Event-Webhook-Signature": base64.b64encode(signature).decode(),
        "X-Twilio-Email-Event-Webhook-Timestamp": stamp})


def test_sendgrid_signed_events_bounce_blocked_and_spam_report(hooked):
    from cryptography.hazmat.primitives.asymmetric import ec

    for who in ("sg-gone", "sg-blocked", "sg-angry", "sg-open"):
        subscribe(hooked, f"{who}@example.net", "news")
    body = (payload("sendgrid_events.json").replace("BOUNCED", "sg-gone@example.net")
            .replace("BLOCKED", "sg-blocked@example.net").replace("COMPLAINED", "sg-angry@example.net")
            .replace("OPENED", "sg-open@example.net"))
    before = snapshot(hooked)
    assert sendgrid_post(hooked, body, key=ec.generate_private_key(ec.SECP256R1()))[0] == 403
    assert hooked.post("sendgrid", body)[0] == 403  # no signature at all
    assert hooked.subscribers("news")["sg-gone@example.net"].failures == 0
    assert set(snapshot(hooked)) - set(before) <= {"log/bounces.log"}
    assert sendgrid_post(hooked, body) == (200, "ok: 3 applied, 0 seen before\n")
    assert sendgrid_post(hooked, body) == (200, "ok: 0 applied, 3 seen before\n")
    now = hooked.subscribers("news")
    assert "sg-gone@example.net" not in now  # 5.1.1: gone, suppressed
    assert now["sg-blocked@example.net"].failures == 0  # blocked: the sender's trouble, noted
    assert now["sg-open@example.net"].failures == 0
    angry = now.get("sg-angry@example.net")
    assert angry is None or angry.state.value == "unsubscribed"


# --- SES through SNS ---------------------------------------------------------------


def confirm(hooked: Hooked) -> tuple[int, str]:
    message = json.loads(payload("sns_subscription.json"))
    message.update(SubscribeURL=hooked.sns.url("/?Action=ConfirmSubscription&Token=2336412f37"),
                   SigningCertURL=hooked.sns.url("/SimpleNotificationService-test.pem"))
    return hooked.post("ses", json.dumps(hooked.authority.sign(message, "2")),
                       headers={"x-amz-sns-message-type": "SubscriptionConfirmation",
                                "Content-Type": "text/plain; charset=UTF-8"})


def test_ses_through_sns_confirms_verifies_v1_and_v2_and_pins_the_topic(hooked):
    subscribe(hooked, "ses-gone@example.net", "news")
    subscribe(hooked, "ses-angry@example.net", "news", "digest")
    status, text = confirm(hooked)
    assert status == 200, text
    assert any("ConfirmSubscription" in hit for hit in hooked.sns.hits), hooked.sns.hits
    assert (hooked.data.root / "bounces" / "sns-topic.txt").read_text().strip() == TOPIC
    assert list((hooked.data.root / "bounces" / "sns").glob("*.pem"))  # the certificate, kept

    bounce = sns_message(hooked, "bounce", "ses-gone@example.net", "sns-1", version="1")
    assert hooked.post("ses", bounce) == (200, "ok: 1 applied, 0 seen before\n")
    assert hooked.post("ses", bounce) == (200, "ok: 0 applied, 1 seen before\n")
    complaint = sns_message(hooked, "complaint", "ses-angry@example.net", "sns-2", version="2")
    assert hooked.post("ses", complaint)[0] == 200
    assert "ses-gone@example.net" not in hooked.subscribers("news")  # gone, suppressed
    for service in ("news", "digest"):
        angry = hooked.subscribers(service).get("ses-angry@example.net")
        assert angry is None or angry.state.value == "unsubscribed"
    fetched = [hit for hit in hooked.sns.hits if hit.endswith(".pem")]
    assert len(fetched) == 1, fetched  # fetched once, then read from data/

    # another topic, a forged signature, a certificate elsewhere: refused, nothing counted
    subscribe(hooked, "ses-safe@example.net", "news")
    other = sns_message(hooked, "bounce", "ses-safe@example.net", "sns-3",
                        topic="arn:aws:sns:eu-west-1:999999999999:someone-else")
    status, text = hooked.post("ses", other)
    assert status == 403 and "topic" in text
    forged = json.loads(sns_message(hooked, "bounce", "ses-safe@example.net", "sns-4"))
    forged["Message"] = forged["Message"].replace("Permanent", "Transient")
    assert hooked.post("ses", json.dumps(forged))[0] == 403
    hits = len(hooked.sns.hits)
    foreign = sns_message(hooked, "bounce", "ses-safe@example.net", "sns-5",
                          cert="https://sns.eu-west-1.amazonaws.com.evil.example/cert.pem")
    status, text = hooked.post("ses", foreign)
    assert status == 403 and "certificate" in text
    plain_http = sns_message(hooked, "bounce", "ses-safe@example.net", "sns-6",
                             cert=hooked.sns.url("/x.pem").replace("https", "http"))
    assert hooked.post("ses", plain_http)[0] == 403
    assert len(hooked.sns.hits) == hits  # none of them was even fetched
    assert hooked.subscribers("news")["ses-safe@example.net"].failures == 0
    raw = payload("ses_bounce.json").replace("RECIPIENT", "ses-safe@example.net")
    status, text = hooked.post("ses", raw)  # raw message delivery on: no SNS envelope
    assert status == 400 and "raw message delivery" in text


def test_sns_without_the_test_host_accepts_only_amazons_hosts():
    from vykhukhol.bounces.providers.ses import allowed_url

    assert allowed_url("https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-1.pem")
    assert allowed_url("https://sns.cn-north-1.amazonaws.com.cn/x.pem")
    for url in ("https://127.0.0.1:8443/x.pem", "http://sns.eu-west-1.amazonaws.com/x.pem",
                "https://sns.eu-west-1.amazonaws.com.evil.example/x.pem",
                "https://evil.example/sns.eu-west-1.amazonaws.com/x.pem",
                "https://user@sns.eu-west-1.amazonaws.com/x.pem",
                "https://sns.eu-west-1.amazonaws.com:8443/x.pem", "https://amazonaws.com/x.pem"):
        assert not allowed_url(url), url
    assert allowed_url("https://127.0.0.1:8443/x.pem", "127.0.0.1:8443")


def test_the_test_host_is_no_setting_and_only_a_loopback_one_counts(monkeypatch, site):
    """No setting names the tests' certificate host, and
    the variable that does is taken only for a loopback host:port."""
    from vykhukhol.bounces.providers.ses import TEST_HOST, extra_host
    from vykhukhol.settings import KEYS

    assert not [name for name in KEYS if "test" in name]
    code, _, err = site.call("settings", "set", "hooks.sns_test_host", "127.0.0.1:8443")
    assert code != 0 and "unknown setting" in err
    monkeypatch.delenv(TEST_HOST, raising=False)
    assert extra_host() == ""
    for value in ("127.0.0.1:8443", "localhost:1", "::1:8443"):
        monkeypatch.setenv(TEST_HOST, value)
        assert extra_host() == value
    for value in ("sns.evil.example:443", "10.0.0.1:8443", "127.0.0.1", "127.0.0.1:8443/x",
                  "127.0.0.1.evil.example:8443", " 127.0.0.1:8443"):
        monkeypatch.setenv(TEST_HOST, value)
        assert extra_host() == "", value


def test_a_settings_line_left_from_the_old_setting_is_ignored(site):
    path = site.data.settings
    path.write_text(path.read_text(encoding="utf-8").replace(
        "[hooks]\n", "[hooks]\nsns_test_host = evil.example:443\n"), encoding="utf-8")
    assert "sns_test_host" in path.read_text(encoding="utf-8")
    settings_mod.update(path, {"mail.from_email": "news@example.org"})
    assert "sns_test_host" not in path.read_text(encoding="utf-8")


# --- the command, the CGI script -------------------------------------------------------

def test_hooks_command_prints_each_url_and_new_key_retires_the_old(hooked):
    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(hooked.data.root),
                               "hooks", *args], capture_output=True, text=True,
                              env=subprocess_env(), timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    old = hooked.key
    printed = cli()
    for provider in ("ses", "postmark", "mailgun", "sendgrid", "generic"):
        assert f"https://lists.example.org/cgi/hook.py/{provider}?key={old}" in printed
    renewed = cli("--new-key")
    assert hooked.key != old and f"?key={hooked.key}" in renewed
    subscribe(hooked, "rekeyed@example.net", "news")
    body = payload("generic.json").replace("RECIPIENT", "rekeyed@example.net").replace("evt-1", "r")
    assert hooked.post("generic", body, key=old)[0] == 403
    assert hooked.post("generic", body)[0] == 200


# --- the CGI script, as a host runs it ------------------------------------------


def test_the_cgi_script_takes_a_callback_and_refuses_a_wrong_key(tmp_path):
    site = cgi_install(tmp_path, "news")
    subscribe(site, "cgi-gone@example.net", "news")
    body = payload("generic.json").replace("RECIPIENT", "cgi-gone@example.net") \
        .replace("temporary", "permanent").encode()
    assert hook_cgi(site, body, "key=wrong").status == 403
    assert hook_cgi(site, body, f"key={site.key}", "/nonesuch").status == 404
    assert site.subscribers("news")["cgi-gone@example.net"].failures == 0
    page = hook_cgi(site, body, f"key={site.key}")
    assert page.status == 200, page
    assert site.subscribers("news")["cgi-gone@example.net"].failures == 1


# --- Passenger's app, the status page, the Bounces page ------------------------------

def test_passenger_app_routes_callbacks_and_the_status_page_warns_while_the_provider_is_quiet(site):
    """The whole-site WSGI app (Passenger's) takes /cgi/hook.py/…; with SendGrid as
    the SMTP host, status warns until a SendGrid callback has come, and the
    Bounces page names the provider."""
    from support.servetools import call, environ, log_in
    from vykhukhol.watch import health
    from vykhukhol.web.cgi import make_app
    from vykhukhol.web.server import dispatcher

    site.set(mail__transport="smtp", mail__smtp_host="smtp.sendgrid.net",
             mail__from_email="news@example.org")
    site.service("news")
    site.subscriber("news", "quiet@example.net")
    warned = health.warnings(site.data, site.settings(), site.cgi_dir)
    assert any("SendGrid" in w and "7 days" in w for w in warned), warned

    app = dispatcher(site.data, site.cgi_dir)
    key = site.settings()["hooks.key"]
    body = payload("sendgrid_events.json").replace("BOUNCED", "quiet@example.net")
    body = json.dumps(json.loads(body)[:1]).encode()
    status, _, text, _ = call(app, environ("POST", "/cgi/hook.py/sendgrid", "key=nope", body,
                                           "application/json", str(len(body))))
    assert status == 403, text
    assert any("SendGrid" in w for w in health.warnings(site.data, site.settings(), site.cgi_dir))
    status, _, text, _ = call(app, environ("POST", "/cgi/hook.py/sendgrid", f"key={key}", body,
                                           "application/json", str(len(body))))
    assert status == 200, text
    assert "quiet@example.net" not in site.subscribers("news")  # the report said: gone
    warned = health.warnings(site.data, site.settings(), site.cgi_dir)
    assert not any("SendGrid" in w for w in warned), warned

    admin = make_app("admin", site.data, site.cgi_dir)
    cookie, _ = log_in(admin)
    status, _, page, _ = call(admin, environ("GET", "/bounces", "", b"", "", "missing",
                                             script="/admin", HTTP_COOKIE=cookie))
    assert status == 200
    row = next(r for r in page.split("<tr>") if "quiet@example.net" in r)
    assert "<td>SendGrid</td>" in row, row
