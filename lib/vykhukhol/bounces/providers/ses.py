"""Amazon SES notifications through an SNS topic (docs/deliverability/providers.md#provider-callbacks).

SNS posts a JSON envelope (docs.aws.amazon.com/sns, "Verifying the
signatures of Amazon SNS messages"; raw message delivery off):

- ``SubscriptionConfirmation``: verified, then its ``SubscribeURL`` is
  fetched — only when it is ``https://sns.<region>.amazonaws.com/…`` — and the
  topic is kept as *the* topic: a message of any other topic is refused;
- ``Notification``: verified; its ``Message`` is SES's notification
  (``notificationType`` ``Bounce`` with ``bounceType`` ``Permanent``/
  ``Transient``/``Undetermined`` and ``bouncedRecipients``, or ``Complaint``
  with ``complainedRecipients``); anything else does nothing;
- ``UnsubscribeConfirmation``: verified, noted, nothing else.

The signature: ``SignatureVersion`` 1 is SHA1withRSA, 2 SHA256withRSA, over
the documented canonical string (each present field's name and value, one a
line, in a fixed order per type), with the public key of the certificate at
``SigningCertURL``. That URL must be ``https://sns.<region>.amazonaws.com/….pem``
(the test suite adds its own loopback host:port through the environment,
:func:`extra_host`), in printable ASCII; the certificate is fetched over
verified TLS once and kept under ``data/bounces/sns/``, and its subject must
name SNS (sns.amazonaws.com or that host). A signed field holding a line
break is refused (see :func:`canonical`).

The letter is found by our tag in ``mail.source`` (the envelope sender SES
reports) or in an ``X-Vykhukhol-Tag`` header (when the identity includes the
original headers), else by the address. Each recipient's event id is the SNS
MessageId and the address.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from vykhukhol import files
from vykhukhol.bounces.reading import events
from vykhukhol.bounces.reading.callbacks import CallbackRefused, json_body, text
from vykhukhol.bounces.reading.classify import Report

if TYPE_CHECKING:  # for the hints only: a callback loads them anyway, through the app
    from vykhukhol.datadir import DataDir
    from vykhukhol.settings import Settings

# sns.<region>.amazonaws.com(.cn): a region is us-east-1, us-gov-west-1, cn-north-1 …
# (never a bare word: sns.s3.amazonaws.com is no SNS host).
AMAZON_HOST = re.compile(r"sns\.[a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]{2,12}-[0-9]{1,2}\.amazonaws\.com(?:\.cn)?")
SIGNER_NAME = "sns.amazonaws.com"  # the subject Amazon's SNS signing certificates carry
FETCH_TIMEOUT = 10     # seconds for the certificate or the SubscribeURL
MAX_CERT_BYTES = 20_000
TEST_HOST = "VYKHUKHOL_TEST_SNS_HOST"  # the test suite's certificate host: docs/reference/security.md#test-seam
_LOOPBACK = re.compile(r"(127\.0\.0\.1|localhost|::1):[0-9]{1,5}")
# The canonical string's fields, in the documented order, per message type.
SIGNED = {
    "Notification": ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"),
    "SubscriptionConfirmation": ("Message", "MessageId", "SubscribeURL", "Timestamp", "Token",
                                 "TopicArn", "Type"),
}
SIGNED["UnsubscribeConfirmation"] = SIGNED["SubscriptionConfirmation"]


class Outcome(list):
    """The reports of one SNS message, plus what else happened (for the log)."""

    note: str = ""


def read(body: bytes, environ: dict, settings: Settings, data: DataDir, fetch=None) -> list[Report]:
    fetch = fetch or _fetch
    message = json_body(body)
    if not isinstance(message, dict) or text(message.get("Type"), 40) not in SIGNED:
        raise CallbackRefused(400, "not an SNS message (is raw message delivery on? turn it off)")
    kind = message["Type"]
    extra = extra_host()
    verify(message, data, extra, fetch)
    topic = text(message.get("TopicArn"), 300)
    pinned = _pinned(data)
    if pinned and pinned != topic:
        raise CallbackRefused(403, "a message of another SNS topic than the one confirmed first")
    outcome = Outcome()
    if kind == "SubscriptionConfirmation":
        url = message.get("SubscribeURL")
        if not isinstance(url, str) or not allowed_url(url, extra):
            raise CallbackRefused(403, "the SubscribeURL is not on an SNS host")
        fetch(url, 100_000)
        _pin(data, topic)
        outcome.note = f"subscribed to the SNS topic {topic}"
        return outcome
    if kind == "UnsubscribeConfirmation":
        outcome.note = f"SNS says the subscription to {topic} ended"
        return outcome
    if not pinned:
        _pin(data, topic)  # confirmed by hand in the console: the first signed topic stays
    outcome.extend(events.ses(text(message.get("MessageId"), 200), message.get("Message")))
    return outcome


def extra_host() -> str:
    """The test suite's own SNS host (tests/integration/test_hooks.py), or "".

    Read from this process's environment, never from a setting: settings.ini
    can be edited by whoever reaches the host's files, the environment of a
    serving process is set by whoever starts it, and no request can set it
    (CGI passes a request's headers as HTTP_* only). Only a loopback
    host:port counts; outside the tests the variable is not set, and the
    answer is "": Amazon's hosts only."""
    value = os.environ.get(TEST_HOST, "")
    return value if _LOOPBACK.fullmatch(value) else ""


def allowed_url(url: str, test_host: str = "") -> bool:
    """An https URL on an SNS host (or on the test host, where one is set).
    Nothing but printable ASCII: urlsplit drops a tab or a line break that the
    fetch would then trip over (http.client.InvalidURL)."""
    if not url.isascii() or not url.isprintable() or " " in url:
        return False
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return False
    if parts.scheme != "https" or parts.username or parts.password:
        return False
    if AMAZON_HOST.fullmatch(host) and port in (None, 443):
        return True
    return bool(test_host) and f"{host}:{port}" == test_host


def canonical(message: dict) -> bytes:
    """The string SNS signs, as AWS documents it: ``name\\nvalue\\n`` for each
    of the type's fields in its order, Subject only when the message has one.

    A line break in a value would let one signed string be read as another
    message (a MessageId holding ``\\nSubject\\n…`` with the Subject left out
    verifies with the original's signature, under a new id), so a field with
    one is refused. Message alone may hold line breaks (AWS's own confirmation
    text does): it comes first, and cannot hold a field's name line."""
    lines = []
    for name in SIGNED[message["Type"]]:
        if name not in message and name == "Subject":
            continue
        value = message.get(name)
        if not isinstance(value, str):
            raise CallbackRefused(400, f"the SNS message has no {name}")
        if name != "Message" and ("\n" in value or "\r" in value):
            raise CallbackRefused(400, f"the SNS message's {name} holds a line break")
        if name == "Message" and any(f"\n{field}\n" in value for field in SIGNED[message["Type"]]):
            raise CallbackRefused(400, "the SNS message's Message holds a field's name line")
        lines += [name, value]
    return ("\n".join(lines) + "\n").encode("utf-8")


def verify(message: dict, data, test_host: str, fetch) -> None:
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    version = text(message.get("SignatureVersion"), 4)
    if version not in ("1", "2"):
        raise CallbackRefused(403, "an SNS SignatureVersion other than 1 or 2")
    url = message.get("SigningCertURL")
    if not isinstance(url, str) or not allowed_url(url, test_host) or not url.endswith(".pem"):
        raise CallbackRefused(403, "the signing certificate is not on an SNS host")
    try:
        signature = base64.b64decode(text(message.get("Signature"), 2000), validate=True)
        cert = x509.load_pem_x509_certificate(_certificate(data, url, fetch))
        if not _names_signer(cert, urlsplit(url).hostname or ""):
            raise CallbackRefused(403, "the signing certificate is not made out to SNS")
        key = cert.public_key()
        if not isinstance(key, rsa.RSAPublicKey):
            raise ValueError("not an RSA key")
        key.verify(signature, canonical(message), padding.PKCS1v15(),
                   hashes.SHA1() if version == "1" else hashes.SHA256())  # noqa: S303 - SNS's v1
    except (InvalidSignature, ValueError):
        raise CallbackRefused(403, "the SNS signature does not verify") from None


def _names_signer(cert, host: str) -> bool:
    """Whether the certificate's subject (common name or DNS names) is SNS's:
    sns.amazonaws.com, an SNS host, or the host it was fetched from."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    names = [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    try:
        names += cert.extensions.get_extension_for_class(
            x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    except x509.ExtensionNotFound:
        pass
    return any(n.lower() in (SIGNER_NAME, host.lower()) or AMAZON_HOST.fullmatch(n.lower())
               for n in names)


def _certificate(data, url: str, fetch) -> bytes:
    path = data.root / "bounces" / "sns" / (hashlib.sha256(url.encode()).hexdigest()[:32] + ".pem")
    kept = files.read_text(path)
    if kept:
        return kept.encode("ascii", "replace")
    pem = fetch(url, MAX_CERT_BYTES)
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise CallbackRefused(403, "the signing certificate URL gave no certificate")
    files.atomic_write(path, pem.decode("ascii", "replace"), new_mode=0o600)
    return pem


def _fetch(url: str, limit: int) -> bytes:
    """GET over TLS checked against the system's CAs; CallbackRefused 503 when it fails
    (SNS tries again later)."""
    import http.client
    import ssl
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None  # the checked host only: never follow it elsewhere

    opener = urllib.request.build_opener(
        NoRedirect, urllib.request.HTTPSHandler(context=ssl.create_default_context()))
    try:
        with opener.open(url, timeout=FETCH_TIMEOUT) as answer:
            return answer.read(limit)
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
        raise CallbackRefused(503, f"could not fetch {urlsplit(url).hostname}: "
                           f"{getattr(exc, 'reason', exc)}") from None


def _topic_path(data):
    return data.root / "bounces" / "sns-topic.txt"


def _pinned(data) -> str:
    return (files.read_text(_topic_path(data)) or "").strip()


def _pin(data, topic: str) -> None:
    files.atomic_write(_topic_path(data), topic + "\n", new_mode=0o600)
