"""Bounces read back: real letters out through aiosmtpd, real bounce reports
(flufl.bounce's corpus, RFC 5965's example) into a real Dovecot, read by a
real ``vykhukhol cron`` over imaps and pop3s, or piped into ``vykhukhol bounce``.

Each test opens with the behaviour it pins. The bounce for a letter is the
corpus message with the failed recipient replaced by the subscriber's
address and a ``Delivered-To:`` of the letter's tagged envelope sender put
on top, as the local delivery agent of the bounce mailbox does.
"""

from __future__ import annotations

import socket
import threading
import time

from support.bouncekit import ARF, DATA, LESSON, dsn, pipe, pipe_site, tagged_sender
from support.dovecotkit import dovecot_fixture, dovecot_server_fixture  # noqa: F401 - fixtures
from vykhukhol import newsletters
from vykhukhol import returntag as tags

DEAD, ALIVE, OTHER = "dead@example.com", "alive@example.com", "other@example.com"
HOUR = 3600

# corpus file → the address it reports as failed
PERMANENT = {"flufl-postfix_01.txt": "xxxxx@local.ie", "flufl-dsn_01.txt": "userx@example.com",
             "flufl-qmail_01.txt": "userx@example.de", "flufl-exim_01.txt": "userx@its.example.nl",
             "flufl-yahoo_01.txt": "userx@example.com", "flufl-microsoft_01.txt": "userx@example.com",
             "flufl-newmailru_01.txt": "zzzzz@newmail.ru"}
TEMPORARY = {"flufl-dsn_05.txt": "userx@example.cz", "flufl-simple_03.txt": "userx@example.za"}


def bounce(corpus: str, failed: str, sender: str) -> bytes:
    """A real bounce report, retargeted at one of our letters."""
    raw = (DATA / corpus).read_bytes()
    old = (PERMANENT | TEMPORARY).get(corpus)
    if old:
        raw = raw.replace(old.encode(), failed.encode())
    return f"Delivered-To: {sender}\n".encode() + raw


def suppressed(site) -> str:
    path = site.data.root / "suppressed.txt"
    return path.read_text() if path.exists() else ""


def letter_to(server, address: str, subject: str = "Lesson 1"):
    found = [r for r in server.handler.received
             if address in r.rcpt_tos and r.message["Subject"] == subject]
    assert found, f"no letter {subject!r} reached {address}"
    return found[-1]


def course_site(site, smtp_server, dovecot, scheme: str = "imaps", **extra) -> None:
    site.use_smtp(smtp_server.port)
    site.set(mail__bounce_mailbox=dovecot.url(scheme), mail__bounce_cafile=str(dovecot.cafile),
             **extra)
    site.service("course", letters=LESSON)
    for address in (DEAD, ALIVE):
        site.subscriber("course", address, ago=2 * HOUR)


def bounce_log(site) -> list[list[str]]:
    path = site.data.log / "bounces.log"
    return [line.split("\t") for line in path.read_text().splitlines()] if path.exists() else []


def snapshot(site) -> dict[str, bytes]:
    root = site.data.root
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and p.parts[-2] not in ("log", "state") and not p.name.endswith(".lock")
            and "bounces" not in p.relative_to(root).parts}


# --- the mailbox ------------------------------------------------------------------

def test_an_address_gone_is_deleted_everywhere_and_suppressed_at_its_first_bounce(
        site, smtp_server, dovecot):
    """A report that the address does not exist (5.1.1) deletes it from every
    service at once and suppresses it; a second report about it changes nothing."""
    course_site(site, smtp_server, dovecot)
    site.service("news", enabled=False)
    site.subscriber("news", DEAD, ago=2 * HOUR)
    site.cli("cron")
    sender = tagged_sender(site, letter_to(smtp_server, DEAD), "s", "course", DEAD)

    dovecot.deliver(bounce("flufl-postfix_01.txt", DEAD, sender))
    site.cli("cron")
    assert DEAD not in site.subscribers("course") and DEAD not in site.subscribers("news")
    assert site.subscribers("course")[ALIVE].failures == 0
    assert f"{DEAD}\t" in suppressed(site) and "address gone" in suppressed(site)
    assert dovecot.messages() == [] and len(dovecot.messages("Processed")) == 1

    dovecot.deliver(bounce("flufl-dsn_01.txt", DEAD, sender))
    site.cli("cron")
    assert suppressed(site).count(DEAD) == 1
    lines = bounce_log(site)
    assert [line[2] for line in lines] == ["permanent"] * 2
    assert all(line[3] == "service course" and line[4] == DEAD and line[5] == "imap"
               for line in lines[:1])
    assert lines[0][6].startswith("address gone: userunknown")


def test_soft_bounces_of_three_different_letters_delete_and_suppress_each_counted_once(
        site, smtp_server, dovecot):
    """A full mailbox is soft: counted once per different letter (a second
    report about the same letter counts nothing), never reset by a hand-over; at
    bounce_limit (3) deleted and suppressed."""
    course_site(site, smtp_server, dovecot)
    site.cli("cron")  # lesson 1 handed over to both
    sender = tagged_sender(site, letter_to(smtp_server, DEAD), "s", "course", DEAD)

    dovecot.deliver(dsn(DEAD, sender, "<one@example.org>"))
    site.cli("cron")
    assert site.subscribers("course")[DEAD].failures == 1
    dovecot.deliver(dsn(DEAD, sender, "<one@example.org>", mta="mx2.example.net"))  # the same letter
    site.cli("cron")
    assert site.subscribers("course")[DEAD].failures == 1
    assert len(dovecot.messages("Processed")) == 2

    dovecot.deliver(dsn(DEAD, sender, "<two@example.org>"))
    site.cli("cron")
    assert site.subscribers("course")[DEAD].failures == 2
    assert DEAD not in suppressed(site)
    dovecot.deliver(dsn(DEAD, sender, "<three@example.org>"))
    site.cli("cron")
    assert DEAD not in site.subscribers("course") and ALIVE in site.subscribers("course")
    assert "soft bounces" in suppressed(site)
    lines = bounce_log(site)
    assert sorted(line[2] for line in lines) == ["deleted"] + ["permanent"] * 4
    assert all(line[6].startswith("soft: mailboxfull") for line in lines if line[2] == "permanent")


def test_a_bounce_for_the_senders_reasons_counts_nothing_on_the_subscriber(
        site, smtp_server, dovecot):
    """5.7.1 "blocked" is about our host: nobody is counted or suppressed."""
    course_site(site, smtp_server, dovecot)
    site.cli("cron")
    sender = tagged_sender(site, letter_to(smtp_server, DEAD), "s", "course", DEAD)
    for n in range(4):
        dovecot.deliver(dsn(DEAD, sender, f"<b{n}@example.org>", "5.7.1",
                            "smtp; 554 5.7.1 Service unavailable; client host [192.0.2.1] "
                            "blocked using zen.spamhaus.org"))
    site.cli("cron")
    assert site.subscribers("course")[DEAD].failures == 0
    assert suppressed(site) == ""
    assert all(line[6].startswith("sender refused: blocked") for line in bounce_log(site))


def test_a_permanent_bounce_over_pop3s_fails_the_newsletter_row_and_counts_in_its_service(
        site, smtp_server, dovecot):
    course_site(site, smtp_server, dovecot, "pop3s", news_per_run=1)
    site.subscriber("course", OTHER, ago=2 * HOUR)
    site.service("news", enabled=False)
    for address in (DEAD, ALIVE, OTHER):
        site.subscriber("news", address, ago=2 * HOUR)
    job = newsletters.create(site.data, ["news"], "Big news", "Hello.")
    site.set(serial_per_run=1)
    site.cli("cron")  # one newsletter letter: the first row, DEAD
    sender = tagged_sender(site, letter_to(smtp_server, DEAD, "Big news"), "n", job, DEAD)

    dovecot.deliver(f"Subject: hello\nTo: {sender}\n\n{'x' * 5000}\n".encode())  # a long line
    dovecot.deliver(bounce("flufl-exim_01.txt", DEAD, sender))
    site.cli("cron")
    rows = {row.email: row.state.value for row in newsletters.read_rows(site.data.job(job, "list"))}
    assert rows[DEAD] == "failed"
    assert DEAD not in site.subscribers("news") and DEAD not in site.subscribers("course")
    assert DEAD in suppressed(site)  # exim's "unknown user": gone, from every service
    assert dovecot.messages() == []  # deleted by POP3 after it was applied
    assert [line[2] for line in bounce_log(site)] == ["kept", "permanent"]
    assert bounce_log(site)[-1][2:6] == ["permanent", f"newsletter {job}", DEAD, "pop3"]


def test_a_newsletter_bounce_that_comes_after_its_job_finished_still_counts(site, smtp_server, dovecot):
    course_site(site, smtp_server, dovecot)
    site.service("news", enabled=False)
    site.subscriber("news", DEAD, ago=2 * HOUR)
    job = newsletters.create(site.data, ["news"], "Big news", "Hello.")
    site.cli("cron")
    assert not site.data.job(job, "job").exists()  # finished and deleted
    sender = tagged_sender(site, letter_to(smtp_server, DEAD, "Big news"), "n", job, DEAD)
    dovecot.deliver(bounce("flufl-yahoo_01.txt", DEAD, sender))
    site.cli("cron")
    assert site.subscribers("news")[DEAD].failures == 1


POSTFIX = {"postfix-unknown-local-user.eml": ("nosuchuser@vykhukhol.test",
                                              "news+s1qfsreoaf34d675vzkoshne7k@vykhukhol.test"),
           "postfix-remote-550.eml": ("gone@example.org",
                                      "news+s1pvwmaju5vppwanhr32osocox@vykhukhol.test")}


def postfix_bounce(name: str, failed: str, sender: str) -> bytes:
    """A DSN Postfix made (tests/data/bounces/README.md), retargeted: its own
    Delivered-To and X-Original-To now name our letter's tagged sender."""
    old_failed, old_sender = POSTFIX[name]
    return (DATA / name).read_bytes().replace(old_sender.encode(), sender.encode()) \
        .replace(old_failed.encode(), failed.encode())


def test_genuine_postfix_dsns_count_over_imaps(site, smtp_server, dovecot):
    course_site(site, smtp_server, dovecot)
    site.cli("cron")
    sender = tagged_sender(site, letter_to(smtp_server, DEAD), "s", "course", DEAD)
    for name in POSTFIX:
        dovecot.deliver(postfix_bounce(name, DEAD, sender))
    site.cli("cron")
    assert DEAD not in site.subscribers("course") and DEAD in suppressed(site)
    assert [line[6][-7:] for line in bounce_log(site)] == ["(5.1.1)", "(5.1.1)"]


def test_temporary_failures_and_auto_replies_are_noted_and_change_nothing(site, smtp_server, dovecot):
    course_site(site, smtp_server, dovecot)
    site.cli("cron")
    sender = tagged_sender(site, letter_to(smtp_server, DEAD), "s", "course", DEAD)
    before = snapshot(site)
    dovecot.deliver(bounce("flufl-dsn_05.txt", DEAD, sender))
    dovecot.deliver(bounce("flufl-simple_03.txt", DEAD, sender))
    dovecot.deliver(bounce("flufl-qmail_08.txt", DEAD, sender))
    site.cli("cron")
    assert snapshot(site) == before
    assert sorted(line[2] for line in bounce_log(site)) == ["auto-reply", "temporary", "temporary"]
    assert len(dovecot.messages("Processed")) == 3


def test_a_dead_or_silent_mailbox_costs_a_log_line_and_the_letters_still_go(site, smtp_server, dovecot):
    course_site(site, smtp_server, dovecot)
    site.set(time_limit="8s")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(5)  # accepts, never answers
    try:
        port = silent.getsockname()[1]
        site.set(mail__bounce_mailbox=f"imaps://u:p@127.0.0.1:{port}/INBOX")
        started = time.monotonic()
        result = site.cli("cron")
        assert time.monotonic() - started < 8
    finally:
        silent.close()
    assert "Traceback" not in result.stdout + result.stderr
    assert {DEAD, ALIVE} <= {r for m in smtp_server.handler.received for r in m.rcpt_tos}
    assert "did not answer in time" in bounce_log(site)[-1][6]
    site.set(mail__bounce_mailbox=dovecot.url("imaps").replace("mailbox-secret-1", "wrong"))
    site.cli("cron")
    assert bounce_log(site)[-1][2] == "problem" and "mailbox-secret-1" not in (
        site.data.log / "bounces.log").read_text()


def test_a_certificate_nobody_vouches_for_is_refused(site, smtp_server, dovecot):
    course_site(site, smtp_server, dovecot)
    site.set(mail__bounce_cafile="")  # the system's CAs do not know the test's certificate
    site.cli("cron")
    sender = tagged_sender(site, letter_to(smtp_server, DEAD), "s", "course", DEAD)
    dovecot.deliver(bounce("flufl-postfix_01.txt", DEAD, sender))
    site.cli("cron")
    assert site.subscribers("course")[DEAD].failures == 0
    assert "certificate" in bounce_log(site)[-1][6]
    assert len(dovecot.messages()) == 1


def test_a_batch_of_bounces_is_read_and_each_one_counted(site, smtp_server, dovecot):
    course_site(site, smtp_server, dovecot, "imap")
    many = [f"user{i}@example.net" for i in range(30)]
    for address in many:  # lesson 1 received a minute ago: a letter now would reset the count
        site.subscriber("course", address, ago=2 * HOUR, sent=1, last_sent_ago=60, failures=1)
    settings = site.settings()
    for address in many:
        sender = tags.bounce_address(settings["mail.from_email"], "+",
                                     tags.make(settings.secret, "s", "course", address))
        dovecot.deliver(bounce("flufl-dsn_01.txt", address, sender))
    site.cli("cron")
    subscribers = site.subscribers("course")
    assert all(subscribers[address].failures == 2 for address in many)


# --- the pipe ---------------------------------------------------------------------


DOUBTFUL = dict(status="5.0.0", diagnostic="x-unix; no mailbox here by that name")


def test_an_address_read_as_gone_with_doubt_leaves_at_its_second_letter_and_can_come_back(site):
    """A report that reads the address as gone, but with doubt (a phrase, no
    code that says so), keeps it; the same for a second, different letter
    deletes and suppresses it, as gone, and removed.txt and bounces.log say
    why; the same letter reported again counts once; a sure report deletes at
    once; ``removed restore`` brings the address back."""
    pipe_site(site)
    site.subscriber("course", DEAD)
    site.subscriber("course", ALIVE)
    sender = tagged_sender(site, None, "s", "course", DEAD)
    pipe(site, dsn(DEAD, sender, "<one@example.org>", **DOUBTFUL))
    assert DEAD in site.subscribers("course") and DEAD not in suppressed(site)
    assert "(doubtful)" in bounce_log(site)[-1][6]
    pipe(site, dsn(DEAD, sender, "<one@example.org>", mta="mx2.example.net", **DOUBTFUL))
    assert DEAD in site.subscribers("course") and DEAD not in suppressed(site)

    pipe(site, dsn(DEAD, sender, "<two@example.org>", **DOUBTFUL))
    assert DEAD not in site.subscribers("course") and ALIVE in site.subscribers("course")
    assert f"{DEAD}\t" in suppressed(site) and "address gone" in suppressed(site)
    removed = (site.data.root / "removed.txt").read_text()
    assert DEAD in removed and "read as gone (doubtful)" in removed
    deleted = [line for line in bounce_log(site) if line[2] == "deleted"]
    assert len(deleted) == 1 and deleted[0][4] == DEAD and "(doubtful)" in deleted[0][6]

    site.ok("removed", "restore", DEAD)
    assert DEAD in site.subscribers("course") and DEAD not in suppressed(site)
    pipe(site, dsn(DEAD, sender, "<three@example.org>", **DOUBTFUL))
    assert DEAD in site.subscribers("course")  # restored: its doubt starts again

    pipe(site, dsn(DEAD, sender, "<four@example.org>", status="5.1.1",
                   diagnostic="smtp; 550 5.1.1 <{failed}>: user unknown"))
    assert DEAD not in site.subscribers("course") and "address gone" in suppressed(site)


def test_a_spam_complaint_unsubscribes_at_once(site):
    pipe_site(site)
    site.subscriber("course", DEAD)
    sender = tagged_sender(site, None, "s", "course", DEAD)
    complaint = ARF.replace(b"<somespammer@example.net>", f"<{sender}>".encode()).replace(
        b"user@example.com", DEAD.encode())
    pipe(site, complaint)
    assert DEAD not in site.subscribers("course")
    assert bounce_log(site)[-1][2:6] == ["complaint", "service course", DEAD, "pipe"]


def test_a_mail_with_subject_unsubscribe_to_the_tagged_address_unsubscribes(site):
    pipe_site(site)
    site.subscriber("course", DEAD)
    site.subscriber("course", ALIVE)
    sender = tagged_sender(site, None, "s", "course", DEAD)
    pipe(site, f"From: {DEAD}\nTo: {sender}\nSubject: unsubscribe\n\n".encode())
    assert DEAD not in site.subscribers("course") and ALIVE in site.subscribers("course")


def test_a_kept_message_is_stored_for_the_admin_and_acts_on_nothing(site):
    pipe_site(site)
    site.subscriber("course", DEAD)
    sender = tagged_sender(site, None, "s", "course", DEAD)
    before = snapshot(site)
    pipe(site, f"From: {DEAD}\nTo: {sender}\nSubject: thanks!\n\nLovely lesson.\n".encode())
    assert snapshot(site) == before
    kept = list((site.data.root / "bounces" / "kept").glob("*.eml"))
    assert len(kept) == 1 and b"Lovely lesson." in kept[0].read_bytes()
    assert bounce_log(site)[-1][2] == "kept"


def test_a_report_naming_no_address_that_can_be_read_is_logged_and_shown_as_such(site):
    # sendmail marks its reports Auto-Submitted; this one's only failed address is an
    # encoded word (no address a list holds): a report kept for the admin, not an auto-reply.
    pipe_site(site)
    site.subscriber("course", DEAD)
    sender = tagged_sender(site, None, "s", "course", DEAD)
    report = dsn("=?utf-8?B?8J+QiA==?=@example.org", sender, "<lesson-1@example.com>",
                 status="5.1.1", diagnostic="smtp; 550 5.1.1 User unknown")
    before = snapshot(site)
    pipe(site, report.replace(b"MIME-Version", b"Auto-Submitted: auto-generated (failure)\n"
                                               b"MIME-Version", 1))
    assert snapshot(site) == before
    line = bounce_log(site)[-1]
    assert line[2] == "kept"
    assert "a delivery report with no failed address that could be read" in line[-1]
    assert list((site.data.root / "bounces" / "kept").glob("*.eml"))
    status, page = admin_get(site, "/bounces")
    assert status == 200 and "a delivery report with no failed address that could be read" in page
    status, page = admin_get(site, "/bounces", "ru")
    assert "отчёт о недоставке, в котором не удалось прочесть ни одного недоставленного адреса" \
        in page


def test_a_report_naming_an_address_no_list_can_hold_is_read_and_changes_nothing(site):
    """An address at .invalid (or .test, .local) is never on a list, but a report
    of its failure is a report: it is read for its address and reason (not
    noted as a report naming nobody), and, carrying no tag of ours, kept for
    the admin; nothing else changes."""
    pipe_site(site)
    site.subscriber("course", DEAD)
    before = snapshot(site)
    pipe(site, dsn("luser@otherhost.invalid", "list@example.org", "<lesson-1@example.com>",
                   status="5.1.1", diagnostic="smtp; 550 5.1.1 <{failed}> is not a valid mailbox"))
    assert snapshot(site) == before
    line = bounce_log(site)[-1]
    assert line[2] == "kept", line
    assert "permanent failure reported for luser@otherhost.invalid" in line[-1], line
    assert "no failed address that could be read" not in line[-1]


def test_two_readers_at_once_count_each_message_once(site):
    """The pipe and a second pipe deliver the same message together (a mail server retrying)."""
    pipe_site(site)
    site.subscriber("course", DEAD)
    sender = tagged_sender(site, None, "s", "course", DEAD)
    raw = dsn(DEAD, sender, "<once@example.org>")  # soft: a count shows a double
    threads = [threading.Thread(target=pipe, args=(site, raw)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert site.subscribers("course")[DEAD].failures == 1
    assert [line[2] for line in bounce_log(site)].count("permanent") == 1


def test_status_warns_while_letters_leave_and_nothing_reads_their_bounces(site, smtp_server, dovecot):
    site.use_smtp(smtp_server.port)
    assert "Nothing reads the bounces" in site.ok("status")
    site.set(mail__bounce_mailbox=dovecot.url("imaps"))
    assert "Nothing reads the bounces" not in site.ok("status")
    assert dovecot.url("imaps") not in site.ok("settings", "get", "mail.bounce_mailbox")
    site.set(mail__bounce_mailbox="")
    pipe(site, b"Subject: hello\n\nnot a bounce\n")
    assert "Nothing reads the bounces" not in site.ok("status")


# --- the admin --------------------------------------------------------------------

def admin_get(site, path: str, language: str = "en") -> tuple[int, str]:
    from support.servetools import call, environ, log_in
    from vykhukhol.web.admin import app

    site.set(language=language)
    wsgi = app(site.data, site.cgi_dir)
    cookie, _ = log_in(wsgi)
    status, _, page, _ = call(wsgi, environ("GET", path, "", b"", "", "missing", script="/admin",
                                            HTTP_COOKIE=cookie))
    return status, page


def test_the_bounces_page_lists_results_in_the_time_zone_and_shows_kept_messages_escaped(site):
    pipe_site(site)
    site.subscriber("course", DEAD)
    site.set(timezone="Asia/Vladivostok")
    sender = tagged_sender(site, None, "s", "course", DEAD)
    pipe(site, f"To: {sender}\nSubject: <script>alert(1)</script>\n\n<b>hi</b>\n".encode())
    pipe(site, bounce("flufl-postfix_01.txt", DEAD, sender))  # gone: its tag matches nobody after
    logged = bounce_log(site)[0][0]  # UTC
    status, page = admin_get(site, "/bounces")
    assert status == 200
    assert DEAD in page and "permanent failure" in page and "service course" in page
    from datetime import datetime
    from zoneinfo import ZoneInfo
    local = datetime.strptime(logged, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=ZoneInfo("UTC")) \
        .astimezone(ZoneInfo("Asia/Vladivostok")).strftime("%Y-%m-%d %H:%M")
    assert local in page
    kept = list((site.data.root / "bounces" / "kept").glob("*.eml"))[0].name
    assert kept in page
    status, message = admin_get(site, f"/bounces/kept/{kept}")
    assert status == 200 and "<script>alert" not in message and "&lt;script&gt;" in message
    status, page = admin_get(site, "/bounces", "ru")
    assert "Возвраты" in page and "постоянный отказ" in page and "рассылка course" in page
    status, _ = admin_get(site, "/bounces/kept/20260101-000000-0123456789abcdef.eml")
    assert status == 404


def test_the_status_page_warns_when_nothing_reads_the_bounces_and_never_shows_the_mailbox_password(
        site, smtp_server):
    site.use_smtp(smtp_server.port)
    status, page = admin_get(site, "/")
    assert "Nothing reads the bounces" in page
    site.set(mail__bounce_mailbox="imaps://u:Very-Secret-9@127.0.0.1/INBOX")
    status, page = admin_get(site, "/")
    assert "Nothing reads the bounces" not in page
    status, page = admin_get(site, "/settings")
    assert status == 200 and "Very-Secret-9" not in page


def test_a_ca_file_that_is_not_there_is_refused_when_set(site, tmp_path):
    code, _, err = site.call("settings", "set", "mail.bounce_cafile", str(tmp_path / "nope.pem"))
    assert code == 1 and "absolute path of a file" in err
    code, _, err = site.call("settings", "set", "mail.bounce_cafile", "relative.pem")
    assert code == 1
    assert site.settings()["mail.bounce_cafile"] == ""


def test_the_cron_url_and_the_serve_ticker_read_the_mailbox_too(site, smtp_server, dovecot):
    from support.servetools import call, environ
    from vykhukhol.web import cron
    from vykhukhol.web.server import Ticker

    course_site(site, smtp_server, dovecot)
    site.cli("cron")
    sender = tagged_sender(site, letter_to(smtp_server, DEAD), "s", "course", DEAD)
    dovecot.deliver(bounce("flufl-postfix_01.txt", DEAD, sender))
    status, _, report, _ = call(cron.app(site.data), environ("GET", "/", "", b"", "", "missing"))
    assert status == 200 and "bounces: 1 read" in report
    assert DEAD not in site.subscribers("course")  # gone at once
    sender = tagged_sender(site, letter_to(smtp_server, ALIVE), "s", "course", ALIVE)

    dovecot.deliver(dsn(ALIVE, sender, "<t1@example.org>"))
    dovecot.deliver(dsn(ALIVE, sender, "<t2@example.org>"))
    ticker = Ticker(site.data, interval=0.2)  # what `vykhukhol serve` runs every minute
    ticker.start()
    try:
        deadline = time.monotonic() + 20
        while site.subscribers("course")[ALIVE].failures < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        ticker.stopping.set()
        ticker.join(30)
    assert site.subscribers("course")[ALIVE].failures == 2
