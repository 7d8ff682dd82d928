"""The order of evidence in a refusal: the enhanced status code, then the
reply code, then the words (docs/design/bounces.md#bounces-rules).

Each message here is written for this test, in the shape real mail takes
(not taken from any corpus): a reason name from Sisimai's tables is an
input, and these are the shapes where the codes and the words outweigh it.
"""

from __future__ import annotations

import pytest

from vykhukhol.bounces.reading import classify as kinds
from vykhukhol.bounces.reading.reasons import Cause, read, smtp_reason

RECIPIENT = "reader@example.net"


def dsn(status: str, diagnostic: str, action: str = "failed", recipient: str = RECIPIENT,
        prose: str = "") -> bytes:
    """A small RFC 3464 report from Postfix-like software about one recipient."""
    return f"""\
From: MAILER-DAEMON@mx.example.org (Mail Delivery System)
To: news+bounce@example.com
Subject: Undelivered Mail Returned to Sender
Return-Path: <>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="b1"

--b1
Content-Type: text/plain

This is the mail system at host mx.example.org.

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients.
{prose}
--b1
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.org

Final-Recipient: rfc822; {recipient}
Action: {action}
Status: {status}
Diagnostic-Code: smtp; {diagnostic}

--b1
Content-Type: text/rfc822-headers

From: news@example.com
To: {recipient}
Subject: The weekly letter
Message-ID: <weekly-1@example.com>

--b1--
""".encode()


def cause_of(raw: bytes) -> Cause | None:
    verdict = kinds.classify(raw, "+")
    assert verdict.named == {RECIPIENT}
    return verdict.cause


@pytest.mark.parametrize(("status", "diagnostic", "cause"), [
    # "user unknown" after the letter's text: Sisimai calls it filtered; the
    # 5.1.1 code and the words agree that the mailbox does not exist
    ("5.1.1", f"550 5.1.1 <{RECIPIENT}>: user unknown (in reply to end of DATA command)",
     Cause.GONE),
    ("5.2.1", "550 5.2.1 This account disabled, no longer in use", Cause.GONE),
    # a recipient domain with no mail host
    ("5.1.2", "Host or domain name not found. Name service error for name=example.net "
     "type=A: Host not found", Cause.GONE),
    ("5.4.4", "Host or domain name not found. Name service error for name=example.net type=MX: "
     "Host not found, try again", Cause.GONE),
    # a 4xx is never gone, whatever its words, even when the server gave up
    ("4.1.1", f"450 4.1.1 <{RECIPIENT}>: Recipient address rejected: unknown user "
     "(in reply to RCPT TO command)", Cause.SOFT),
])
def test_the_codes_and_the_words_decide_in_order(status, diagnostic, cause):
    assert cause_of(dsn(status, diagnostic)) is cause


@pytest.mark.parametrize(("code", "status"), [("554", "5.7.1"), ("550", "5.1.1")])
def test_words_of_content_beside_user_unknown_are_never_gone(code, status):
    diagnostic = (f"{code} {status} Message rejected as spam, user unknown "
                  "(in reply to end of DATA command)")
    assert cause_of(dsn(status, diagnostic)) in (Cause.SOFT, Cause.SENDER)
    assert read(status, diagnostic, "failed").cause is not Cause.GONE


def test_a_4xx_is_never_gone_whatever_it_says():
    assert read("4.1.1", f"450 4.1.1 <{RECIPIENT}>: unknown user", "failed").cause is Cause.SOFT
    assert read("", f"450 <{RECIPIENT}>: user unknown", "failed").cause is not Cause.GONE
    assert smtp_reason(450, "4.1.1", "unknown user").cause is Cause.DELAY


def test_a_disabled_account_is_gone_in_doubt_when_the_code_says_so_too():
    reading = read("5.2.1", "550 5.2.1 account disabled", "failed")
    assert (reading.cause, reading.rule, reading.seen, reading.sure) == (
        Cause.GONE, "status", "5.2.1 account disabled", False)
    # a temporary suspension is not the account gone
    assert read("5.2.1", "550 5.2.1 account temporarily disabled", "failed").cause is Cause.SOFT
    # the same words at hand-over
    assert smtp_reason(550, "5.2.1", "account disabled").cause is Cause.GONE


def test_user_unknown_after_data_without_a_code_is_gone_in_doubt():
    # Sisimai calls it filtered (Japanese carriers answer so when the recipient's
    # own filter refuses the sender): the address gets no letter either way
    reading = read("", "550 Unknown user a@example.org (in reply to end of DATA command)",
                   "failed")
    assert (reading.cause, reading.sure) == (Cause.GONE, False)


def report(body: str, subject: str = "failure notice") -> bytes:
    """A report written for people only (qmail, Exim), with no DSN part."""
    return f"""\
From: MAILER-DAEMON@mx.example.org
To: news+bounce@example.com
Subject: {subject}
Return-Path: <>

{body}
""".encode()


def test_an_ip_address_is_not_a_status_code():
    # "[4.79.181.168]" once read as a 4.x.x code: temporary, never gone
    diagnostic = ("host mx2.mail.example.com [4.79.181.168]: 554 delivery error: dd Sorry your "
                  f"message to {RECIPIENT} cannot be delivered. This account has been disabled "
                  "or discontinued [#102].")
    reading = read("", diagnostic, "failed")
    assert reading.status == "" and reading.code == "554"


def test_an_account_disabled_or_discontinued_is_gone_in_doubt():
    reading = read("", f"554 delivery error: dd Sorry your message to {RECIPIENT} cannot be "
                   "delivered. This account has been disabled or discontinued [#102].", "failed")
    assert (reading.cause, reading.sure) == (Cause.GONE, False)
    # so is a 5xx saying the account is disabled; "temporarily" keeps it soft
    reading = read("", "550 This account is disabled", "failed")
    assert (reading.cause, reading.sure) == (Cause.GONE, False)
    assert read("", "550 This account is temporarily disabled", "failed").cause is Cause.SOFT


def test_an_account_left_inactive_is_gone_in_doubt():
    # Google's 5.2.1 for an account nobody has used for long, which it deletes:
    # refused for good while it stays so, like a disabled one
    diagnostic = ("550-5.2.1 The email account that you tried to reach is inactive. For more "
                  "information, go to 550 5.2.1 https://support.google.com/mail/?p=DisabledUser")
    reading = kinds.classify(dsn("5.2.1", diagnostic), "+").readings[RECIPIENT]
    assert (reading.cause, reading.sure) == (Cause.GONE, False)
    assert read("", "550 This mailbox is inactive", "failed").cause is Cause.GONE
    # said while the server still tries, it is no proof
    assert read("4.2.1", "450 4.2.1 This mailbox is inactive and has been disabled",
                "failed").cause is not Cause.GONE


def test_qmail_saying_it_does_not_like_the_recipient_answered_rcpt_to():
    body = f"""\
Hi. This is the qmail-send program at mx.example.org.
I'm afraid I wasn't able to deliver your message to the following addresses.
This is a permanent error; I've given up. Sorry it didn't work out.

<{RECIPIENT}>:
192.0.2.7 does not like recipient.
Remote host said: 550 {RECIPIENT}... No such user
Giving up on 192.0.2.7.
"""
    verdict = kinds.classify(report(body), "+")
    reading = verdict.readings[RECIPIENT]
    assert (reading.cause, reading.sure) == (Cause.GONE, True)


def test_exim_s_unrouteable_mail_domain_is_gone_in_doubt():
    body = f"""\
This message was created automatically by mail delivery software.

A message that you sent could not be delivered to one or more of its
recipients. This is a permanent error. The following address(es) failed:

  {RECIPIENT}
    unrouteable mail domain "example.net"
"""
    verdict = kinds.classify(report(body, "Mail delivery failed: returning message to sender"),
                             "+")
    reading = verdict.readings[RECIPIENT]
    assert (reading.cause, reading.reason, reading.sure) == (Cause.GONE, "hostunknown", False)


def test_a_mailbox_the_server_calls_unavailable_is_gone_in_doubt():
    # RFC 5321's own words for a 550, with the address between them
    body = f"""\
This is the mail system at host mx.example.org.

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients.

<{RECIPIENT}>: host mx.example.net[192.0.2.9] said: 550 mailbox
    {RECIPIENT} unavailable (in reply to RCPT TO command)
"""
    verdict = kinds.classify(report(body, "Undelivered Mail Returned to Sender"), "+")
    reading = verdict.readings[RECIPIENT]
    assert (reading.cause, reading.reason, reading.sure) == (Cause.GONE, "userunknown", False)
    assert read("", f"550 mailbox {RECIPIENT} unavailable", "failed").cause is Cause.GONE
    # a 4xx, a full mailbox or no room is not the mailbox gone
    assert read("", f"450 mailbox {RECIPIENT} unavailable", "failed").cause is not Cause.GONE
    assert read("", "550 mailbox unavailable (not enough free space)",
                "failed").cause is not Cause.GONE


def test_a_recipient_domain_that_dns_says_does_not_exist_is_gone_in_doubt():
    # Microsoft 365's words for a domain with no DNS record, whatever its own table says
    diagnostic = ("550 5.4.310 DNS domain example.net does not exist [Message=InfoDomainNonexistent]"
                  " [LastAttemptedServerName=example.net] [AM0P190MB0001.EURP190.PROD.OUTLOOK.COM]")
    verdict = kinds.classify(dsn("5.4.310", diagnostic), "+")
    reading = verdict.readings[RECIPIENT]
    assert (reading.cause, reading.reason, reading.sure) == (Cause.GONE, "hostunknown", False)
    # our own sender's domain is not the recipient's
    assert read("5.7.1", "550 5.7.1 Sender domain example.com does not exist",
                "failed").cause is not Cause.GONE


def test_no_such_user_written_as_one_word_is_gone():
    # an old local delivery agent's code beside a bare 500: the words say more
    # than the code, as any single mail system's sentence for no such user does
    reading = read("", "500 (err.nosuchuser)", "failed")
    assert (reading.cause, reading.reason) == (Cause.GONE, "userunknown")
    assert read("", "452 (err.nosuchuser)", "failed").cause is not Cause.GONE


def test_a_domain_with_no_valid_mail_host_is_gone_in_doubt():
    # the words for people of a report whose DSN says only 5.0.0
    prose = f"""
The following address failed:

    {RECIPIENT}:
        no valid MX hosts found
"""
    report_ = dsn("5.0.0", "", prose=prose).replace(b"Diagnostic-Code: smtp; \n", b"")
    reading = kinds.classify(report_, "+").readings[RECIPIENT]
    assert (reading.cause, reading.reason, reading.sure) == (Cause.GONE, "hostunknown", False)
    # said for a while, it is no proof
    assert read("4.4.4", "454 4.4.4 no MX or A for domain", "failed").cause is not Cause.GONE


def test_a_domain_whose_name_servers_answer_nothing_usable_is_gone_in_doubt():
    # Postfix's words when a domain's name servers answer nothing it can use; the
    # same with the code that says no route (5.4.4) and with none said (5.0.0)
    for status, words in (("5.4.4", "Malformed or unexpected name server reply"),
                          ("5.0.0", "Malformed name server reply")):
        diagnostic = f"Name service error for name=example.net type=MX: {words}"
        reading = kinds.classify(dsn(status, diagnostic), "+").readings[RECIPIENT]
        assert (reading.cause, reading.reason, reading.sure) == (Cause.GONE, "hostunknown", False)
    # said while it still tries, it is no proof
    assert read("4.4.3", "Name service error for name=example.net type=MX: Malformed or "
                "unexpected name server reply", "delayed").cause is not Cause.GONE


def test_a_report_whose_folded_header_lines_lost_their_indent_is_read():
    # its headers would end at the first unindented folded line, and its report
    # be read from the lines after it ("helo=…;" taken for the refused command)
    raw = f"""\
Return-Path: <>
Received-SPF: pass (mx.example.org: domain of bounce.example.org designates
192.0.2.8 as permitted sender) client-ip=192.0.2.8;
envelope-from=postmaster@bounce.example.org;
helo=bounce.example.org;
Received: from bounce.example.org (bounce.example.org
[192.0.2.8])
by mx.example.org with ESMTP; Thu, 07 May 2026 11:03:07 +0000
From: Mail Delivery System <mailer-daemon@example.org>
To: news+bounce@example.com
Subject: Mail delivery failed: returning message to sender

This message was created automatically by mail delivery software.

A message that you sent could not be delivered to one or more of
its recipients. The following addresses failed:

<{RECIPIENT}>

SMTP error from remote server after RCPT command:
host mx1.example.net[192.0.2.9]:
550 5.1.1 Recipient address rejected: User unknown
""".encode()
    verdict = kinds.classify(raw, "+")
    assert verdict.subject.startswith("Mail delivery failed")
    assert verdict.readings[RECIPIENT].cause is Cause.GONE
    # a letter whose body follows its headers with no blank line keeps its body
    letter = b"From: a@example.org\nSubject: hello\nHow are you?\nFine.\n"
    assert kinds.classify(letter, "+").subject == "hello"
