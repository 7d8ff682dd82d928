"""Bounce reports for the tests that feed them in: the envelope sender a letter
went out with, an RFC 3464 report about it, RFC 5965's complaint (``ARF``),
and ``vykhukhol bounce`` fed one on stdin (``pipe``).
"""

from __future__ import annotations

from pathlib import Path

from vykhukhol import returntag as tags

DATA = Path(__file__).resolve().parents[1] / "data" / "bounces"


LESSON = [("Lesson 1", "0s", "Hello {{ name }}."), ("Lesson 2", "30d", "Again.")]


def tagged_sender(site, received, kind: str, name: str, address: str) -> str:
    """The envelope sender the server received for this letter, if it is tagged;
    else the one the sender will use (tag.make + tag.bounce_address: the
    tagging of the envelope is another branch's work, not merged here yet)."""
    settings = site.settings()
    separator = settings["mail.verp_separator"]
    if received is not None and tags.split_address(received.mail_from, separator):
        return received.mail_from
    base = settings["mail.bounce_address"] or settings["mail.from_email"]
    return tags.bounce_address(base, separator, tags.make(settings.secret, kind, name, address))


def dsn(failed: str, sender: str, message_id: str, status: str = "5.2.2",
        diagnostic: str = "smtp; 552 5.2.2 <{failed}>: mailbox full, quota exceeded",
        action: str = "failed", mta: str = "mx.example.net") -> bytes:
    """An RFC 3464 report as a relay writes it, about the letter ``message_id`` to
    ``failed`` (its headers returned), delivered to the letter's tagged sender."""
    return (f"Delivered-To: {sender}\nFrom: MAILER-DAEMON@mx.example.net\nTo: {sender}\n"
            "Subject: Undelivered Mail Returned to Sender\nAuto-Submitted: auto-replied\n"
            "MIME-Version: 1.0\nContent-Type: multipart/report; report-type=delivery-status;"
            ' boundary="B"\n\n--B\nContent-Type: text/plain\n\nYour message could not be'
            " delivered.\n\n--B\nContent-Type: message/delivery-status\n\n"
            f"Reporting-MTA: dns; {mta}\n\n"
            f"Final-Recipient: rfc822; {failed}\nAction: {action}\nStatus: {status}\n"
            f"Diagnostic-Code: {diagnostic.format(failed=failed)}\n\n"
            "--B\nContent-Type: text/rfc822-headers\n\n"
            f"From: list@example.org\nTo: {failed}\nSubject: Lesson\nMessage-ID: {message_id}\n"
            "\n--B--\n").encode()


def pipe_site(site) -> None:
    site.set(mail__from_email="list@example.org")
    site.service("course", letters=LESSON)


def pipe(site, raw: bytes):
    result = site.cli("bounce", input=raw.decode("latin-1"), check=False)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return result


ARF = (DATA / "rfc5965-example.txt").read_bytes()
