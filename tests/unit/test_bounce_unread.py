"""No report is lost to its wrapping (docs/design/bounces.md#bounces-unread):
a delivery-status part inside multipart/mixed, an mbox envelope line at the
top, a broken header that makes one of flufl.bounce's detectors raise —
each still gets a reading, and what cannot be read says why in bounces.log.

Every message here is written for this test (not taken from any corpus).
"""

from __future__ import annotations

import pytest

from vykhukhol.bounces.reading import classify as kinds
from vykhukhol.bounces.reading.reasons import Cause

RECIPIENT = "reader@example.net"

STATUS_PART = f"""\
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.org

Final-Recipient: rfc822; {RECIPIENT}
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 <{RECIPIENT}>: Recipient address rejected: User unknown
"""

REPORT = f"""\
From: MAILER-DAEMON@mx.example.org (Mail Delivery System)
To: news+bounce@example.com
Subject: Undelivered Mail Returned to Sender
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="r"

--r
Content-Type: text/plain

Your message could not be delivered to one or more recipients.

--r
{STATUS_PART}
--r--
""".encode()

# A relay that wraps the status part in multipart/mixed, not multipart/report.
IN_MIXED = f"""\
From: postmaster@relay.example.org
To: news+bounce@example.com
Subject: Delivery report
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="m"

--m
Content-Type: text/plain

A message you sent could not be delivered.

--m
{STATUS_PART}
--m--
""".encode()

# A qmail report whose From header lost its folded line: the header is
# empty, and the address that was its continuation ends the header block.
BROKEN_FOLD = f"""\
To: news+bounce@example.com
Subject: failure notice
Date: Thu, 3 Dec 2026 09:00:00 +0000
From:
MAILER-DAEMON@mx.example.org

Hi. This is the qmail-send program at mx.example.org.
I'm afraid I wasn't able to deliver your message to the following addresses.
This is a permanent error; I've given up. Sorry it didn't work out.

<{RECIPIENT}>:
192.0.2.7 does not like recipient.
Remote host said: 550 5.1.1 <{RECIPIENT}>: Recipient address rejected: User unknown
Giving up on 192.0.2.7.

--- Below this line is a copy of the message.

From: news@example.com
To: {RECIPIENT}
Subject: The weekly letter
""".encode()


@pytest.mark.parametrize(("shape", "raw"), [
    ("a report", REPORT),
    ("a status part inside multipart/mixed", IN_MIXED),
    ("an mbox envelope line", b"From MAILER-DAEMON Thu Dec  3 09:00:00 2026\n" + REPORT),
    ("an escaped mbox envelope line", b">From MAILER-DAEMON Thu Dec  3 09:00:00 2026\n" + REPORT),
    ("blank lines before the headers", b"\r\n\n" + REPORT),
    ("a broken header folding", BROKEN_FOLD),
])
def test_every_wrapping_of_a_report_still_gets_a_reading(shape, raw):
    verdict = kinds.classify(raw, "+")
    assert (verdict.kind, verdict.named, verdict.cause) == (
        kinds.PERMANENT, {RECIPIENT}, Cause.GONE), shape


def test_a_detector_that_raises_is_logged_and_the_others_go_on():
    verdict = kinds.classify(BROKEN_FOLD, "+")
    assert verdict.reason.startswith(f"permanent failure reported for {RECIPIENT}; ")
    assert "the Yale detector could not read it (IndexError)" in verdict.reason.split("; ")


def test_a_report_that_names_nobody_says_so():
    raw = REPORT.replace(f"Final-Recipient: rfc822; {RECIPIENT}\n".encode(), b"").replace(
        f" <{RECIPIENT}>".encode(), b"")
    verdict = kinds.classify(raw, "+")
    assert verdict.kind == kinds.KEPT
    assert verdict.reason == "a delivery report with no failed address that could be read"
    # a person's letter is still "not a bounce report"
    person = b"From: a@example.com\nTo: news+bounce@example.com\nSubject: hello\n\nHi\n"
    assert kinds.classify(person, "+").reason == "not a bounce report"


@pytest.mark.parametrize("address", ["luser@otherhost.invalid", "reader@mail.test",
                                     "Reader@Server.Local"])
def test_a_report_naming_an_address_in_a_reserved_domain_is_read_as_any_other(address):
    """No list holds an address at .invalid, .test or .local (the forms refuse
    them), but a report of its failure is a report: it is read, and the intake
    then finds it on no list and says so."""
    raw = REPORT.replace(RECIPIENT.encode(), address.encode())
    verdict = kinds.classify(raw, "+")
    assert (verdict.kind, verdict.named, verdict.cause) == (
        kinds.PERMANENT, {address.lower()}, Cause.GONE)


@pytest.mark.parametrize("address", ["recipient@#example.net", "=?utf-8?B?8J+QiA==?=@example.org",
                                     "user@under_score.test"])
def test_a_report_naming_what_is_no_address_still_names_nobody(address):
    raw = REPORT.replace(RECIPIENT.encode(), address.encode())
    assert kinds.classify(raw, "+").kind == kinds.KEPT
