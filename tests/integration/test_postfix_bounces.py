"""Bounces that act, end to end: Vykhukhol's letters through a real Postfix
that accepts first and bounces later (tests/support/postfixkit.py), the
genuine DSNs read back from the Dovecot fixture's INBOX by real ``vykhukhol
cron`` runs (docs/design/run.md#run-failures, docs/deliverability/bounces.md#bounces).

Both transports the fixture allows: ``smtp`` to Postfix's listener, and
``sendmail`` through Postfix's own ``sendmail -C <its conf dir>``, wrapped in
a small script set as ``mail.sendmail_path`` (as a host's sendmail is).

What is shown, in one course of four letters:
- an address that does not exist is gone and suppressed after its first bounce;
- a full mailbox is deleted and suppressed after three of its letters bounced;
- five addresses refused for the sender's reasons (``5.7.1 … blocked``) are
  kept, counted nothing, and the admin is told;
- (smtp) a greylisted address, first in the queue, is deferred alone: the
  others of its run are handed over.
"""

from __future__ import annotations

import email
import os
from email import policy
from pathlib import Path

import pytest

from support.dovecotkit import dovecot_fixture, dovecot_server_fixture  # noqa: F401 - fixtures
from support.postfixkit import (  # noqa: F401 - fixtures
    BOUNCE_DOMAIN,
    greylist,
    postfix_fixture,
    postfix_server_fixture,
    wait_for,
)

LESSONS = [(f"Lesson {n}", "0s", f"Lesson {n}, {{{{ name }}}}.") for n in (1, 2, 3, 4)]
HOUR = 3600
ADMIN = "admin@ok.example.org"
DEAD, FULL, READER, GREY = ("dead@gone.example.org", "full@full.example.org",
                            "reader@ok.example.org", "grey@ok.example.org")
BLOCKED = [f"blocked{n}@blocked.example.org" for n in range(5)]


def sendmail_wrapper(folder: Path, conf: Path) -> Path:
    """Postfix's sendmail for the fixture's instance, as one program path."""
    script = folder / "sendmail"
    script.write_text(f'#!/bin/sh\nexec /usr/sbin/sendmail -C "{conf}" "$@"\n')
    script.chmod(0o755)
    return script


def relay_site(site, postfix, dovecot, transport: str, tmp_path: Path) -> None:
    site.set(mail__from_email=f"news@{BOUNCE_DOMAIN}", mail__bounce_mailbox=dovecot.url("imaps"),
             mail__bounce_cafile=str(dovecot.cafile), admin_email=ADMIN)
    if transport == "smtp":
        site.set(mail__transport="smtp", mail__smtp_host="127.0.0.1",
                 mail__smtp_port=postfix.port)
    else:
        site.set(mail__transport="sendmail",
                 mail__sendmail_path=str(sendmail_wrapper(tmp_path, postfix.config)))
    site.service("course", letters=LESSONS)
    site.service("digest", letters=LESSONS[:1])
    site.subscriber("digest", DEAD, sent=1, ago=3 * HOUR)  # a second list of the dead address
    # Longest waiting first: the greylisted one opens every run.
    for ago, address in enumerate([READER, FULL, *BLOCKED, DEAD, GREY], start=2):
        site.subscriber("course", address, ago=ago * HOUR)


def bounces_arrive(dovecot, postfix, count: int) -> None:
    assert wait_for(lambda: len(dovecot.messages()) >= count, 60), \
        (len(dovecot.messages()), postfix.log()[-3000:])


def admin_letters(postfix) -> list[email.message.EmailMessage]:
    folder = postfix.delivered / "new"
    found = [email.message_from_bytes(path.read_bytes(), policy=policy.default)
             for path in folder.iterdir()] if folder.exists() else []
    return [m for m in found if ADMIN in str(m["To"])]


@pytest.mark.parametrize("transport", ["smtp", "sendmail"])
def test_bounces_through_a_real_relay_act_by_their_reason(site, postfix, dovecot, transport,
                                                          tmp_path):
    if transport == "sendmail" and not os.access("/usr/sbin/sendmail", os.X_OK):
        pytest.skip("Postfix's sendmail is not installed")
    relay_site(site, postfix, dovecot, transport, tmp_path)
    if transport == "smtp":
        greylist(postfix, GREY)

    report = site.cli("cron").stdout  # lesson 1
    handed = 8 if transport == "smtp" else 9
    assert site.sent_counts(report) == {"course": handed}, report
    if transport == "smtp":  # deferred alone: the eight after it were handed over
        assert f"{GREY} deferred (450)" in (site.data.log / "run.log").read_text()
    bounces_arrive(dovecot, postfix, 7)  # dead, full, five blocked

    site.cli("cron")  # reads them; lesson 2 goes out
    course = site.subscribers("course")
    assert DEAD not in course and DEAD not in site.subscribers("digest")
    suppressed = (site.data.root / "suppressed.txt").read_text()
    assert any(line.startswith(f"{DEAD}\t") and "\taddress gone\t" in line
               for line in suppressed.splitlines())
    assert course[FULL].failures == 1
    assert all(course[b].failures == 0 for b in BLOCKED)
    told = wait_for(lambda: admin_letters(postfix), 30)
    assert told and told[0]["Subject"] == "mail servers refuse the sender", postfix.log()[-2000:]
    body = told[0].get_body(("plain",)).get_content()
    assert "blocked" in body and "Почтовые серверы отказали в приёме писем одного запуска: 5" in body

    bounces_arrive(dovecot, postfix, 6)  # full, five blocked
    site.cli("cron")  # reads them; lesson 3 goes out
    assert site.subscribers("course")[FULL].failures == 2
    bounces_arrive(dovecot, postfix, 6)
    site.cli("cron")
    course = site.subscribers("course")
    assert FULL not in course and f"{FULL}\t" in (site.data.root / "suppressed.txt").read_text()
    assert all(b in course and course[b].failures == 0 for b in BLOCKED)
    assert course[READER].sent == 4 or course[READER].sent == 3
    assert BLOCKED[0] not in (site.data.root / "suppressed.txt").read_text()
    log = (site.data.log / "bounces.log").read_text()
    assert "address gone: userunknown" in log and "soft: mailboxfull" in log
    assert "sender refused: blocked" in log
