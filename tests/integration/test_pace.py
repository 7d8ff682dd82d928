"""The host's pace, learned (docs/deliverability/reputation.md#pace): a real SMTP
server (aiosmtpd on 127.0.0.1) that says "too many" after k letters stops
the run; the next runs, on a moved clock, send at most half as fast, and
the pace rises by a tenth each clean hour up to the cap."""

from __future__ import annotations

import html
from datetime import datetime, timedelta

import pytest

from support.servetools import call, environ, log_in
from vykhukhol import newsletters
from vykhukhol.datadir import DataDir
from vykhukhol.timeutil import format_time, now
from vykhukhol.watch import pace
from vykhukhol.web import admin as admin_mod

ADMIN = "admin@example.org"
T0 = (now() + timedelta(minutes=2)).replace(second=5, microsecond=0)  # after the job starts


@pytest.fixture(autouse=True)
def _fresh_t0():
    """T0 from each test's own start: a module constant made at collection is
    already past the job's start when the whole suite reaches this file."""
    global T0
    T0 = (now() + timedelta(minutes=2)).replace(second=5, microsecond=0)
TOO_MANY = "421 4.7.0 Too many messages"


def minutes(m: float) -> datetime:
    return T0 + timedelta(minutes=m)


def too_many_after(server, k: int, reply: str = TOO_MANY, stage: str = "mail") -> None:
    """The server accepts k letters, then answers ``reply`` to every MAIL (or RCPT)."""
    handler = server.handler
    accepted = handler.received
    original = getattr(handler, f"handle_{stage.upper()}")

    async def refusing(srv, session, envelope, address, options):
        if handler.refusing and sum(ADMIN not in r.rcpt_tos for r in accepted) >= k:
            return reply
        return await original(srv, session, envelope, address, options)
    handler.refusing = True
    setattr(handler, f"handle_{stage.upper()}", refusing)


def heal(server) -> None:
    server.handler.refusing = False


def news(site, server, count: int) -> str:
    site.use_smtp(server.port)
    site.set(news_per_run=1000)
    site.service("news", enabled=False)
    for n in range(count):
        site.subscriber("news", f"r{n:03d}@example.org", ago=3600 + n)
    return newsletters.create(site.data, ["news"], "Big news", "Hello.")


def handed(site, moment: datetime) -> int:
    return sum(site.sent_counts(site.run_at(moment)).values())


def test_too_many_halves_the_pace_and_it_rises_a_tenth_each_clean_hour(site, smtp_server):
    """421 4.7.0 after 10 letters: the run stops with the letter kept; from then on
    at most 5 an hour, then 5.5, 6.05, 6.66, 7.32 (whole letters: 5, 6, 6, 7)."""
    job = news(site, smtp_server, 60)
    too_many_after(smtp_server, 10)

    report = site.run_at(T0)
    assert site.sent_counts(report) == {job: 10}
    assert report.rstrip().endswith("temporary failure")
    assert "the server says too many (421)" in site.log()
    assert "from now on at most 5 an hour" in site.log()
    [learned] = pace.learned(DataDir(site.data.root))
    assert (learned.server, learned.pace, learned.said, learned.seen) == ("127.0.0.1", 5.0, T0, 10)

    heal(smtp_server)  # the server would take more now: the site holds itself back
    runs = {m: handed(site, minutes(m)) for m in (1, 30, 59, 61, 62, 100, 122, 183, 244, 245)}
    assert runs == {1: 0, 30: 0, 59: 0, 61: 5, 62: 0, 100: 0, 122: 6, 183: 6, 244: 7, 245: 0}
    assert "hourly or daily limit reached" in site.run_at(minutes(246))
    # Half as fast: in no hour after the refusal more than half the 10 of the hour before it.
    times = sorted(m for m, n in runs.items() for _ in range(n))
    assert max(sum(1 for t in times if s <= t < s + 60) for s in times) <= 7
    assert sum(runs.values()) == 24 and len(delivered(smtp_server)) == 34


def test_without_hourly_limit_the_pace_rises_to_what_the_hour_before_had(site, smtp_server):
    """The ceiling without hourly_limit is the 10 letters of the hour before the
    refusal; with hourly_limit the pace rises to it and then lets it alone count."""
    news(site, smtp_server, 100)
    too_many_after(smtp_server, 10)
    site.run_at(T0)
    heal(smtp_server)
    assert handed(site, minutes(60 * 30)) == 10          # 5 × 1.1^30 = 87, held at 10
    site.set(hourly_limit=40)
    assert handed(site, minutes(60 * 40)) == 40          # risen past 40: only the cap counts
    [learned] = pace.learned(DataDir(site.data.root))
    assert not learned.binds(minutes(60 * 40), 40) and learned.binds(minutes(61), 40)


def test_a_rate_at_rcpt_stops_the_run_and_a_mailbox_rate_defers_only_its_recipient(
        site, smtp_server):
    """450 4.7.1 "too many recipients" (Postfix) to RCPT is the server's: the run
    stops and learns; Gmail's 450 4.2.1 "receiving mail at a rate" is one mailbox's:
    that recipient waits, the others go on, nothing is learned."""
    news(site, smtp_server, 12)
    smtp_server.handler.rcpt_responses["r011@example.org"] = (
        "450 4.2.1 The user you are trying to contact is receiving mail at a rate that "
        "prevents additional messages from being delivered")
    assert handed(site, T0) == 11
    assert "r011@example.org deferred (450)" in site.log()
    assert pace.learned(DataDir(site.data.root)) == []

    smtp_server.handler.rcpt_responses.clear()
    job2 = newsletters.create(site.data, ["news"], "More news", "Hello again.")
    too_many_after(smtp_server, 14, "450 4.7.1 Error: too many recipients from [127.0.0.1]",
                   stage="rcpt")
    report = site.run_at(minutes(1))
    assert site.sent_counts(report) == {job2: 3}
    assert report.rstrip().endswith("temporary failure")
    [learned] = pace.learned(DataDir(site.data.root))
    # 12 tried in the hour before (the deferred one too: the server saw it), 3 in this run
    assert (learned.seen, learned.pace) == (15, 7.5)


def test_a_rate_in_a_language_we_do_not_know_is_a_plain_4xx(site, smtp_server):
    """'Слишком много писем' is not read: the run stops as for any 421 and learns nothing."""
    news(site, smtp_server, 12)
    too_many_after(smtp_server, 4, "421 4.7.0 Слишком много писем, попробуйте позже")
    report = site.run_at(T0)
    assert site.sent_counts(report) == {next(iter(site.sent_counts(report))): 4}
    assert "temporary failure for" in site.log() and "too many" not in site.log()
    assert pace.learned(DataDir(site.data.root)) == []
    heal(smtp_server)
    assert handed(site, minutes(1)) == 8  # no pace: the rest at once


def test_a_cpanel_max_per_hour_550_keeps_the_letter_for_a_later_run(site, smtp_server):
    """cPanel's 550 "has exceeded the max emails per hour" is a rate, not the
    recipient's refusal: the letter stays pending, and the pace is learned."""
    job = news(site, smtp_server, 8)
    too_many_after(smtp_server, 6, "550 Domain example.org has exceeded the max emails per "
                                   "hour (6/6 (100%)) allowed.  Message discarded.",
                   stage="rcpt")
    site.run_at(T0)
    rows = {r.email: r.state.value for r in newsletters.read_rows(site.data.job(job, "list"))}
    assert list(rows.values()).count("pending") == 2 and "failed" not in rows.values()
    assert [p.pace for p in pace.learned(DataDir(site.data.root))] == [3.0]


@pytest.mark.parametrize(("lang", "said"), [
    ("en", ["Sending pace", "127.0.0.1: at most 5 letters an hour, a tenth more each clean hour "
            "up to 10.", "The server last said “too many” at"]),
    ("ru", ["Темп отправки", "127.0.0.1: не больше 5 писем в час, с каждым спокойным часом на "
            "десятую больше, до 10.", "Последний раз сервер ответил «слишком много»"])])
def test_status_shows_the_learned_pace_and_when_the_server_said_so(site, smtp_server, lang, said):
    """`vykhukhol status` and the admin's Status page, in the page's language."""
    news(site, smtp_server, 12)
    site.set(language=lang)
    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, _ = log_in(app)
    page = lambda: html.unescape(call(app, environ(  # noqa: E731
        "GET", "/", "", b"", "", "missing", script="/admin", HTTP_COOKIE=cookie))[2])
    assert said[0] not in page()  # nothing learned, nothing shown
    too_many_after(smtp_server, 10)
    site.run_at(T0)
    shown = page()
    for text in said:
        assert text in shown
    assert f"pace 127.0.0.1: at most 5 letters an hour, a tenth more each clean hour up to 10 " \
           f"(the server last said too many at {format_time(T0)})" in site.ok("status")


def delivered(server) -> list:
    return [r for r in server.handler.received if ADMIN not in r.rcpt_tos]


def test_a_pace_line_damaged_by_hand_is_no_pace_and_no_traceback(site, smtp_server):
    """data/state/pace edited into nonsense: the run sends, Status says nothing of it."""
    news(site, smtp_server, 3)
    (site.data.state).mkdir(parents=True, exist_ok=True)
    (site.data.state / "pace").write_text("127.0.0.1\tfast 2026-13-45 x\n127.0.0.1|sent\tx=y =3\n")
    assert handed(site, T0) == 3
    assert "pace " not in site.ok("status")


def test_sendmail_saying_rate_overlimit_teaches_the_pace_of_sendmail(site, tmp_path):
    """The sendmail transport: a program that exits 75 saying "rate overlimit"
    after 4 letters; the pace is kept under the transport's name."""
    kept = tmp_path / "kept"
    kept.mkdir()
    program = tmp_path / "sendmail"
    program.write_text(f"""#!/bin/sh
n=$(ls "{kept}" | wc -l)
if [ "$n" -ge 4 ]; then echo "451 Sender rate overlimit - 4.0 / 1h / strict" >&2; exit 75; fi
cat > "{kept}/$n.eml"
""")
    program.chmod(0o700)
    news(site, type("NoServer", (), {"port": 25})(), 8)
    site.set(mail__transport="sendmail", mail__sendmail_path=str(program))
    assert handed(site, T0) == 4
    assert [(p.server, p.pace) for p in pace.learned(DataDir(site.data.root))] == [("sendmail", 2.0)]
    assert handed(site, minutes(1)) == 0 and len(list(kept.iterdir())) == 4
