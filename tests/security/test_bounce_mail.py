"""Mail to the bounce address is a stranger's input (docs/reference/security.md#security-strangers): whoever got a
letter may report a bounce or unsubscribe for the tag of that letter, and
nothing else. Each message goes through the real `vykhukhol bounce` command,
as a mail server's "pipe to a program" runs it; it must exit 0 (the mail
server must not bounce the bounce) and change no subscriber file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.servetools import subprocess_env
from vykhukhol import returntag as tags
from vykhukhol.bounces.reading.limits import MAX_BYTES as MAX_MESSAGE_BYTES

DATA = Path(__file__).resolve().parents[1] / "data" / "bounces"
VICTIM, ATTACKER = "victim@example.com", "attacker@example.net"
LESSONS = [("Lesson 1", "0s", "Hello."), ("Lesson 2", "30d", "Again.")]


def installation(site) -> None:
    site.set(mail__from_email="list@example.org")
    site.service("course", letters=LESSONS)
    for address in (VICTIM, ATTACKER):
        site.subscriber("course", address)


def tagged(site, address: str, secret: bytes | None = None, name: str = "course") -> str:
    secret = site.settings().secret if secret is None else secret
    return tags.bounce_address("list@example.org", "+", tags.make(secret, "s", name, address))


def pipe(site, raw: bytes) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(site.root), "bounce"],
                            input=raw, capture_output=True, timeout=60, env=subprocess_env())
    assert result.returncode == 0, result.stderr
    assert b"Traceback" not in result.stdout + result.stderr
    return result


def subscriber_files(site) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in (site.root / "services").rglob("subscribers.txt")}


def dsn(failed: str, sender: str) -> bytes:
    raw = (DATA / "flufl-dsn_01.txt").read_bytes().replace(b"userx@example.com", failed.encode())
    return f"Delivered-To: {sender}\n".encode() + raw


def test_hostile_messages_change_nothing_and_still_exit_zero(site):
    installation(site)
    own = tagged(site, ATTACKER)
    local, _, domain = tagged(site, VICTIM).rpartition("@")
    altered = f"{local[:-1]}{'b' if local[-1] == 'a' else 'a'}@{domain}"  # one character changed
    foreign = tagged(site, VICTIM, secret=b"another installation's secret, 32 bytes+")
    hostile = [
        b"x" * (MAX_MESSAGE_BYTES + 10),                                      # huge
        b"Content-Type: multipart/mixed; boundary=\"a\"\n\n--a\nContent-Type: multipart/"
        b"report; boundary=\n\n" + b"--a\n" * 500,                            # broken MIME
        f"Delivered-To: {own}\nSubject: \xff\xfe\n\n".encode("latin-1") + b"\xc3\x28\xa0\xa1",
        dsn(VICTIM, altered),                                                 # an altered tag
        dsn(VICTIM, foreign),                                                 # another secret's tag
        dsn(VICTIM, own),                        # my own tag, a report about someone else
        f"Delivered-To: {own}\n".encode() + (DATA / "flufl-dsn_01.txt").read_bytes().replace(
            b"userx@example.com", b"\x00\xff@x"),                            # garbage address
        f"To: {altered}\nSubject: unsubscribe\n\n".encode(),                  # forged mailto
        f"To: {tagged(site, VICTIM, name='other')}\nSubject: unsubscribe\n\n".encode(),
        b"",
    ]
    before = subscriber_files(site)
    for raw in hostile:
        pipe(site, raw)
    assert subscriber_files(site) == before
    lines = (site.data.log / "bounces.log").read_text().splitlines()
    assert len(lines) == len(hostile)  # a line for every problem
    assert not any(line.split("\t")[2] in ("permanent", "unsubscribe", "complaint") for line in lines)


def test_a_complaint_unsubscribes_only_the_address_its_tag_was_made_for(site):
    """An attacker who forwards a feedback report about the victim, with his own
    letter's tag, unsubscribes himself — never the victim."""
    installation(site)
    report = (DATA / "rfc5965-example.txt").read_bytes() \
        .replace(b"somespammer@example.net", tagged(site, ATTACKER).encode()) \
        .replace(b"user@example.com", VICTIM.encode())
    pipe(site, report)
    left = {p.read_text().count(VICTIM) for p in (site.root / "services").rglob("subscribers.txt")}
    assert left == {1}
    assert ATTACKER not in (site.root / "services" / "main" / "course" / "subscribers.txt").read_text()
