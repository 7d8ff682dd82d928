"""Forged reports must not stop the service: the brakes and the "sender
refused" alert count people who really received a letter, not messages.

A stranger subscribes without confirming and takes the signed tag from the
confirmation request's envelope sender (a tag is no secret). With it he pipes
forged spam complaints, "no such user" reports and "blocked" reports into a
real ``vykhukhol bounce``, as a mail server's pipe to a program does; a real
reader forges repeats about his own letter. Letters leave through a real
SMTP server (aiosmtpd) on loopback, and real ``vykhukhol cron`` runs decide.
A real complaint from a real reader still counts, once.

Before the fix three forged complaints braked the service (and again after
each resume), ten forged bounces did too, and five forged "blocked" reports
raised the alert.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller

from vykhukhol import returntag as tags

DATA = Path(__file__).resolve().parents[1] / "data" / "bounces"
ARF = (DATA / "rfc5965-example.txt").read_bytes()
LESSON = [("Lesson 1", "0s", "Hello {{ name }}."), ("Lesson 2", "30d", "Again.")]
READERS = [f"reader{i}@example.net" for i in range(30)]
STRANGER = "stranger@example.com"
BRAKED, REFUSED = "dispatch is braked", "mail servers refuse the sender"


class Mailbox:
    """What the SMTP server accepted: (envelope sender, recipients, bytes)."""

    def __init__(self) -> None:
        self.received: list[tuple[str, list[str], bytes]] = []

    async def handle_DATA(self, server, session, envelope) -> str:  # noqa: N802 - aiosmtpd's name
        self.received.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 OK"

    def to(self, address: str) -> tuple[str, list[str], bytes]:
        found = [r for r in self.received if address in r[1]]
        assert found, f"no letter reached {address}"
        return found[-1]

    def subjects(self) -> list[str]:
        import email

        return [str(email.message_from_bytes(r[2])["Subject"]) for r in self.received]


@pytest.fixture
def smtp() -> Iterator[tuple[Mailbox, int]]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    box = Mailbox()
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield box, port
    finally:
        controller.stop()


def header(raw: bytes, name: str) -> str:
    import email

    return str(email.message_from_bytes(raw)[name] or "")


def pipe(site, raw: bytes) -> None:
    done = site.cli("bounce", input=raw.decode("latin-1"), check=False)
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stderr


def complaint(sender: str, address: str, n: int) -> bytes:
    """An ARF report about our letter to ``address``, made different by ``n``."""
    return f"X-Seen: {n}\n".encode() + ARF.replace(
        b"<somespammer@example.net>", f"<{sender}>".encode()).replace(
        b"user@example.com", address.encode())


def dsn(sender: str, failed: str, n: int, status: str, diagnostic: str, run: str = "") -> bytes:
    """A delivery report about letter ``n`` to ``failed``, returned headers and all."""
    run_line = f"X-Vykhukhol-Run: {run}\n" if run else ""
    return (f"Delivered-To: {sender}\nFrom: MAILER-DAEMON@mx.example.net\nTo: {sender}\n"
            "Subject: Undelivered Mail Returned to Sender\nAuto-Submitted: auto-replied\n"
            "MIME-Version: 1.0\nContent-Type: multipart/report; report-type=delivery-status;"
            ' boundary="B"\n\n--B\nContent-Type: text/plain\n\nYour message could not be'
            " delivered.\n\n--B\nContent-Type: message/delivery-status\n\n"
            "Reporting-MTA: dns; mx.example.net\n\n"
            f"Final-Recipient: rfc822; {failed}\nAction: failed\nStatus: {status}\n"
            f"Diagnostic-Code: smtp; {diagnostic}\n\n"
            "--B\nContent-Type: text/rfc822-headers\n\n"
            f"From: list@example.org\nTo: {failed}\nSubject: Lesson\n"
            f"Message-ID: <forged{n}@example.org>\n{run_line}\n--B--\n").encode()


def gone(sender: str, failed: str, n: int) -> bytes:
    return dsn(sender, failed, n, "5.1.1", f"550 5.1.1 <{failed}>: no such user here")


def blocked(sender: str, failed: str, n: int, run: str) -> bytes:
    return dsn(sender, failed, n, "5.7.1", "554 5.7.1 Service unavailable; client host "
               "[192.0.2.1] blocked using zen.spamhaus.org", run)


def status(site) -> str:
    return "\n".join(line for line in site.cli("status", check=False).stdout.splitlines()
                     if line.startswith("warning: "))


def installation(site, port: int) -> None:
    site.use_smtp(port)
    site.set(serial_per_run=200, complaint_brake=5, bounce_brake=5)
    site.service("course", letters=LESSON)
    for address in READERS:
        site.subscriber("course", address)


def test_a_strangers_forged_reports_never_brake_the_service_nor_raise_the_alert(site, smtp):
    box, port = smtp
    installation(site, port)
    site.cli("cron")  # lesson 1 to thirty readers
    site.subscribe("course", STRANGER)  # never confirmed
    request = box.to(STRANGER)
    own = request[0]
    assert tags.split_address(own, "+"), own  # the tag a stranger holds
    first_run = header(box.to(READERS[0])[2], "X-Vykhukhol-Run")

    # A reader forges "blocked" reports about his own letter of the first run.
    reader_sender = box.to(READERS[0])[0]
    for n in range(6):
        pipe(site, blocked(reader_sender, READERS[0], 100 + n, first_run))
    # The stranger: "blocked" for his confirmation request and for the run,
    # then ten "no such user", then three spam complaints, all with his tag.
    for n in range(6):
        pipe(site, blocked(own, STRANGER, n, header(request[2], "X-Vykhukhol-Run")))
        pipe(site, blocked(own, STRANGER, 10 + n, first_run))
        pipe(site, blocked(own, STRANGER, 20 + n, ""))
    for n in range(10):
        pipe(site, gone(own, STRANGER, 30 + n))
    for n in range(4):
        pipe(site, complaint(own, STRANGER, n))

    site.subscriber("course", "late@example.net")
    site.cli("cron")
    box.to("late@example.net")  # the service went on
    assert BRAKED not in box.subjects() and REFUSED not in box.subjects()
    assert "braked" not in status(site)


def test_a_real_readers_complaint_counts_once_however_often_it_comes(site, smtp):
    box, port = smtp
    installation(site, port)
    site.cli("cron")
    for address in READERS[:3]:  # three readers, each complaint sent three times
        sender = box.to(address)[0]
        for n in range(3):
            pipe(site, complaint(sender, address, n))
    for n in range(10):  # an address gone, reported ten times
        pipe(site, gone(box.to(READERS[5])[0], READERS[5], n))

    site.subscriber("course", "late@example.net")
    site.cli("cron")
    assert "late@example.net" not in {a for r in box.received for a in r[1]}
    said = status(site)
    assert "Service course is braked" in said and "complaints: 3 (" in said, said
    assert "addresses gone: 1 (" in said, said
    assert BRAKED in box.subjects()
