"""The owner sees why a refusal was read as it was
(docs/design/bounces.md#refusal-reasons).

Real reports are piped into ``vykhukhol bounce`` (a real subprocess) for the
letters the site sent; bounces.log and the admin's Bounces page (headless
Chromium) then show, for each refusal, its cause, the rule that decided it
(status code, reply code with the text, the text alone, the provider's own
words), the server's words, and mark a doubtful reading — in English and in
Russian.
"""

from __future__ import annotations

from typing import Any

from support.adminkit import outbox_letters

GONE, FULL, SAID = "gone@example.com", "full@example.com", "phrase@example.com"


def report(failed: str, sender: str, status: str, diagnostic: str,
           prose: str = "Your message could not be delivered.") -> str:
    """An RFC 3464 report as a relay writes it, to the letter's tagged sender."""
    return (f"From: MAILER-DAEMON@mx.example.net\nTo: {sender}\nDelivered-To: {sender}\n"
            "Subject: Undelivered Mail Returned to Sender\nMIME-Version: 1.0\n"
            'Content-Type: multipart/report; report-type=delivery-status; boundary="b"\n\n'
            f"--b\nContent-Type: text/plain\n\n{prose}\n\n"
            "--b\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.example.net\n\n"
            f"Final-Recipient: rfc822; {failed}\nAction: failed\nStatus: {status}\n"
            f"Diagnostic-Code: {diagnostic}\n\n--b--\n")


def sender_of(site: Any, address: str) -> str:
    [letter] = outbox_letters(site, address)
    return str(letter["Return-Path"]).strip("<>")


def pipe_three_refusals(site: Any) -> None:
    site.set(mail__from_email="list@example.org")
    site.service("course", letters=[("Lesson 1", "0s", "Hello."), ("Lesson 2", "30d", "Again.")])
    for address in (GONE, FULL, SAID):
        site.subscriber("course", address, "Someone")
    site.cli("cron")
    # a sure "gone": the status code says it
    site.cli("bounce", input=report(GONE, sender_of(site, GONE), "5.1.1",
                                    f"smtp; 550 5.1.1 <{GONE}>: Recipient address rejected: "
                                    "User unknown in virtual mailbox table"))
    # the DSN says 5.1.1, the report's words say the mailbox is full: soft, doubtful
    site.cli("bounce", input=report(FULL, sender_of(site, FULL), "5.1.1",
                                    f"smtp; 550 5.1.1 <{FULL}>... User Unknown",
                                    prose="Not enough disk space"))
    # the text alone says why (no reply code, no specific status code): doubtful
    site.cli("bounce", input=report(SAID, sender_of(site, SAID), "5.0.0",
                                    "X-Notes; mailbox is full"))


def test_bounces_log_names_the_cause_the_rule_and_the_servers_words(site):
    pipe_three_refusals(site)
    lines = {parts[4]: parts[6] for parts in (
        line.split("\t") for line in (site.data.log / "bounces.log").read_text().splitlines())}
    assert lines[GONE].startswith("address gone: userunknown 5.1.1 550; rule: status 5.1.1 (sure); "
                                  f"server said: 550 5.1.1 <{GONE}>: Recipient address")
    assert lines[GONE].endswith(f"; permanent failure reported for {GONE} (5.1.1)")
    assert lines[FULL].startswith("soft: userunknown 5.1.1 550; rule: status 5.1.1 (doubtful); ")
    assert lines[SAID].startswith("soft: mailboxfull 5.0.0; rule: phrase mailbox is full "
                                  "(doubtful); server said: mailbox is full")
    # the page marks by the rule's piece, never by what the server's words say
    from vykhukhol.web.admin.bounces import _doubtful

    assert _doubtful(lines[FULL]) and _doubtful(lines[SAID]) and not _doubtful(lines[GONE])
    assert not _doubtful(lines[GONE].replace("table;", "table (doubtful);"))
    # the gone address is deleted at once; the doubtful ones count as soft and stay
    assert GONE not in site.subscribers("course")
    assert FULL in site.subscribers("course") and SAID in site.subscribers("course")


def test_the_bounces_page_shows_why_and_marks_a_doubtful_reading_in_both_languages(
        site, server, browser):
    pipe_three_refusals(site)
    b = browser
    b.log_in()
    b.open("/admin/bounces")
    rows = {r.text.split()[2]: r for r in b.all("#bounces tr")[1:]}
    gone, full, said = (rows[a].text for a in (GONE, FULL, SAID))
    assert "address gone: userunknown 5.1.1 550" in gone
    assert "decided by status code: 5.1.1 — sure" in gone
    assert f"the server said: 550 5.1.1 <{GONE}>: Recipient address rejected" in gone
    assert "Doubtful:" not in gone
    assert "decided by status code: 5.1.1 — doubtful" in full and "Doubtful:" in full
    assert "decided by the text alone: mailbox is full — doubtful" in said
    assert len(b.all("#bounces td.doubtful")) == 2
    b.screenshot("bounces-why-en")
    site.set(language="ru")
    b.open("/admin/bounces")
    text = b.text("#bounces")
    for words in ("адреса больше нет: userunknown 5.1.1 550", "решено по коду состояния: 5.1.1 — уверенно",
                  "решено по одному тексту: mailbox is full — сомнительно", "Сомнительно:",
                  f"ответ сервера: 550 5.1.1 <{GONE}>"):
        assert words in text, text
    b.screenshot("bounces-why-ru")
