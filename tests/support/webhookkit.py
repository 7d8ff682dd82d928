"""A webhook receiver on loopback (http, or https with a certificate of a
local CA) that records each POST and checks its signature with the Standard
Webhooks algorithm, written here from the specification and not from our
code: ``base64(HMAC-SHA256(base64decode(secret minus "whsec_"),
"{id}.{timestamp}.{body}"))`` after ``v1,``, among space-separated
signatures, the timestamp within five minutes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import ssl
import threading
import time
from pathlib import Path


def verify(secret: str, headers: dict[str, str], body: bytes, tolerance: int = 300) -> bool:
    """The reference check of a Standard Webhooks delivery."""
    msg_id = headers.get("webhook-id", "")
    stamp = headers.get("webhook-timestamp", "")
    if not msg_id or not stamp.isdigit() or abs(time.time() - int(stamp)) > tolerance:
        return False
    key = base64.b64decode(secret.split("_", 1)[1])
    content = msg_id.encode() + b"." + stamp.encode() + b"." + body
    expected = base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()
    for given in headers.get("webhook-signature", "").split(" "):
        version, _, value = given.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return True
    return False


class Delivery:
    def __init__(self, path: str, headers: dict[str, str], body: bytes) -> None:
        self.path, self.headers, self.body = path, headers, body

    @property
    def id(self) -> str:
        return self.headers.get("webhook-id", "")

    @property
    def json(self) -> dict:
        return json.loads(self.body)


class Receiver:
    """Answers each POST with the next of ``answers`` (then 200): a status
    code, ``("stall", seconds)``, ``("redirect", url)`` or ``"endless"``."""

    def __init__(self, answers: list | None = None, tls_file: Path | None = None) -> None:
        self.answers = list(answers or [])
        self.got: list[Delivery] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with receiver.lock:
                    receiver.got.append(Delivery(self.path, {k.lower(): v for k, v in self.headers.items()},
                                                 body))
                    answer = receiver.answers.pop(0) if receiver.answers else 200
                if isinstance(answer, tuple) and answer[0] == "stall":
                    time.sleep(answer[1])
                    answer = 200
                if isinstance(answer, tuple) and answer[0] == "redirect":
                    self.send_response(302)
                    self.send_header("Location", answer[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if answer == "endless":
                    self.send_response(200)
                    self.end_headers()
                    try:
                        while True:
                            self.wfile.write(b"x" * 65536)
                    except OSError:
                        return
                self.send_response(int(answer))
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if tls_file is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls_file)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait(self, count: int, seconds: float = 10.0) -> list[Delivery]:
        ends = time.monotonic() + seconds
        while time.monotonic() < ends and len(self.got) < count:
            time.sleep(0.02)
        return list(self.got)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
