"""Many connections, pipelined, to a relay (docs/reference/transports.md#transports-pipelining): the pipelined
envelope of RFC 2920 against aiosmtpd offering PIPELINING, and runs with
``mail.smtp_connections`` above 1 — every letter once, quotas and caps exact,
a refusal or a dropped connection costing no other letter."""

from __future__ import annotations

import re
import time

import pytest

from vykhukhol import mail, newsletters
from vykhukhol.mail.smtp import SmtpTransport

DROP = "drop"  # tests/support/smtpkit.py: hang up instead of answering DATA

HOUR = 3600
ADMIN = "admin@example.org"
LESSON = [("Lesson 1", "0s", "Hello {{ name }}.")]


def letter(to: str) -> object:
    return mail.build_message(from_name="News", from_email="news@example.org", to_email=to,
                              subject="Hello", text="Hi.\n", run_id="lanes-test")


def news(site, server, count: int, connections: int = 4, **settings) -> tuple[str, list[str]]:
    """A newsletter to ``count`` readers, sent over ``connections`` pipelining connections."""
    server.handler.pipelining = True
    server.handler.data_delay = 0.01  # letters overlap across connections
    site.use_smtp(server.port)
    site.set(mail__smtp_connections=connections, **settings)
    site.service("news", enabled=False)
    readers = [f"r{i:03}@example.org" for i in range(count)]
    for email in readers:
        site.subscriber("news", email, ago=HOUR)
    return newsletters.create(site.data, ["news"], "Big news", "Hello {{ name }}."), readers


def received(server) -> list[str]:
    """The recipients of the letters the server took (the admin's left out)."""
    return [rcpt for got in server.handler.received for rcpt in got.rcpt_tos
            if rcpt != ADMIN]


def admin_subjects(server) -> list[str]:
    return [got.message["Subject"] for got in server.handler.received if ADMIN in got.rcpt_tos]


# --- the pipelined envelope ---------------------------------------------------

def test_the_envelope_is_pipelined_when_the_server_offers_it(smtp_server):
    """PIPELINING in the EHLO reply: MAIL, RCPT and DATA go together, letters arrive whole."""
    smtp_server.handler.pipelining = True
    with SmtpTransport(smtp_server.config()) as transport:
        for i in range(3):
            transport.send(letter(f"p{i}@example.org"), f"p{i}@example.org")
        assert transport.pipelining
    assert received(smtp_server) == [f"p{i}@example.org" for i in range(3)]
    assert smtp_server.handler.connections == 1


def test_a_signature_that_fails_after_the_envelope_sends_nothing_unsigned(smtp_server):
    """A helper signs while the envelope goes (SignedLater); when it fails
    instead, the open DATA is dropped without its final dot: nothing arrives,
    and the failure is DKIM's (the run stops; no letter leaves unsigned)."""
    from vykhukhol.mail.dkim import DkimKeyError

    asked = []

    class Failing:
        def submit(self, data):
            def collect():
                asked.append(time.monotonic())
                raise DkimKeyError("the DKIM signing process has ended (exit code -9)")
            return collect

    smtp_server.handler.pipelining = True
    with SmtpTransport(smtp_server.config(dkim_domain="example.org",
                                          dkim_selector="sel")) as transport:
        transport.use_signer(Failing())
        with pytest.raises(mail.TemporaryFailure, match="signing process has ended") as failed:
            transport.send(letter("p@example.org"), "p@example.org")
    assert failed.value.stage == "dkim" and len(asked) == 1
    assert smtp_server.handler.received == []


def test_without_pipelining_offered_the_commands_go_one_by_one(smtp_server):
    with SmtpTransport(smtp_server.config()) as transport:
        transport.send(letter("a@example.org"), "a@example.org")
        assert not transport.pipelining
    assert received(smtp_server) == ["a@example.org"]


@pytest.mark.parametrize("pipelining", [True, False])
def test_a_550_to_a_pipelined_rcpt_fails_that_letter_and_sends_no_payload(smtp_server, pipelining):
    """RCPT refused: DATA is refused too (503), the letter fails for good, the next one goes."""
    smtp_server.handler.pipelining = pipelining
    smtp_server.handler.rcpt_responses["gone@example.org"] = "550 no such user"
    with SmtpTransport(smtp_server.config()) as transport:
        with pytest.raises(mail.PermanentFailure) as failed:
            transport.send(letter("gone@example.org"), "gone@example.org")
        assert (failed.value.code, failed.value.stage) == (550, "rcpt")
        transport.send(letter("here@example.org"), "here@example.org")
        assert transport.pipelining is pipelining
    assert received(smtp_server) == ["here@example.org"]


@pytest.mark.parametrize(("stage", "reply", "code"), [
    ("rcpt", "451 greylisted", 451), ("mail", "421 too busy", 421)])
def test_a_4xx_in_a_pipelined_envelope_is_temporary(smtp_server, stage, reply, code):
    smtp_server.handler.pipelining = True
    if stage == "rcpt":
        smtp_server.handler.rcpt_responses["later@example.org"] = reply
    else:
        smtp_server.handler.mail_responses["news@example.org"] = reply
    with SmtpTransport(smtp_server.config()) as transport:
        with pytest.raises(mail.TemporaryFailure) as failed:
            transport.send(letter("later@example.org"), "later@example.org")
        smtp_server.handler.mail_responses.clear()  # the server is itself again
        transport.send(letter("next@example.org"), "next@example.org")
        assert transport.pipelining
    assert (failed.value.code, failed.value.stage) == (code, stage)
    assert received(smtp_server) == ["next@example.org"]


# --- several connections --------------------------------------------------------

def test_several_connections_deliver_every_letter_once_within_the_quota(site, smtp_server):
    """news_per_run 25 of 40 readers, 4 connections: exactly 25, then exactly the 15 others."""
    job, readers = news(site, smtp_server, 40, news_per_run=25)
    site.run_at()
    assert len(received(smtp_server)) == 25, admin_subjects(smtp_server)
    assert 1 < smtp_server.handler.connections <= 4
    site.run_at()
    site.run_at()
    assert sorted(received(smtp_server)) == readers
    assert not site.data.job(job, "job").exists()


def test_several_connections_keep_the_series_quota_exactly(site, smtp_server):
    smtp_server.handler.pipelining = True
    site.use_smtp(smtp_server.port)
    site.set(mail__smtp_connections=4, serial_per_run=7)
    site.service("course", letters=LESSON)
    for i in range(20):
        site.subscriber("course", f"s{i:02}@example.org", ago=HOUR)
    smtp_server.handler.data_delay = 0.01
    site.run_at()
    assert len(received(smtp_server)) == 7
    assert smtp_server.handler.connections > 2
    assert sum(s.sent for s in site.subscribers("course").values()) == 7


def test_several_connections_keep_the_hourly_cap_exactly(site, smtp_server):
    news(site, smtp_server, 30, news_per_run=100, hourly_limit=9)
    site.run_at()
    site.run_at()
    assert len(received(smtp_server)) == 9
    assert smtp_server.handler.connections > 2


def test_a_refused_rcpt_on_one_connection_loses_no_other_letter(site, smtp_server):
    job, readers = news(site, smtp_server, 20, news_per_run=100)
    smtp_server.handler.rcpt_responses["r007@example.org"] = "550 no such user"
    site.run_at()
    assert smtp_server.handler.connections > 2
    assert sorted(received(smtp_server)) == [r for r in readers if r != "r007@example.org"]
    rows = {row.email: row.state.value for row in newsletters.read_rows(site.data.job(job, "list"))} \
        if site.data.job(job, "list").exists() else {}
    assert rows.get("r007@example.org", "failed") == "failed"


def test_a_connection_dropped_mid_data_leaves_one_letter_in_doubt_and_loses_none(site, smtp_server):
    """The server hangs up after one letter's text: that letter is in doubt (never
    sent again), every other letter arrives exactly once over later runs."""
    job, readers = news(site, smtp_server, 20, news_per_run=100)
    smtp_server.handler.data_responses["r005@example.org"] = DROP
    site.run_at()
    assert smtp_server.handler.connections > 2
    del smtp_server.handler.data_responses["r005@example.org"]
    for _ in range(3):
        site.run_at()
    got = received(smtp_server)
    assert sorted(got) == [r for r in readers if r != "r005@example.org"]
    assert len(got) == len(set(got))
    doubt = re.findall(r"the answer for (\S+) was lost", site.log())
    assert doubt == ["r005@example.org"]
    assert not site.data.job(job, "job").exists()


def test_several_connections_start_no_letter_after_time_limit(site, smtp_server):
    """A slow server and 4 connections: the run stops starting letters in time
    and ends within time_limit (no letter waits past its share)."""
    job, readers = news(site, smtp_server, 200, news_per_run=1000, time_limit="5s")
    smtp_server.handler.data_delay = 0.25
    began = time.monotonic()
    report = site.run_at()
    took = time.monotonic() - began
    sent = len(received(smtp_server))
    assert smtp_server.handler.connections == 4
    assert "time" in report.splitlines()[-1]
    assert took < 5 * 0.8, report
    # half of time_limit for starting letters, 4 at a time, 0.25 s each at best
    assert 0 < sent <= 4 * (5 * 0.5 / 0.25) + 4
    site.set(time_limit="600s", news_per_run=1000)
    smtp_server.handler.data_delay = 0.0
    site.run_at()
    got = received(smtp_server)
    assert sorted(got) == readers and len(got) == len(set(got))


def test_letters_over_several_connections_are_signed_and_redirected_as_over_one(
        site, smtp_server, monkeypatch):
    """DKIM and dev_redirect happen in Transport.send, which every lane calls: each
    letter over 4 connections verifies, and goes to the redirect address only.
    The signatures are made by the helper process."""
    import dkim

    from vykhukhol.mail import signing

    signed_there = []
    submit = signing.SigningProcess.submit
    monkeypatch.setattr(signing.SigningProcess, "submit",
                        lambda self, data: signed_there.append(data) or submit(self, data))

    out = site.ok("dkim", "keygen", "--domain", "example.org", "--selector", "vykhukhol")
    [line] = [x for x in out.splitlines() if "._domainkey." in x]
    name, rest = line.split(" IN TXT ")
    records = {name.encode(): "".join(re.findall(r'"([^"]*)"', rest)).encode()}
    job, readers = news(site, smtp_server, 12, news_per_run=100,
                        mail__dev_redirect="tester@example.net")
    site.run_at()
    assert smtp_server.handler.connections > 2
    got = smtp_server.handler.received  # the admin's report is redirected too
    assert {r for g in got for r in g.rcpt_tos} == {"tester@example.net"}
    assert sorted(g.message["X-Vykhukhol-Original-To"] for g in got
                  if g.message["X-Vykhukhol-Original-To"] != ADMIN) == readers
    for letter_got in got:
        assert dkim.verify(letter_got.data, dnsfunc=lambda n, timeout=5: records.get(n))
    assert len(signed_there) == len(got)


def test_a_pipelined_refusal_followed_by_a_hang_up_keeps_the_refusals_code(smtp_server):
    """421 to RCPT and the line closed before DATA's answer: the letter is a
    temporary failure with the server's 421, not a lost connection."""
    handler = smtp_server.handler
    handler.pipelining = True

    async def refuse_and_hang_up(server, session, envelope, address, rcpt_options):
        await server.push("421 4.3.2 shutting down")
        server.transport.close()
        return "421 4.3.2 shutting down"  # never reaches the client

    handler.handle_RCPT = refuse_and_hang_up
    with SmtpTransport(smtp_server.config()) as transport:
        with pytest.raises(mail.TemporaryFailure) as failed:
            transport.send(letter("x@example.org"), "x@example.org")
    assert (failed.value.code, failed.value.stage) == (421, "rcpt")
    assert received(smtp_server) == []
