"""What a bounce deletes is kept 90 days and can be undone
(docs/deliverability/suppression.md#undo-bounce).

Real refusals, each way one arrives: an RFC 3464 report piped into
``vykhukhol bounce``, a provider's callback through ``cgi/hook.py``, soft
failures up to ``bounce_limit``, and a refusal at hand-over from aiosmtpd.
Each keeps the address's service lines in ``data/removed.txt`` exactly as
they were; an unsubscribe, the admin's delete, a complaint and an erase keep
nothing. ``vykhukhol removed restore`` (a real subprocess) puts the lines
back and takes the suppression away; an erase removes the kept lines too.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import timedelta

from support.bouncekit import ARF, dsn, pipe, tagged_sender
from support.servetools import subprocess_env
from vykhukhol import services as svc
from vykhukhol.bounces import counts
from vykhukhol.errors import Conflict
from vykhukhol.members import personal, removed, suppression
from vykhukhol.timeutil import format_time, now

DEAD, ALIVE = "Dead.One@example.com", "alive@example.com"
KEY = DEAD.lower()
LESSONS = [("Lesson 1", "0s", "Hello."), ("Lesson 2", "30d", "Again."), ("Lesson 3", "30d", "More.")]
GONE_WORDS = "smtp; 550 5.1.1 <{failed}>: Recipient address rejected: User unknown in virtual table"


def two_services(site) -> dict[str, str]:
    """``course`` and ``digest``, DEAD in both at different places of the series;
    returns each service's line of DEAD as the file holds it."""
    site.set(mail__from_email="list@example.org")
    site.service("course", letters=LESSONS)
    site.service("digest", letters=LESSONS)
    site.subscriber("course", DEAD, name="Dee", sent=2, last_sent_ago=7200, ago=90_000)
    site.subscriber("course", ALIVE)
    site.subscriber("digest", DEAD, name="Dee", state="new", ago=600, reminders=1,
                    last_reminder_ago=300)
    return lines_of(site, KEY)


def lines_of(site, key: str) -> dict[str, str]:
    """Service → the subscriber line of ``key``, byte for byte as in the file."""
    found = {}
    for service in svc.load_services(site.data):
        for line in service.subscribers_path.read_text().splitlines():
            if line.split("\t", 1)[0].lower() == key:
                found[service.name] = line
    return found


def kept(site) -> list[removed.Kept]:
    return removed.entries(site.data, now())


def gone_report(site, service: str = "course", address: str = DEAD) -> bytes:
    sender = tagged_sender(site, None, "s", service, address)
    return dsn(address, sender, "<l1.dead@example.org>", status="5.1.1", diagnostic=GONE_WORDS)


def test_a_piped_report_of_an_address_gone_keeps_every_line_it_deleted(site):
    before = two_services(site)
    pipe(site, gone_report(site))
    assert lines_of(site, KEY) == {}
    records = kept(site)
    assert {k.service: k.line for k in records} == before  # exactly as they were
    for record in records:
        assert (record.address, record.cause, record.source) == (KEY, "address gone", "pipe")
        # the words bounces.log gives the refusal (the reading, the report's own text)
        assert record.words.startswith("address gone: userunknown") and "5.1.1" in record.words
    assert ALIVE in site.subscribers("course")
    raw = removed.path(site.data).read_text()
    assert raw.startswith(removed.HEADER + "\n") and raw.count("\n") == 3


def test_soft_failures_up_to_the_bounce_limit_keep_the_lines_with_the_last_words(site):
    before = two_services(site)
    site.set(bounce_limit=2)
    sender = tagged_sender(site, None, "s", "course", DEAD)
    for number in (1, 2):
        pipe(site, dsn(DEAD, sender, f"<l{number}.dead@example.org>"))  # 5.2.2: a full mailbox
    assert lines_of(site, KEY) == {}
    records = {k.service: k for k in kept(site)}
    assert set(records) == {"course", "digest"}
    # the course line as it was before its last failure (one counted); digest's untouched
    assert records["course"].line == before["course"].replace("\t0\t127.0.0.1", "\t1\t127.0.0.1")
    assert records["digest"].line == before["digest"]
    assert all(k.cause == "soft bounces" and k.words.startswith("soft: mailboxfull 5.2.2")
               for k in records.values())


def test_a_refusal_at_hand_over_keeps_the_line_with_source_smtp(site, smtp_server):
    site.use_smtp(smtp_server.port)
    site.service("course", letters=LESSONS)
    site.subscriber("course", DEAD, ago=7200)
    site.subscriber("course", ALIVE, ago=7200)
    before = lines_of(site, KEY)
    smtp_server.handler.rcpt_responses[DEAD] = "550 5.1.1 <dead.one@example.com>: User unknown"
    site.ok("cron")
    assert lines_of(site, KEY) == {}
    (record,) = kept(site)
    assert (record.service, record.cause, record.source) == ("course", "address gone", "smtp")
    assert record.line == before["course"]


def test_a_restore_during_a_run_waits_for_the_file_and_the_next_run_sends_its_letter(
        site, smtp_server):
    """The restore takes the subscriber file's lock, as the sender's fold does:
    a run busy at the server keeps the restored line, and the next run sends
    the address the letter it was due, once."""
    site.use_smtp(smtp_server.port)
    site.service("course", letters=[("Lesson 1", "0s", "Hello."), ("Lesson 2", "1h", "Again.")])
    for number in range(3):
        site.subscriber("course", f"reader{number}@example.com", ago=7200)
    site.subscriber("course", DEAD, sent=1, last_sent_ago=7200, ago=90_000)
    before = lines_of(site, KEY)
    pipe(site, gone_report(site))
    assert lines_of(site, KEY) == {}
    smtp_server.handler.data_delay = 1.0
    run = subprocess.Popen([sys.executable, "-m", "vykhukhol", "--data", str(site.data.root),
                            "cron"], env=subprocess_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not smtp_server.handler.connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert smtp_server.handler.connections, "the run never reached the server"
    site.ok("removed", "restore", DEAD)
    assert run.poll() is None  # restored while the run was still handing letters over
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0 and "Traceback" not in err, err
    assert lines_of(site, KEY) == before  # the run's fold kept the line restored meanwhile
    smtp_server.handler.data_delay = 0.0
    site.ok("cron")
    site.ok("cron")
    got = [(r.rcpt_tos[0], r.message["Subject"]) for r in smtp_server.handler.received]
    assert got.count((DEAD, "Lesson 2")) == 1 and (DEAD, "Lesson 1") not in got
    assert sorted(a for a, subject in got if subject == "Lesson 1") == [
        f"reader{number}@example.com" for number in range(3)]


def test_leaving_the_admins_delete_a_complaint_and_an_erase_keep_nothing(site):
    two_services(site)
    site.ok("subscriber", "remove", "course", DEAD)
    sender = tagged_sender(site, None, "s", "digest", DEAD)
    complaint = ARF.replace(b"<somespammer@example.net>", f"<{sender}>".encode()).replace(
        b"user@example.com", DEAD.encode())
    pipe(site, complaint)
    assert lines_of(site, KEY) == {}
    site.subscriber("course", ALIVE.replace("alive", "erased"))
    personal.erase(site.data, site.settings(), "erased@example.com", now())
    assert not removed.path(site.data).exists()


def test_restore_by_the_command_puts_each_line_back_and_takes_the_suppression_away(site):
    before = two_services(site)
    site.set(bounce_limit=3)
    sender = tagged_sender(site, None, "s", "course", DEAD)
    pipe(site, dsn(DEAD, sender, "<l1.dead@example.org>"))  # one soft failure counted first
    counted = lines_of(site, KEY)["course"]
    pipe(site, gone_report(site))
    assert suppression.is_suppressed(site.data, b"", DEAD)
    listed = json.loads(site.cli("removed", "list", "--json").stdout)
    assert [entry["address"] for entry in listed] == [KEY]
    assert {s["service"]: (s["state"], s["sent"]) for s in listed[0]["services"]} == {
        "course": ("active", 2), "digest": ("new", 0)}
    assert "5.1.1" in listed[0]["words"] and listed[0]["cause"] == "address gone"

    done = site.cli("removed", "restore", DEAD)
    assert "restored to 2 services" in done.stdout
    after = lines_of(site, KEY)
    assert after["digest"] == before["digest"]
    assert after["course"] == counted.replace("\t1\t127.0.0.1", "\t0\t127.0.0.1")  # failures 0
    assert not suppression.is_suppressed(site.data, suppression.secret_of(site.settings()), DEAD)
    assert kept(site) == []
    soft = counts.soft_path(site.data)
    assert KEY not in (soft.read_text() if soft.exists() else "")
    again = site.cli("removed", "restore", DEAD, check=False)
    assert again.returncode == 1 and "not among the addresses removed by bounces" in again.stderr
    assert "Traceback" not in again.stderr


def test_restore_says_which_services_it_could_not_put_the_address_back_into(site):
    before = two_services(site)
    site.service("tips", letters=LESSONS)
    site.subscriber("tips", DEAD)
    pipe(site, gone_report(site))
    assert len(kept(site)) == 3
    svc.remove_service(site.data, "tips")
    suppression.remove(site.data, b"", DEAD)  # the owner took it off and re-added it by hand
    site.subscriber("digest", DEAD, name="Back by hand")
    by_hand = lines_of(site, KEY)["digest"]
    code, out, err = site.call("removed", "restore", "not an address")
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    out = site.ok("removed", "restore", DEAD)
    assert "restored to 1 service; course" in out
    assert "digest: dead.one@example.com was subscribed again meanwhile" in out
    assert "tips: the service is gone" in out
    assert lines_of(site, KEY) == {"course": before["course"], "digest": by_hand}
    assert kept(site) == []


def test_restore_leaves_a_complaint_in_place_and_changes_nothing(site):
    two_services(site)
    pipe(site, gone_report(site))
    suppression.remove(site.data, b"", DEAD)
    suppression.add(site.data, b"", DEAD, suppression.Why.COMPLAINT, "mailgun", now())
    before = {p: p.read_bytes() for p in site.data.root.rglob("*.txt")}
    result = site.cli("removed", "restore", DEAD, check=False)
    assert result.returncode == 1 and "another reason (spam complaint)" in result.stderr
    assert {p: p.read_bytes() for p in site.data.root.rglob("*.txt")} == before


def test_a_complaint_after_the_bounce_keeps_the_address_off_the_list(site):
    """Removed by a bounce, the address then complains (its complaint is
    logged): the suppression keeps both reasons, and a restore refuses and
    says why, in English on the command line and in Russian on the page;
    a manual suppression after a bounce stands the same way."""
    two_services(site)
    pipe(site, gone_report(site))
    sender = tagged_sender(site, None, "s", "course", DEAD)
    pipe(site, ARF.replace(b"<somespammer@example.net>", f"<{sender}>".encode()).replace(
        b"user@example.com", KEY.encode()))
    log = (site.data.log / "bounces.log").read_text()
    assert "\tcomplaint\tservice course\t" + KEY in log
    assert sorted(e.why for e in suppression.entries(site.data)) == ["address gone", "complaint"]
    before = {p: p.read_bytes() for p in site.data.root.rglob("*.txt")}
    result = site.cli("removed", "restore", DEAD, check=False)
    assert result.returncode == 1 and "another reason (spam complaint)" in result.stderr
    assert "Traceback" not in result.stderr
    assert {p: p.read_bytes() for p in site.data.root.rglob("*.txt")} == before
    try:
        removed.restore(site.data, site.settings(), DEAD, now())
    except Conflict as exc:
        assert "(жалоба на спам)" in exc.text("ru"), exc.text("ru")
    else:
        raise AssertionError("restored in spite of the complaint")

    site.ok("suppress", "remove", DEAD)  # the owner lifts it all, then a new bounce
    site.subscriber("course", DEAD)
    pipe(site, b"X-Again: 1\n" + gone_report(site))
    assert site.ok("suppress", "add", DEAD).startswith("0 added, 1 already on the list")
    result = site.cli("removed", "restore", DEAD, check=False)
    assert result.returncode == 1 and "another reason (added by the admin)" in result.stderr
    site.ok("suppress", "remove", DEAD)
    assert "restored to 2 services" in site.ok("removed", "restore", DEAD)


def test_an_erase_by_the_subscriber_removes_the_kept_lines(site):
    two_services(site)
    pipe(site, gone_report(site))
    site.subscriber("course", "other@example.com")
    pipe(site, gone_report(site, address="other@example.com"))
    assert {k.address for k in kept(site)} == {KEY, "other@example.com"}
    export = personal.export(site.data, site.settings(), DEAD, now())
    assert len(export["removed_by_bounces"]) == 2
    assert personal.stored(site.data, site.settings(), DEAD, now())
    personal.erase(site.data, site.settings(), DEAD, now())
    assert {k.address for k in kept(site)} == {"other@example.com"}
    assert KEY not in removed.path(site.data).read_text().lower()
    assert not personal.stored(site.data, site.settings(), DEAD, now())


def test_lines_older_than_90_days_are_never_shown_and_go_at_the_next_change(site):
    site.service("course", letters=LESSONS)
    moment = now()
    for days, address in ((91, "old@example.com"), (89, "young@example.com")):
        line = f"{address}\t\tactive\t{format_time(moment)}\t-\t1\t-\t0\t-\t0\t-"
        removed.note(site.data, "course", line, "address gone", "imap", "550 5.1.1",
                     moment - timedelta(days=days))
    # both were written; the older is past KEEP_DAYS already
    assert "old@example.com" in removed.path(site.data).read_text()
    assert [k.address for k in kept(site)] == ["young@example.com"]
    listing = site.cli("removed", "list").stdout
    assert "young@example.com" in listing and "old@example.com" not in listing
    assert "old@example.com" not in removed.path(site.data).read_text()  # pruned for good
    assert "young@example.com" in removed.path(site.data).read_text()
    later = site.cli("removed", "restore", "old@example.com", check=False)
    assert later.returncode == 1 and "in the last 90 days" in later.stderr


def test_the_words_kept_are_one_printable_line(site):
    site.service("course", letters=LESSONS)
    line = f"odd@example.com\t\tactive\t{format_time(now())}\t-\t1\t-\t0\t-\t0\t-"
    removed.note(site.data, "course", line, "address gone", "imap",
                 "550 no\x1b[2J such\tuser\r\nX-Injected: yes " + "x" * 900, now())
    (record,) = kept(site)
    assert record.words.startswith("550 no [2J such user X-Injected: yes x")
    assert len(record.words) == removed.WORDS_LIMIT and record.line == line
    listed = site.cli("removed", "list").stdout
    assert "\x1b" not in listed and listed.count("\n") == 2


def test_a_callback_of_an_address_gone_keeps_the_lines_with_the_providers_name(tmp_path):
    from support.hookkit import cgi_install, hook_cgi, payload, subscribe

    hooked = cgi_install(tmp_path, "news", "digest")
    subscribe(hooked, "cb-gone@example.net", "news", "digest")
    before = lines_of(hooked, "cb-gone@example.net")
    body = payload("generic.json").replace("RECIPIENT", "cb-gone@example.net").replace(
        "temporary", "permanent").replace("452 4.2.2 mailbox full",
                                          "550 5.1.1 The email account does not exist").encode()
    page = hook_cgi(hooked, body, f"key={hooked.key}")
    assert page.status == 200, page
    assert lines_of(hooked, "cb-gone@example.net") == {}
    records = removed.entries(hooked.data, now())
    assert {k.service: k.line for k in records} == before
    assert all(k.source == "generic" and k.cause == "address gone" and "5.1.1" in k.words
               for k in records)


def test_removed_list_is_a_table_a_person_reads_and_json_keeps_the_raw_line(site):
    """Who, when, from which service, why and what the server said, in
    aligned columns; the kept subscriber line itself only with --json."""
    from datetime import datetime, timezone

    site.service("course", letters=LESSONS)
    when = datetime(2026, 12, 1, 8, 30, tzinfo=timezone.utc)
    line = f"anna@example.com\tAnna\tactive\t{format_time(when)}\t-\t2\t-\t0\t-\t0\t-"
    removed.note(site.data, "course", line, "address gone", "imap",
                 "550 5.1.1 <anna@example.com>: no such user here " + "x" * 80, now())
    rows = site.cli("removed", "list").stdout.splitlines()
    assert len(rows) == 2, rows
    header, anna = rows
    assert header.split("  ")[0] == "removed (UTC)" and "the server said" in header
    assert "\t" not in anna and line not in anna
    for cell in ("anna@example.com", "course", "address gone", "imap", "active, 2 letters sent",
                 "550 5.1.1 <anna@example.com>: no such user here"):
        assert cell in anna, (cell, anna)
    for title in ("address", "service", "cause", "source", "was"):  # the columns line up
        assert header.index(title) == anna.index(
            {"address": "anna@", "service": "course", "cause": "address gone", "source": "imap",
             "was": "active,"}[title]), (title, header, anna)
    assert anna.endswith("…") and len(anna) < 200
    [listed] = json.loads(site.cli("removed", "list", "--json").stdout)
    assert listed["services"][0]["line"] == line
