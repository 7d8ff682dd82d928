"""The sender against a real SMTP server (aiosmtpd on 127.0.0.1): temporary
failures lose nothing and are retried exactly once, permanent refusals mark
rows failed or count towards deleting a subscriber
(docs/design/run.md#run-failures)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from vykhukhol import newsletters
from vykhukhol.timeutil import now

ADMIN = "admin@example.org"
HOUR = 3600
DAY = 86400
BOB = "bob@example.org"   # waits longest: the first letter of a run
AMY = "amy@example.org"
LESSON = [("Lesson 1", "0s", "Hello {{ name }}.")]
# Temporary failures of the *server*: the run's sending stops. (A 451 to RCPT
# defers that recipient alone: the deferral tests below.)
TEMPORARY = [("rcpt", "421 closing, try later"),
             ("data", "421 closing, try later"), ("data", "451 local error, try later")]
PERMANENT = [("rcpt", "550 5.1.1 no such user"), ("data", "554 5.7.1 rejected as spam")]


# --- helpers ------------------------------------------------------------------



def delivered(server, to: str | None = None) -> list:
    """Letters the server accepted for subscribers (not for the admin)."""
    return [r.message for r in server.handler.received
            if ADMIN not in r.rcpt_tos and (to is None or to in r.rcpt_tos)]


def admin_reports(server) -> list:
    """Newsletter completion reports the server accepted for the admin."""
    return [r.message for r in server.handler.received
            if ADMIN in r.rcpt_tos and r.message["Subject"].startswith("Выпуск завершён")]


def answer(server, stage: str, email: str, reply: str) -> None:
    getattr(server.handler, f"{stage}_responses")[email] = reply


def heal(server) -> None:
    server.handler.rcpt_responses.clear()
    server.handler.data_responses.clear()


def ledger(site, job: str) -> dict[str, str]:
    return {row.email: row.state.value for row in newsletters.read_rows(site.data.job(job, "list"))}


def series_site(site, server) -> None:
    site.use_smtp(server.port)
    site.service("course", letters=LESSON)
    site.subscriber("course", BOB, name="Bob", ago=2 * HOUR)
    site.subscriber("course", AMY, name="Amy", ago=HOUR)


def news_site(site, server) -> str:
    site.use_smtp(server.port)
    site.service("news", enabled=False)
    site.subscriber("news", BOB, name="Bob", ago=2 * HOUR)
    site.subscriber("news", AMY, name="Amy", ago=HOUR)
    return newsletters.create(site.data, ["news"], "Big news", "Hello {{ name }}.")


# --- temporary failures --------------------------------------------------------------

@pytest.mark.parametrize(("stage", "reply"), TEMPORARY)
def test_a_temporary_refusal_of_a_series_letter_loses_nothing_and_is_sent_once_later(
        site, smtp_server, stage, reply):
    """421/451 at RCPT or DATA: sending stops, progress is unchanged, the next run sends each letter exactly once."""
    series_site(site, smtp_server)
    before = site.subscribers("course")
    answer(smtp_server, stage, BOB, reply)

    report = site.run_at()
    assert delivered(smtp_server) == []
    assert site.subscribers("course") == before
    assert "temporary failure" in report.splitlines()[-1]
    assert re.search(rf"temporary failure for {BOB} \({reply[:3]}\)", site.log())

    heal(smtp_server)
    site.run_at()
    site.run_at()
    assert len(delivered(smtp_server, BOB)) == 1
    assert len(delivered(smtp_server, AMY)) == 1
    assert {s.sent for s in site.subscribers("course").values()} == {1}


@pytest.mark.parametrize(("stage", "reply"), TEMPORARY)
def test_a_temporary_refusal_of_a_newsletter_letter_leaves_its_row_pending(
        site, smtp_server, stage, reply):
    """421/451 at RCPT or DATA: the ledger row stays pending; the next run sends it exactly once."""
    job = news_site(site, smtp_server)
    answer(smtp_server, stage, BOB, reply)

    site.run_at()
    assert delivered(smtp_server) == []
    assert ledger(site, job) == {BOB: "pending", AMY: "pending"}

    heal(smtp_server)
    site.run_at()
    site.run_at()
    assert len(delivered(smtp_server, BOB)) == 1
    assert len(delivered(smtp_server, AMY)) == 1
    assert not site.data.job(job, "job").exists()


def test_a_recipient_deferred_at_rcpt_waits_alone_with_a_growing_pause(site, smtp_server):
    """451 to RCPT: that recipient is deferred (15 min, then 1 h, …); the run goes on
    with the others, and runs inside the pause do not ask the server for it again."""
    series_site(site, smtp_server)
    answer(smtp_server, "rcpt", BOB, "451 greylisted, try later")
    start = now()

    report = site.run_at(start)
    assert len(delivered(smtp_server, AMY)) == 1  # the run went on
    assert "temporary failure" not in report.splitlines()[-1]
    assert re.search(rf"{BOB} deferred \(451\).*tried again in 15m", site.log())
    site.run_at(start + timedelta(minutes=5))  # inside the pause: not tried
    assert site.log().count(f"{BOB} deferred") == 1
    site.run_at(start + timedelta(minutes=16))  # tried again, greylisted again: 1 h now
    assert re.search(rf"{BOB} deferred \(451\).*tried again in 1h", site.log())
    site.run_at(start + timedelta(minutes=50))
    assert site.log().count(f"{BOB} deferred") == 2

    heal(smtp_server)
    site.run_at(start + timedelta(minutes=80))
    site.run_at(start + timedelta(minutes=90))
    assert len(delivered(smtp_server, BOB)) == 1 and len(delivered(smtp_server, AMY)) == 1
    assert {s.sent for s in site.subscribers("course").values()} == {1}
    assert BOB not in site.data.state.joinpath("tempfail").read_text()


def test_a_newsletter_recipient_deferred_at_rcpt_does_not_hold_back_the_others(site, smtp_server):
    """451 to RCPT in a newsletter: the others of the run are sent, the row stays
    pending, and it is sent once after its pause."""
    job = news_site(site, smtp_server)
    answer(smtp_server, "rcpt", BOB, "451 greylisted, try later")
    start = now()

    site.run_at(start)
    assert ledger(site, job) == {BOB: "pending", AMY: "sent"}
    heal(smtp_server)
    site.run_at(start + timedelta(minutes=5))
    assert delivered(smtp_server, BOB) == []  # still inside its pause
    site.run_at(start + timedelta(minutes=20))
    assert len(delivered(smtp_server, BOB)) == 1 and len(delivered(smtp_server, AMY)) == 1
    assert not site.data.job(job, "job").exists()


def test_a_refused_connection_loses_nothing_and_the_next_run_sends_once(site, smtp_server,
                                                                         closed_port):
    """With the SMTP server unreachable nothing moves; once it answers, every letter goes exactly once."""
    series_site(site, smtp_server)
    job = newsletters.create(site.data, ["course"], "Big news", "text")
    before = site.subscribers("course")
    site.use_smtp(closed_port)

    report = site.run_at()
    assert "temporary failure" in report.splitlines()[-1]
    assert site.subscribers("course") == before
    assert ledger(site, job) == {BOB: "pending", AMY: "pending"}
    assert "Connection refused" in site.log()

    site.use_smtp(smtp_server.port)
    site.run_at()
    site.run_at()
    subjects = sorted(m["Subject"] for m in delivered(smtp_server))
    assert subjects == ["Big news", "Big news", "Lesson 1", "Lesson 1"]
    assert {s.sent for s in site.subscribers("course").values()} == {1}


def test_a_letter_failing_temporarily_for_three_days_becomes_failed(site, smtp_server):
    """A newsletter row that keeps failing temporarily for 3d becomes failed, so the job ends."""
    job = news_site(site, smtp_server)
    answer(smtp_server, "rcpt", BOB, "451 try later")
    start = now()

    site.run_at(start)
    site.run_at(start + timedelta(days=1))
    assert ledger(site, job)[BOB] == "pending"
    site.run_at(start + timedelta(seconds=3 * DAY + 60))
    assert not site.data.job(job, "job").exists()
    assert [m["To"].addresses[0].addr_spec for m in delivered(smtp_server)] == [AMY]
    [report] = admin_reports(smtp_server)
    assert BOB in report.get_body(("plain",)).get_content()


def test_a_letter_that_goes_after_a_temporary_failure_starts_its_three_days_afresh(
        site, smtp_server):
    """Once a letter that failed temporarily is sent, its first failure is forgotten,
    so the same row failing again much later is not given up at once."""
    job = news_site(site, smtp_server)
    answer(smtp_server, "rcpt", BOB, "451 try later")
    start = now()
    site.run_at(start)
    assert any(BOB in key for key in site.data.state.joinpath("tempfail").read_text().split())

    heal(smtp_server)
    site.run_at(start + timedelta(hours=1))
    assert len(delivered(smtp_server, BOB)) == 1
    assert BOB not in site.data.state.joinpath("tempfail").read_text()
    assert not site.data.job(job, "job").exists()


# --- permanent refusals -----------------------------------------------------------------

@pytest.mark.parametrize(("stage", "reply"), PERMANENT)
def test_a_permanent_refusal_fails_one_newsletter_row_and_is_listed_in_the_report(
        site, smtp_server, stage, reply):
    """5xx at RCPT or DATA: the row becomes failed, the others are sent in the same run, the Russian report lists it."""
    job = news_site(site, smtp_server)
    answer(smtp_server, stage, BOB, reply)

    site.run_at()
    assert len(delivered(smtp_server, AMY)) == 1
    assert delivered(smtp_server, BOB) == []
    assert not site.data.job(job, "job").exists()
    [report] = admin_reports(smtp_server)
    text = report.get_body(("plain",)).get_content()
    assert "Не принято сервером при передаче: 1" in text and "Передано почтовому серверу писем: 1" in text
    assert "Адреса, отвергнутые при передаче или вернувшиеся с отказом:" in text and BOB in text
    assert re.search(rf"{BOB} refused \({reply[:3]}\)", site.log())


def test_a_failed_newsletter_row_is_written_in_the_ledger(site, smtp_server):
    """550 at RCPT: the ledger row reads failed while the job is still going; the refused letter counts in the run's quota."""
    job = news_site(site, smtp_server)
    site.set(news_per_run=1)
    answer(smtp_server, "rcpt", BOB, "550 no such user")

    site.run_at()
    assert ledger(site, job) == {BOB: "failed", AMY: "pending"}
    site.run_at()
    assert len(delivered(smtp_server, AMY)) == 1


@pytest.mark.parametrize(("stage", "reply"), PERMANENT + [("rcpt", "550 User unknown")])
def test_a_refusal_at_hand_over_acts_by_its_reason(site, smtp_server, stage, reply):
    """What a failure counts for, at SMTP time: 550 "no such user" is an
    address gone (deleted and suppressed at once); 554 "rejected as spam" is the
    sender refused (never counted on the subscriber). "User unknown" without a code
    is believed as the answer to RCPT TO. The run goes on either way."""
    series_site(site, smtp_server)
    answer(smtp_server, stage, BOB, reply)
    start = now()

    site.run_at(start)
    assert len(delivered(smtp_server, AMY)) == 1  # the run goes on after a permanent refusal
    if reply.startswith("550"):
        assert BOB not in site.subscribers("course")
        assert re.search(rf"{BOB} deleted: address gone", site.log())
        assert BOB in site.data.root.joinpath("suppressed.txt").read_text()
        return
    for minutes in (5, 10, 15):
        site.run_at(start + timedelta(minutes=minutes))
    bob = site.subscribers("course")[BOB]
    assert (bob.failures, bob.sent) == (0, 0)
    assert site.log().count(f"{BOB} refused (554)") == 4 and "sender refused" in site.log()
    assert not site.data.root.joinpath("suppressed.txt").exists()
    assert delivered(smtp_server, BOB) == []


def test_soft_refusals_of_different_letters_delete_at_bounce_limit(site, smtp_server):
    """552 "mailbox full" is soft: each refused letter counts once, a hand-over in
    between resets nothing, and at bounce_limit the subscriber is deleted from every
    service and suppressed."""
    site.use_smtp(smtp_server.port)
    site.service("course", letters=LESSON + [("Lesson 2", "0s", "two"), ("Lesson 3", "0s", "3")])
    site.subscriber("course", BOB, ago=HOUR)
    site.service("other", letters=LESSON)
    site.subscriber("other", BOB, sent=1, ago=HOUR)
    site.set(bounce_limit=2)
    answer(smtp_server, "rcpt", BOB, "552 5.2.2 mailbox full")
    start = now()

    site.run_at(start)
    assert site.subscribers("course")[BOB].failures == 1
    assert "mailboxfull" in site.log()
    heal(smtp_server)
    site.run_at(start + timedelta(minutes=5))  # handed over: the count stays
    bob = site.subscribers("course")[BOB]
    assert (bob.sent, bob.failures) == (1, 1)
    answer(smtp_server, "rcpt", BOB, "552 5.2.2 mailbox full")
    site.run_at(start + timedelta(minutes=10))  # a different letter: the second, the limit
    assert BOB not in site.subscribers("course")
    assert BOB not in site.subscribers("other")
    assert "\tsoft bounces\t" in site.data.root.joinpath("suppressed.txt").read_text()


def test_a_soft_count_is_set_back_only_by_bounce_reset(site, smtp_server):
    """No soft failure for bounce_reset sets the count back to 0 at the next hand-over."""
    site.use_smtp(smtp_server.port)
    site.service("course", letters=LESSON + [("Lesson 2", "0s", "two"), ("Lesson 3", "0s", "3")])
    site.subscriber("course", BOB)
    site.set(bounce_reset="2h")
    answer(smtp_server, "rcpt", BOB, "552 5.2.2 mailbox full")
    start = now()
    site.run_at(start)
    assert site.subscribers("course")[BOB].failures == 1
    heal(smtp_server)
    site.run_at(start + timedelta(minutes=30))
    assert (site.subscribers("course")[BOB].sent, site.subscribers("course")[BOB].failures) == (1, 1)
    site.run_at(start + timedelta(hours=3))
    assert (site.subscribers("course")[BOB].sent, site.subscribers("course")[BOB].failures) == (2, 0)


def test_a_count_from_before_the_reasons_is_set_back_by_a_hand_over(site, smtp_server):
    """A failure count written before soft failures were recorded (no record of
    when) is set back by a hand-over, as it was then: files written before keep working."""
    site.use_smtp(smtp_server.port)
    site.service("course", letters=LESSON + [("Lesson 2", "0s", "two")])
    site.subscriber("course", BOB, failures=2)

    site.run_at()
    bob = site.subscribers("course")[BOB]
    assert (bob.sent, bob.failures) == (1, 0)
    assert len(delivered(smtp_server, BOB)) == 1


# --- the connection ------------------------------------------------------------------------

def test_a_run_reuses_one_smtp_connection_for_all_its_letters(site, smtp_server):
    """One connection per run, however many letters."""
    series_site(site, smtp_server)
    site.subscriber("course", "carl@example.org")
    site.run_at()
    assert len(delivered(smtp_server)) == 3
    assert smtp_server.handler.connections == 1


def test_a_letter_passed_over_after_its_mail_went_ahead_is_called_off_and_not_sent(
        site, smtp_server):
    """The next letter's MAIL FROM leaves as a letter is answered; when that
    letter is then passed over (here: its address suppressed), RSET calls the
    MAIL off before the letter after it: nothing reaches the passed-over
    address, the others arrive, one connection."""
    from vykhukhol.members import suppression

    series_site(site, smtp_server)
    carl = "carl@example.org"
    site.subscriber("course", carl, ago=30 * 60)  # due last: Bob, Amy, Carl
    suppression.add_many(site.data, site.settings().secret, [AMY], suppression.Why.ADMIN,
                         "test", now())
    site.run_at()
    assert {m["To"].addresses[0].addr_spec for m in delivered(smtp_server)} == {BOB, carl}
    verbs = [c.split()[0] for c in smtp_server.handler.commands]
    assert verbs == ["MAIL", "MAIL", "RSET", "MAIL", "QUIT"]  # Bob's, Amy's (called off), Carl's
    assert smtp_server.handler.connections == 1
    assert f"{AMY} is on the suppression list; letter 1 skipped" in site.log()


def test_every_letter_through_smtp_carries_the_lease_of_its_run(site, smtp_server):
    """X-Vykhukhol-Run equals the lease in the report's first line, over SMTP too."""
    series_site(site, smtp_server)
    report = site.run_at()
    lease = report.splitlines()[0].split()[1]
    assert {m["X-Vykhukhol-Run"] for m in delivered(smtp_server)} == {lease}
    assert all(m["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
               for m in delivered(smtp_server))


def test_alerts_reach_the_admin_through_smtp(fresh_site, smtp_server):
    """Alerts go through the configured transport."""
    fresh_site.use_smtp(smtp_server.port)
    fresh_site.run_at()
    [alert] = smtp_server.handler.received
    assert alert.rcpt_tos == [ADMIN]
    assert alert.message["Subject"] == "Script is off"


# --- refused for the sender's reasons ----------------------------------------------------

@pytest.mark.parametrize("language", ["ru", "en"])
def test_refusals_for_the_senders_reasons_past_five_percent_alert_the_admin_once(
        site, smtp_server, language):
    """5 of 20 letters refused "blocked" (more than 5 %, at least 5): nobody is
    counted, and the admin gets one alert naming the reason and what to check."""
    site.use_smtp(smtp_server.port)
    site.set(admin_email=ADMIN, language=language)
    site.service("course", letters=LESSON)
    people = [f"p{i:02}@example.org" for i in range(20)]
    for address in people:
        site.subscriber("course", address, ago=HOUR)
    for address in people[:5]:
        answer(smtp_server, "rcpt", address,
               "554 5.7.1 Service unavailable; client host [127.0.0.1] blocked using "
               "zen.spamhaus.org")

    site.run_at()
    assert all(s.failures == 0 for s in site.subscribers("course").values())
    alerts = [r.message for r in smtp_server.handler.received if ADMIN in r.rcpt_tos]
    assert [m["Subject"] for m in alerts] == ["mail servers refuse the sender"]
    body = alerts[0].get_body(("plain",)).get_content()
    assert "blocked ×5" in body and "5" in body and "20" in body
    if language == "ru":
        assert "Почтовые серверы отказали" in body and "чёрный список" in body
    else:
        assert "Mail servers refused 5 of the 20 letters" in body and "block list" in body
    site.run_at()  # nothing new: no second alert
    assert len([r for r in smtp_server.handler.received if ADMIN in r.rcpt_tos]) == 1


def test_a_few_refusals_for_the_senders_reasons_alert_nobody(site, smtp_server):
    """4 refusals are under the line (at least 5): logged, no alert."""
    site.use_smtp(smtp_server.port)
    site.set(admin_email=ADMIN)
    site.service("course", letters=LESSON)
    for i in range(6):
        site.subscriber("course", f"p{i}@example.org", ago=HOUR)
        if i < 4:
            answer(smtp_server, "rcpt", f"p{i}@example.org", "550 5.7.1 blocked using a DNSBL")
    site.run_at()
    assert not [r for r in smtp_server.handler.received if ADMIN in r.rcpt_tos]
    assert site.log().count(" refused (550)") == 4 and "sender refused: blocked" in site.log()
