"""A recipient refused at hand-over follows the same doubt rule as a bounce
report (docs/design/bounces.md#bounces-doubt), against a real SMTP server
(aiosmtpd on 127.0.0.1): an address read as gone with doubt stays, counted
soft, and leaves at the second different letter refused so (recorded in
removed.txt, restorable); one read as gone for sure leaves at once."""

from __future__ import annotations

from datetime import timedelta

from vykhukhol import newsletters
from vykhukhol.timeutil import now

BOB = "bob@example.org"
AMY = "amy@example.org"
HOUR = 3600
LESSONS = [("Lesson 1", "0s", "one"), ("Lesson 2", "0s", "two"), ("Lesson 3", "0s", "three")]
# The enhanced code says only "failed" (5.0.0); the code that would say
# "no such mailbox" is the server's words, not its status: gone, in doubt.
DOUBTFUL = "550 5.0.0 #5.1.1 bad address"
SURE = "550 5.1.1 <bob@example.org>: Recipient address rejected: User unknown"


def refuse(server, email: str, reply: str) -> None:
    server.handler.rcpt_responses[email] = reply


def delivered(server, to: str) -> list:
    return [r.message for r in server.handler.received if to in r.rcpt_tos]


def course(site, server) -> None:
    site.use_smtp(server.port)
    site.service("course", letters=LESSONS)
    site.service("other", letters=LESSONS[:1])
    site.subscriber("course", BOB, ago=2 * HOUR)
    site.subscriber("course", AMY, ago=HOUR)
    site.subscriber("other", BOB, sent=1, ago=HOUR)
    site.set(bounce_limit=10)  # the soft count alone deletes nobody here


def removed_lines(site) -> list[str]:
    path = site.data.root / "removed.txt"
    return [line for line in path.read_text(encoding="utf-8").splitlines()
            if BOB in line] if path.exists() else []


def test_an_address_refused_in_doubt_stays_until_a_second_letter_is_refused_so(
        site, smtp_server):
    course(site, smtp_server)
    refuse(smtp_server, BOB, DOUBTFUL)
    start = now()

    site.run_at(start)
    assert len(delivered(smtp_server, AMY)) == 1  # the run goes on
    bob = site.subscribers("course")[BOB]
    assert (bob.sent, bob.failures) == (0, 1)  # stays, counted soft meanwhile
    assert BOB in site.subscribers("other")
    assert "(doubtful)" in site.log()
    assert not (site.data.root / "suppressed.txt").exists()

    site.run_at(start + timedelta(minutes=5))  # the same letter, retried, refused again
    assert BOB in site.subscribers("course")

    smtp_server.handler.rcpt_responses.clear()
    site.run_at(start + timedelta(minutes=10))  # lesson 1 goes: the next letter is another
    assert site.subscribers("course")[BOB].sent == 1
    refuse(smtp_server, BOB, DOUBTFUL)
    site.run_at(start + timedelta(minutes=15))  # lesson 2 refused so: the second letter

    assert BOB not in site.subscribers("course")
    assert BOB not in site.subscribers("other")
    assert "\taddress gone\t" in (site.data.root / "suppressed.txt").read_text()
    assert "2 different letters failed with the address read as gone (doubtful)" in site.log()
    kept = removed_lines(site)
    assert kept and all("read as gone (doubtful)" in line for line in kept)
    site.ok("removed", "restore", BOB)  # recorded, so it can come back
    assert BOB in site.subscribers("course")


def test_an_address_refused_for_sure_leaves_at_the_first_letter(site, smtp_server):
    course(site, smtp_server)
    refuse(smtp_server, BOB, SURE)

    site.run_at(now())
    assert BOB not in site.subscribers("course")
    assert BOB not in site.subscribers("other")
    assert "\taddress gone\t" in (site.data.root / "suppressed.txt").read_text()
    assert removed_lines(site)
    assert f"{BOB} deleted: address gone (refused at hand-over)" in site.log()


def test_a_newsletter_refused_in_doubt_leaves_at_the_second_newsletter(site, smtp_server):
    site.use_smtp(smtp_server.port)
    site.set(bounce_limit=10)
    site.service("news", enabled=False)
    site.subscriber("news", BOB, ago=2 * HOUR)
    site.subscriber("news", AMY, ago=HOUR)
    refuse(smtp_server, BOB, DOUBTFUL)
    start = now()

    newsletters.create(site.data, ["news"], "First", "one")
    site.run_at(start)
    assert BOB in site.subscribers("news")
    newsletters.create(site.data, ["news"], "Second", "two")
    site.run_at(start + timedelta(minutes=5))
    assert BOB not in site.subscribers("news")
    assert "read as gone (doubtful)" in site.log()
