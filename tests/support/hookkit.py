"""``vykhukhol serve`` with its delivery callbacks: the ``hooked`` fixture
(serve, a local CA and a loopback SNS), each provider's signed payloads, and
the hook run as a CGI script.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import http.client
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

from support.servetools import ServeProcess, subprocess_env
from support.webtools import Page
from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import DataDir
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber

PAYLOADS = Path(__file__).resolve().parents[1] / "data" / "hooks"


TOPIC = "arn:aws:sns:eu-west-1:123456789012:ses-feedback"


MAILGUN_KEY = "key-mailgun-signing-0123456789abcdef"


GENERIC_SECRET = "generic-secret-0123456789abcdef-0123456789"  # hooks.generic_secret


def payload(name: str) -> str:
    return (PAYLOADS / name).read_text(encoding="utf-8")


class Authority:
    """A CA, a TLS certificate for 127.0.0.1 and an SNS signing key, made here."""

    def __init__(self, folder: Path) -> None:
        import ipaddress

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.x509.oid import NameOID

        def name(text: str):
            return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])

        start = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=1)
        end = start + dt.timedelta(days=30)
        ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        ca = (x509.CertificateBuilder().subject_name(name("Test CA")).issuer_name(name("Test CA"))
              .public_key(ca_key.public_key()).serial_number(1).not_valid_before(start)
              .not_valid_after(end)
              .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
              .sign(ca_key, hashes.SHA256()))

        def issued(subject: str, key, san=None):
            builder = (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(ca.subject)
                       .public_key(key.public_key()).serial_number(x509.random_serial_number())
                       .not_valid_before(start).not_valid_after(end))
            if san is not None:
                builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
            return builder.sign(ca_key, hashes.SHA256())

        self.tls_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        tls = issued("127.0.0.1", self.tls_key, [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
        self.sign_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        signing = issued("sns.amazonaws.com", self.sign_key)
        pem = serialization.Encoding.PEM
        self.ca_file = folder / "ca.pem"
        self.ca_file.write_bytes(ca.public_bytes(pem))
        self.tls_file = folder / "tls.pem"
        self.tls_file.write_bytes(tls.public_bytes(pem) + self.tls_key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        self.signing_pem = signing.public_bytes(pem)

    def sign(self, message: dict, version: str = "1") -> dict:
        """``message`` with SNS's Signature over its canonical string."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        fields = {"Notification": ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"),
                  "SubscriptionConfirmation": ("Message", "MessageId", "SubscribeURL", "Timestamp",
                                               "Token", "TopicArn", "Type")}[message["Type"]]
        text = "".join(f"{k}\n{message[k]}\n" for k in fields if k in message)
        digest = hashes.SHA1() if version == "1" else hashes.SHA256()
        signed = dict(message, SignatureVersion=version)
        signed["Signature"] = base64.b64encode(
            self.sign_key.sign(text.encode(), padding.PKCS1v15(), digest)).decode()
        return signed


class LoopbackSns:
    """An HTTPS server on 127.0.0.1 that serves the signing certificate and
    counts each GET (a confirmed SubscribeURL, a fetched certificate)."""

    def __init__(self, authority: Authority) -> None:
        hits: list[str] = []
        pem = authority.signing_pem

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server name
                hits.append(self.path)
                body = pem if self.path.endswith(".pem") else b"<ConfirmSubscriptionResponse/>"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.hits = hits
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(authority.tls_file)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"https://{self.host}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Hooked:
    """One initialised data directory, served by one ``vykhukhol serve``."""

    def __init__(self, root: Path, authority: Authority, sns: LoopbackSns) -> None:
        self.root = root
        self.data = DataDir(root / "data")
        self.cgi_dir = root / "cgi"
        self.authority, self.sns = authority, sns
        self.sendgrid_key = None
        self.proc: ServeProcess | None = None

    @property
    def key(self) -> str:
        return settings_mod.load(self.data.settings)["hooks.key"]

    def subscribers(self, service: str) -> dict[str, Subscriber]:
        path = svc.find_service(self.data, service).subscribers_path
        return {s.email: s for s in subs.subscribers(path)}

    def log(self) -> list[list[str]]:
        path = self.data.log / "bounces.log"
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        return [line.split("\t") for line in text.splitlines()]

    def post(self, provider: str, body: bytes | str, key: str | None = None,
             headers: dict[str, str] | None = None, path: str | None = None) -> tuple[int, str]:
        body = body.encode() if isinstance(body, str) else body
        if provider == "generic" and not path:  # signed as docs/deliverability/providers.md#provider-callbacks says
            from vykhukhol.bounces.providers.generic import signature

            headers = {"X-Vykhukhol-Signature": signature(GENERIC_SECRET, body), **(headers or {})}
        query = urlencode({"key": self.key if key is None else key}) if key != "" else ""
        conn = http.client.HTTPConnection("127.0.0.1", self.proc.port, timeout=30)
        conn.request("POST", (path or f"/cgi/hook.py/{provider}") + (f"?{query}" if query else ""),
                     body=body, headers={"Content-Type": "application/json", **(headers or {})})
        answer = conn.getresponse()
        text = answer.read().decode("utf-8", "replace")
        conn.close()
        return answer.status, text


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def hooked(tmp_path_factory) -> Hooked:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    root = tmp_path_factory.mktemp("hooks")
    authority = Authority(root)
    sns = LoopbackSns(authority)
    site = Hooked(root, authority, sns)
    site.cgi_dir.mkdir()
    data = str(site.data.root)
    import subprocess

    from support.servetools import LIB  # noqa: F401 - the checkout's lib, as serve runs it

    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", data, *args],
                              capture_output=True, text=True, env=subprocess_env(), timeout=60,
                              input="correct-horse-1\n")
        assert done.returncode == 0, done.stderr
        return done.stdout

    cli("init", "--password", "-", "--cgi-dir", str(site.cgi_dir),
        "--site-url", "https://lists.example.org")
    cli("mode", "working")
    sendgrid = ec.generate_private_key(ec.SECP256R1())
    site.sendgrid_key = sendgrid
    public = base64.b64encode(sendgrid.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)).decode()
    settings_mod.update(site.data.settings, {
        "hooks.mailgun_signing_key": MAILGUN_KEY, "hooks.sendgrid_public_key": public,
        "hooks.generic_secret": GENERIC_SECRET, "mail.from_email": "news@example.org"})
    for name in ("news", "digest"):
        if not site.data.db("main").exists():
            svc.add_db(site.data, "main")
        svc.add_service(site.data, name, "main", {"title": name.title()})
        svc.edit_service(site.data, name, {"enabled": "yes"})
    from types import SimpleNamespace

    proc = ServeProcess(SimpleNamespace(root=site.data.root, cgi_dir=site.cgi_dir), free_port(),
                        root / "serve")
    # serve trusts the local authority for its https fetches, as it trusts Amazon's in
    # production, and takes certificates from the loopback SNS host as well as Amazon's
    given = {"SSL_CERT_FILE": str(authority.ca_file), "VYKHUKHOL_TEST_SNS_HOST": sns.host}
    old = {name: os.environ.get(name) for name in given}
    os.environ.update(given)
    try:
        proc.start()
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value
    site.proc = proc
    yield site
    proc.stop()
    sns.close()


def subscribe(site: Hooked, address: str, *services: str) -> None:
    from vykhukhol.states import SubscriberState
    from vykhukhol.timeutil import now

    for service in services:
        subs.add(svc.find_service(site.data, service).subscribers_path, Subscriber(
            email=address, name="", state=SubscriberState("active"), subscribed=now(),
            confirmed=now(), sent=1, last_sent=now(), reminders=0, last_reminder=None,
            failures=0, ip="127.0.0.1"))


def mailgun_body(name: str, recipient: str, event_id: str, stamp: int | None = None,
                 key: str = MAILGUN_KEY, sender: str = "news@example.org") -> str:
    body = json.loads(payload(name).replace("RECIPIENT", recipient).replace("SENDER", sender))
    stamp = int(time.time()) if stamp is None else stamp
    token = hashlib.sha256(event_id.encode()).hexdigest()[:50]
    body["signature"] = {"timestamp": str(stamp), "token": token, "signature": hmac.new(
        key.encode(), f"{stamp}{token}".encode(), hashlib.sha256).hexdigest()}
    body["event-data"]["id"] = event_id
    return json.dumps(body)


def sns_message(hooked: Hooked, kind: str, recipient: str, message_id: str, version: str = "1",
                topic: str = TOPIC, cert: str | None = None) -> str:
    envelope = json.loads(payload("sns_notification.json"))
    notice = payload(f"ses_{kind}.json").replace("RECIPIENT", recipient).replace("SOURCE",
                                                                                 "news@example.org")
    envelope.update(Message=json.dumps(json.loads(notice)), MessageId=message_id, TopicArn=topic,
                    SigningCertURL=cert or hooked.sns.url("/SimpleNotificationService-test.pem"))
    return json.dumps(hooked.authority.sign(envelope, version))


def cgi_install(tmp_path: Path, *services: str) -> Hooked:
    """The checkout copied to tmp_path/install, its data directory beside it
    (tmp_path/data, found through cgi/vykhukhol.path, as docs/deploying/apache.md#apache-step-5
    sets it out), ``services`` in DB main, and the generic form on (GENERIC_SECRET).
    No serve: :func:`hook_cgi` runs cgi/hook.py."""
    from support.cgikit import copy_checkout, vykhukhol

    install = tmp_path / "install"
    copy_checkout(install)
    site = Hooked(tmp_path, None, None)  # type: ignore[arg-type]  # no SNS host, no serve
    site.cgi_dir = install / "cgi"
    vykhukhol("--data", str(site.data.root), "init", "--cgi-dir", str(site.cgi_dir),
              "--password", "correct-horse-1", "--site-url", "https://lists.example.org")
    (site.cgi_dir / "vykhukhol.path").write_text(f"{site.data.root}\n", encoding="utf-8")
    svc.add_db(site.data, "main")
    for name in services:
        svc.add_service(site.data, name, "main", {"title": name.title()})
    settings_mod.update(site.data.settings, {"hooks.generic_secret": GENERIC_SECRET})
    return site


def hook_cgi(site: Hooked, body: bytes, query: str, path: str = "/generic") -> Page:
    """``body`` posted to the installation's cgi/hook.py (PATH_INFO ``path``) as
    a CGI process, signed as docs/deliverability/providers.md#provider-callbacks says (X-Vykhukhol-Signature); its
    answer. The script must end with 0 whatever it answers."""
    from support.cgikit import parse_cgi
    from vykhukhol.bounces.providers.generic import signature

    script = site.cgi_dir / "hook.py"
    environ = {"GATEWAY_INTERFACE": "CGI/1.1", "SERVER_NAME": "localhost", "SERVER_PORT": "80",
               "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": "POST",
               "SCRIPT_NAME": "/cgi/hook.py", "PATH_INFO": path, "QUERY_STRING": query,
               "SCRIPT_FILENAME": str(script), "REMOTE_ADDR": "127.0.0.1",
               "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
               "HTTP_X_VYKHUKHOL_SIGNATURE": signature(GENERIC_SECRET, body),
               "PATH": os.environ["PATH"], "PYTHONNOUSERSITE": "1"}
    done = subprocess.run([str(script)], env=environ, input=body, capture_output=True,
                          cwd=script.parent, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    return parse_cgi(done.stdout, done.stderr)
