"""A real relay that accepts first and bounces later: the Postfix fixture itself.

Vykhukhol's letters go to a Postfix on loopback (tests/support/postfixkit.py)
the way a shared host's relay takes them: every recipient is accepted, and the
dead ones come back seconds later as genuine Postfix DSNs, addressed to each
letter's tagged envelope sender and delivered into the Dovecot fixture's
INBOX, where the bounce reader finds them. This module pins the fixture (what
arrives where); what the sender then does with each reason is pinned beside
the sender's rules.
"""

from __future__ import annotations

import email

from support.dovecotkit import dovecot_fixture, dovecot_server_fixture  # noqa: F401 - fixtures
from support.postfixkit import (  # noqa: F401 - fixtures
    BOUNCE_DOMAIN,
    greylist,
    postfix_fixture,
    postfix_server_fixture,
    wait_for,
)

LESSON = [("Lesson 1", "0s", "Hello {{ name }}."), ("Lesson 2", "30d", "Again.")]
HOUR = 3600


def relay_site(site, postfix, dovecot, *addresses: str) -> None:
    site.set(mail__transport="smtp", mail__smtp_host="127.0.0.1", mail__smtp_port=postfix.port,
             mail__from_email=f"news@{BOUNCE_DOMAIN}", mail__bounce_mailbox=dovecot.url("imaps"),
             mail__bounce_cafile=str(dovecot.cafile))
    site.service("course", letters=LESSON)
    for address in addresses:
        site.subscriber("course", address, ago=2 * HOUR)


def test_the_relay_accepts_every_letter_and_returns_the_dead_ones_as_dsns_to_their_tags(
        site, postfix, dovecot):
    relay_site(site, postfix, dovecot, "dead@gone.example.org", "full@full.example.org",
               "blocked@blocked.example.org", "slow@later.example.org", "reader@ok.example.org")
    report = site.cli("cron").stdout
    assert site.sent_counts(report) == {"course": 5}, report  # all five accepted

    returned = wait_for(lambda: len(dovecot.messages()) >= 3 and dovecot.messages())
    assert returned, postfix.log()[-3000:]
    reports = [email.message_from_bytes(raw) for raw in returned]
    assert all(m.get_content_type() == "multipart/report" for m in reports)
    tagged = sorted(m["Delivered-To"] for m in reports)
    assert all(t.startswith("news+") and t.endswith(f"@{BOUNCE_DOMAIN}") for t in tagged)
    statuses = sorted(part["Status"] for m in reports for part in m.walk() if part["Status"])
    assert statuses == ["5.1.1", "5.2.2", "5.7.1"]
    assert len(wait_for(lambda: list((postfix.delivered / "new").iterdir())) or []) == 1
    assert "slow@later.example.org" in postfix.queue()  # deferred, still trying

    site.cli("cron")  # the reader takes the three DSNs from the mailbox
    assert dovecot.messages() == [] and len(dovecot.messages("Processed")) == 3
    log = (site.data.log / "bounces.log").read_text()
    for address in ("dead@gone.example.org", "full@full.example.org",
                    "blocked@blocked.example.org"):
        assert address in log


def test_a_greylisted_recipient_is_refused_at_rcpt_and_the_others_are_taken(site, postfix, dovecot):
    import smtplib

    greylist(postfix, "grey@ok.example.org")
    with smtplib.SMTP("127.0.0.1", postfix.port, timeout=10) as client:
        client.ehlo(BOUNCE_DOMAIN)
        refused = client.sendmail(f"news@{BOUNCE_DOMAIN}", ["grey@ok.example.org",
                                                             "reader@ok.example.org"],
                                  b"Subject: hi\r\n\r\nbody\r\n")
    assert refused == {"grey@ok.example.org": (450, b"4.2.0 <grey@ok.example.org>: Recipient "
                                                    b"address rejected: Greylisted, try again "
                                                    b"later")}
