"""Shapes of real bounces the readers once missed (docs/design/bounces.md#bounces-rules,
docs/design/bounces.md#bounces-unread): a 5.1.1 or 5.1.2 whatever its words, a dead
mailbox said in another language, a directory's "no match", MDaemon's "Warning:"
over a final refusal, and failed addresses where a report hides them.

Each message here is written for this test, in the shape real mail takes (not
taken from any corpus).
"""

from __future__ import annotations

import pytest

from vykhukhol.bounces.reading import classify as kinds
from vykhukhol.bounces.reading.reasons import Cause

RECIPIENT = "reader@example.net"


def dsn(status: str, diagnostic: str) -> bytes:
    return f"""\
From: MAILER-DAEMON@mx.example.org (Mail Delivery System)
To: news+bounce@example.com
Subject: Undelivered Mail Returned to Sender
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="b1"

--b1
Content-Type: text/plain

Your message could not be delivered to one or more recipients.

--b1
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.org

Final-Recipient: rfc822; {RECIPIENT}
Action: failed
Status: {status}
Diagnostic-Code: smtp; {diagnostic}

--b1--
""".encode()


def postfix(said: str, address: str = RECIPIENT, subject: str = "Undelivered Mail Returned to Sender",
            sender: str = "MAILER-DAEMON@mx.example.org") -> bytes:
    """A report for people only, as Postfix writes it without its DSN part."""
    return f"""\
From: {sender}
To: news+bounce@example.com
Subject: {subject}
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8

This is the mail system at host mx.example.org.

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients.

<{address}>: host mx.example.net[192.0.2.7] said: {said}
""".encode()


def reading(raw: bytes, address: str = RECIPIENT):
    verdict = kinds.classify(raw, "+")
    assert address in verdict.readings, verdict.reason
    return verdict.readings[address]


@pytest.mark.parametrize("status, words", [
    ("5.1.1", "550 5.1.1 Address rejected"),
    ("5.1.1", "550 5.1.1 <reader@example.net>: Recipient address rejected: example.net"),
    ("5.1.10", "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup"),
    ("5.1.2", "550 5.1.2 Bad destination system address"),
])
def test_a_bad_destination_code_is_gone_whatever_its_words(status, words):
    found = reading(dsn(status, words))
    assert (found.cause, found.rule, found.sure) == (Cause.GONE, "status", True)


@pytest.mark.parametrize("words", [
    "550 5.1.1 <news+bounce@example.com>: unauthorized sender",
    "550 RCPT TO:<reader@example.net> max message size exceeded",
    "550 5.1.1 Relaying denied",
])
def test_a_bad_destination_code_about_something_else_is_not_gone(words):
    assert reading(dsn("5.1.1", words)).cause is not Cause.GONE


@pytest.mark.parametrize("words", [
    "550 El buzón no existe",
    "550 Esta casilla ha expirado por falta de uso",
    "550 L'adresse n'existe pas",
    "550 Utilisateur inconnu",
    "550 Mailbox not available / Konto niedostepne",
    "550 Adres nie istnieje",
    "550 Empfänger unbekannt",
    "550 Die Adresse existiert nicht",
    "550 O endereço não existe",
    "550 Utente sconosciuto",
    "550 Нет такого пользователя",
    "550 Почтовый ящик не существует",
])
def test_a_dead_mailbox_in_another_language_is_gone_in_doubt(words):
    found = reading(postfix(words))
    assert (found.cause, found.sure) == (Cause.GONE, False)


def test_a_dead_mailbox_in_another_language_under_exchanges_heading_is_gone():
    raw = f"""\
From: postmaster@mx.example.org
To: news+bounce@example.com
Subject: Undeliverable: The weekly letter
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8

Error al entregar a estos destinatarios o grupos:
{RECIPIENT}
La dirección de correo electrónico que escribió no existe (550).
""".encode()
    assert reading(raw).cause is Cause.GONE


@pytest.mark.parametrize("words", [
    "450 El buzón no existe",  # a 4xx is never gone
    "550 Le groupe n'existe pas ou vous n'êtes pas autorisé à y publier",  # a group refusing a post
    "550 Benutzer unbekannt, spam",  # content
])
def test_foreign_words_need_a_permanent_refusal_about_the_mailbox(words):
    assert reading(postfix(words)).cause is not Cause.GONE


@pytest.mark.parametrize("words", [
    "550 No matches to nameserver query",
    "550 the address did not exactly match an Example email address",
    "550 user is not in the directory",
])
def test_a_directory_that_holds_no_such_name_is_gone_in_doubt(words):
    found = reading(postfix(words))
    assert (found.cause, found.sure) == (Cause.GONE, False)


def test_sendmails_addressee_unknown_under_a_disabled_code_is_gone():
    found = reading(postfix(f"550 5.2.1 <{RECIPIENT}>... Addressee unknown, relay=[192.0.2.9]"))
    assert found.cause is Cause.GONE


def test_mdaemons_warning_over_a_final_refusal_is_no_delay():
    raw = f"""\
From: MDaemon@mx.example.org
To: news+bounce@example.com
Subject: Warning: {RECIPIENT} - User unknown!
MIME-Version: 1.0
Content-Type: text/plain

{RECIPIENT} - no such user here.

There is no user by that name at this server.
""".encode()
    verdict = kinds.classify(raw, "+")
    assert verdict.kind == kinds.PERMANENT and verdict.cause is Cause.GONE


def test_an_address_named_contact_is_still_the_failed_one():
    address = "contact@example.net"
    found = reading(postfix(f"550 5.1.1 <{address}>: Recipient address rejected: User unknown",
                            address), address)
    assert found.cause is Cause.GONE


def test_dsn_fields_written_as_text_name_the_recipient_the_report_is_addressed_to():
    # Amazon WorkMail: the report's To: is the failed recipient itself, its DSN
    # fields written in the text part.
    raw = f"""\
From: amazonses.com
To: <{RECIPIENT}>
Subject: Undelivered Mail Returned to Sender
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="w"

--w
Content-Type: text/plain; charset=UTF-8

An error occurred while trying to deliver the mail to the following recipients:
{RECIPIENT}
Technical report:
Reporting-MTA: dns; a1.smtp-out.example.com
Action: failed
Final-Recipient: rfc822; {RECIPIENT}
Diagnostic-Code: smtp; 550 5.1.1 <{RECIPIENT}>: Recipient address rejected: User unknown
Status: 5.1.1
--w--
""".encode()
    assert reading(raw).cause is Cause.GONE


def test_a_text_part_whose_charset_lost_its_semicolon_is_still_read():
    raw = f"""\
From: "Mail Delivery System" <MAILER-DAEMON>
To: news+bounce@example.com
Subject: Returned Mail: User unknown
Return-Path: <>
Content-Type: multipart/mixed; boundary="x"

--x
Content-Type: text/plain
   charset="iso-2022-jp"

---The following addresses had delivery errors---
{RECIPIENT} [User unknown]
--x--
""".encode()
    assert reading(raw).cause is Cause.GONE


def test_headers_a_report_quotes_in_its_own_words_do_not_end_it():
    raw = f"""\
From: PMDF e-Mail Interconnect <MAILER-DAEMON@mx.example.org>
To: news+bounce@example.com
Subject: Delivery Notification: Delivery has failed
Content-Type: text/plain

This report relates to a message you sent with the following header fields:

  Message-id: <weekly-1@example.com>
  From: news@example.com
  Subject: The weekly letter

Your message cannot be delivered to the following recipients:

  Recipient address: {RECIPIENT}
  Reason: Remote SMTP server has rejected address
  Diagnostic code: smtp; 550 5.1.1 User Unknown: {RECIPIENT}
""".encode()
    assert reading(raw).cause is Cause.GONE


def test_a_delivery_report_marked_auto_submitted_is_no_automatic_reply():
    # sendmail marks its reports "Auto-Submitted: auto-generated (failure)"; one
    # whose address no reader can take is kept as a report, not an auto-reply.
    raw = dsn("5.1.1", "550 5.1.1 User unknown").replace(
        b"MIME-Version", b"Auto-Submitted: auto-generated (failure)\nMIME-Version").replace(
        f"rfc822; {RECIPIENT}".encode(), b"rfc822; =?utf-8?B?8J+QiA==?=@example.net")
    verdict = kinds.classify(raw, "+")
    assert verdict.kind == kinds.KEPT
    assert verdict.reason == "a delivery report with no failed address that could be read"


def test_a_report_that_names_nobody_is_read_for_whom_the_returned_letter_was_carried():
    # Exim-like words from a sender no robot's name marks ("ndr@"), the failed
    # address only in the returned letter's last hop; its To: is a list.
    raw = f"""\
From: ndr@mx.example.net
To: news+bounce@example.com
Subject: Mail delivery failed: returning message to sender
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="n"

--n
Content-Type: text/plain

This message was created automatically by mail delivery software.
A message that you sent could not be delivered to one or more of its recipients.
One or more of the recipients are not a valid user of the system.

--n
Content-Type: message/rfc822

Received: from mx.example.com (mx.example.com [192.0.2.1])
\tby mx.example.net with ESMTP id 47mmbl
\tfor <{RECIPIENT}>; Mon, 30 Dec 2019 18:46:11 +0000
To: "The weekly list" <weekly@example.com>
From: news@example.com
Subject: The weekly letter

Hello.
--n--
""".encode()
    verdict = kinds.classify(raw, "+")
    assert verdict.named == {RECIPIENT}
    assert (verdict.cause, verdict.readings[RECIPIENT].sure) == (Cause.GONE, False)
    # a last hop "for" no address: nobody, never the letter's To:
    unnamed = raw.replace(f"for <{RECIPIENT}>".encode(), b"for <luser@#otherhost.net>")
    assert kinds.classify(unnamed, "+").named == set()
