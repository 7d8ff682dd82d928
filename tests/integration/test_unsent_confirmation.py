"""A confirmation the subscribe page could not send (the mail server was down
after the answer) is sent by the next cron run, not a reminder period later
(docs/design/run.md#unsent-confirmations). Real SMTP: a refused port, then aiosmtpd on loopback."""

from __future__ import annotations

from datetime import timedelta

from vykhukhol import sender
from vykhukhol.members import membership, unsent
from vykhukhol.sender import idle
from vykhukhol.timeutil import now


def test_a_confirmation_that_could_not_go_is_sent_by_the_next_run(site, closed_port, smtp_server) -> None:
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])
    site.use_smtp(closed_port)  # the mail server is down while the page answers
    outcome = membership.subscribe(site.data, site.settings(), "news", "late@example.org")
    assert outcome == "added"
    assert (site.data.state / unsent.UNSENT).exists()
    assert idle.tick(str(site.data.root)) is None  # a waiting confirmation is work

    site.use_smtp(smtp_server.port)  # back up for the next cron run
    soon = sender.run(site.data, site.settings())  # within a minute: left to the page
    assert not [r for r in smtp_server.handler.received], soon.text()
    later = now() + timedelta(minutes=2)
    report = sender.run(site.data, site.settings(), now=lambda: later)
    letters = [r for r in smtp_server.handler.received if r.rcpt_tos == ["late@example.org"]]
    assert len(letters) == 1, report.text()
    assert b"confirm" in letters[0].data.lower()
    assert not (site.data.state / unsent.UNSENT).exists()
    assert site.subscribers("news")["late@example.org"].reminders == 0  # not a reminder used up

    sender.run(site.data, site.settings(), now=lambda: later)  # sent once, not again
    assert len([r for r in smtp_server.handler.received if r.rcpt_tos == ["late@example.org"]]) == 1


def test_a_confirmation_still_failing_waits_for_the_run_after(site, closed_port, smtp_server) -> None:
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])
    site.use_smtp(closed_port)
    membership.subscribe(site.data, site.settings(), "news", "a@example.org")
    membership.subscribe(site.data, site.settings(), "news", "b@example.org")
    later = now() + timedelta(minutes=2)
    sender.run(site.data, site.settings(), now=lambda: later)  # still down: both wait
    assert unsent.take_unsent(site.data, later) == [unsent.Waiting("news", "a@example.org"),
                                                   unsent.Waiting("news", "b@example.org")]
    for address in ("a@example.org", "b@example.org"):
        unsent.note_unsent(site.data, "news", address, later - timedelta(minutes=2))
    membership.confirm(site.data, site.settings(), "news", "a@example.org")  # by the first letter
    site.use_smtp(smtp_server.port)
    sender.run(site.data, site.settings(), now=lambda: later)
    assert [r.rcpt_tos for r in smtp_server.handler.received] == [["b@example.org"]]


def test_a_confirmation_that_went_leaves_no_note(site, smtp_server) -> None:
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])
    site.use_smtp(smtp_server.port)
    membership.subscribe(site.data, site.settings(), "news", "quick@example.org")
    assert len(smtp_server.handler.received) == 1
    assert not (site.data.state / unsent.UNSENT).exists()
