"""Which refusals say the site sends too fast (docs/deliverability/reputation.md#pace): the
reply's text is read, not its code alone; English only."""

from __future__ import annotations

import pytest

from vykhukhol.watch.pace import says_rate, server_of

RATE = [
    (421, "4.7.0 Too many messages"),
    (421, "4.7.28 [192.0.2.1] Our system has detected an unusual rate of unsolicited mail "
          "originating from your IP address. To protect our users from spam, mail sent from "
          "your IP address has been temporarily rate limited. https://support.google.com/x"),
    (451, "Sender rate overlimit - 122.0/1h/strict"),                       # Exim ratelimit
    (550, "Domain example.org has exceeded the max emails per hour (100/100 (100%)) allowed."),
    (550, "Domain example.org has exceeded the max defers and failures per hour (5/5 (100%)) "
          "allowed. Message discarded."),                                   # cPanel
    (421, "4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected "
          "volume or user complaints - 4.16.55.1; see https://postmaster.yahooinc.com/x"),
    (450, "4.7.1 Error: too many recipients from [192.0.2.1]"),             # Postfix anvil
    (421, "127.0.0.1:25 refused the session: Too many concurrent SMTP connections"),
    (454, "Throttling failure: Maximum sending rate exceeded."),            # Amazon SES
    (None, "/usr/sbin/sendmail exited with 75 (temporary failure): sender rate limit exceeded"),
]
NOT_RATE = [
    (421, "4.7.0 [TS01] Messages from 192.0.2.1 temporarily deferred due to user complaints "
          "- 4.16.55.1; see https://postmaster.yahooinc.com/error-codes"),
    (450, "4.2.1 The user you are trying to contact is receiving mail at a rate that prevents "
          "additional messages from being delivered"),                      # one mailbox's rate
    (421, "4.7.0 Слишком много писем, попробуйте позже"),                   # a language we do not read
    (421, "4.7.0 Zu viele Nachrichten"),
    (421, "4.7.0 Try again later, closing connection."),
    (451, "greylisted, try later"),
    (554, "5.4.6 Too many hops"),
    (451, "sender rate@example.org refused: local error"),                  # an address is not words
    (250, "too many"),
]


@pytest.mark.parametrize(("code", "text"), RATE)
def test_a_rate_reply_is_read_as_one(code, text):
    assert says_rate(code, text)


@pytest.mark.parametrize(("code", "text"), NOT_RATE)
def test_other_replies_are_not_a_rate(code, text):
    assert not says_rate(code, text)


@pytest.mark.parametrize(("transport", "host", "server"), [
    ("smtp", "Mail.Example.org", "mail.example.org"), ("sendmail", "127.0.0.1", "sendmail"),
    ("outbox", "127.0.0.1", None)])
def test_whose_pace_a_run_keeps(transport, host, server):
    """Per server: the SMTP host, the transport's name for sendmail, none for the outbox."""
    settings = {"mail.transport": transport, "mail.smtp_host": host}
    assert server_of(settings) == server  # type: ignore[arg-type]
