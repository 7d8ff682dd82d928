"""Who did not get a newsletter, and sending it again (docs/using/newsletters.md#newsletter-failed).

A real aiosmtpd on loopback answers 451 to one address's RCPT (every time)
and 550 to another's; a third address is on the suppression list. The runs
go in-process at moments moved forward (a 4xx recipient is retried for
three days before it counts as failed); `vykhukhol newsletter failed [--csv]`
and `newsletter resend` run as subprocesses, the admin's page and button
in-process with a real session and CSRF token.
"""

from __future__ import annotations

import csv
import html
import io
import re
from datetime import timedelta
from urllib.parse import urlencode

import pytest

from support.clikit import refused
from support.servetools import call, environ, log_in
from vykhukhol import newsletters
from vykhukhol.members import suppression
from vykhukhol.timeutil import now
from vykhukhol.web import admin as admin_mod

BUSY, GONE, BLOCKED, FINE = ("busy@example.org", "gone@example.org", "blocked@example.org",
                             "fine@example.org")
BUSY_REPLY = "451 4.2.1 Mailbox busy, try again later"
GONE_REPLY = "550 5.1.1 <gone@example.org>: Recipient address rejected: User unknown"


@pytest.fixture
def t0():
    return (now() + timedelta(minutes=2)).replace(microsecond=0)  # after the job's start


def newsletter(site, smtp_server) -> str:
    site.use_smtp(smtp_server.port)
    site.service("news", enabled=False)
    for address in (BUSY, GONE, FINE):
        site.subscriber("news", address, name=address.split("@")[0].title())
    site.subscriber("news", BLOCKED, name="=1+1")  # a name that a spreadsheet would run
    suppression.add(site.data, site.settings().secret, BLOCKED, suppression.Why.ADMIN, "admin", now())
    smtp_server.handler.rcpt_responses.update({BUSY: BUSY_REPLY, GONE: GONE_REPLY})
    return newsletters.create(site.data, ["news"], "Issue {{ service }}", "Hello!")


def failed_table(site, job: str) -> dict[str, list[str]]:
    out = site.cli("newsletter", "failed", job).stdout.splitlines()
    assert out[0] == "#email\tname\tstate\ttime\twhy\treply\tresent"
    return {line.split("\t")[0]: line.split("\t")[1:] for line in out[1:]}


def received(smtp_server) -> list[str]:
    """The subscribers the server took a letter for (the admin's reports left out)."""
    return sorted(to for letter in smtp_server.handler.received for to in letter.rcpt_tos
                  if to in (BUSY, GONE, BLOCKED, FINE))


def test_the_failed_list_says_why_while_it_runs_and_after_it_ended(site, smtp_server, t0):
    """While it runs: the 550 (refused, with the server's words) and the suppressed
    one (skipped); the 451 one waits its retries. Three days on it is given up; the
    job ends, its files go, and the list (CLI, CSV) stays, now with the 451 one."""
    job = newsletter(site, smtp_server)
    site.run_at(t0)
    assert received(smtp_server) == [FINE]
    rows = failed_table(site, job)
    assert set(rows) == {GONE, BLOCKED}
    assert rows[GONE][:2] == ["Gone", "failed"] and rows[GONE][3:] == ["refused", GONE_REPLY, "no"]
    assert rows[BLOCKED][1] == "skipped" and rows[BLOCKED][3] == "suppressed"

    site.run_at(t0 + timedelta(days=3, hours=1))
    assert not site.data.job(job, "job").exists()  # ended: its files are gone
    assert not site.data.job(job, "list").exists()
    rows = failed_table(site, job)
    assert set(rows) == {GONE, BLOCKED, BUSY}
    assert rows[BUSY][1] == "failed" and rows[BUSY][3:] == ["temporary", BUSY_REPLY, "no"]
    table = list(csv.DictReader(io.StringIO(site.cli("newsletter", "failed", job, "--csv").stdout)))
    assert {(r["email"], r["name"], r["why"], r["reply"]) for r in table} == {
        (GONE, "Gone", "refused", GONE_REPLY), (BLOCKED, "'=1+1", "suppressed", ""),
        (BUSY, "Busy", "temporary", BUSY_REPLY)}

    missing = site.cli("newsletter", "failed", "20200101-000000-abcdef", check=False)
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert "no newsletter 20200101-000000-abcdef" in missing.stderr


def test_resend_goes_to_the_451_one_alone_and_only_once(site, smtp_server, t0):
    """The admin's page lists the three with their reasons; its button (CSRF) makes
    a new job of the kept letter for the 451 one alone (the 550 one is gone, the
    suppressed one stays so); it goes to that one only. A second resend, by the CLI
    or the button, is refused in one clear line and sends nothing."""
    job = newsletter(site, smtp_server)
    site.run_at(t0)
    site.run_at(t0 + timedelta(days=3, hours=1))
    smtp_server.handler.rcpt_responses.clear()  # the busy mailbox takes mail again
    before = received(smtp_server)
    site.set(language="en")

    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, token = log_in(app)
    status, _, page, _ = call(app, environ("GET", f"/newsletters/{job}/failed", "", b"", "",
                                           "missing", script="/admin", HTTP_COOKIE=cookie))
    assert status == 200, page
    text = html.unescape(page)
    for words in (BUSY, BUSY_REPLY, GONE, GONE_REPLY, BLOCKED, "on the suppression list",
                  "refused for a while, given up", "Send it again to them"):
        assert words in text, words
    _, _, listing, _ = call(app, environ("GET", "/newsletters", "", b"", "", "missing",
                                         script="/admin", HTTP_COOKIE=cookie))
    assert f"/newsletters/{job}/failed" in listing

    def press() -> tuple[int, dict, str]:
        body = urlencode({"csrf": token}).encode()
        status, headers, page, _ = call(app, environ(
            "POST", f"/newsletters/{job}/resend", "", body, "application/x-www-form-urlencoded",
            str(len(body)), script="/admin", HTTP_COOKIE=cookie))
        return status, headers, page

    forged = urlencode({"csrf": "forged"}).encode()
    status, _, _, _ = call(app, environ("POST", f"/newsletters/{job}/resend", "", forged,
                                        "application/x-www-form-urlencoded", str(len(forged)),
                                        script="/admin", HTTP_COOKIE=cookie))
    assert status == 403
    status, headers, page = press()
    assert status == 303, page
    [again] = [j for j in newsletters.list_jobs(site.data)]
    assert again.name != job and again.values["resend_of"] == job
    assert newsletters.counts(site.data.job(again.name, "list"))["total"] == 1

    site.run_at(t0 + timedelta(days=3, hours=2))
    assert received(smtp_server) == sorted([*before, BUSY])
    [letter] = [m for m in smtp_server.handler.received if m.rcpt_tos == [BUSY]]
    assert letter.message["Subject"] == "Issue News"
    assert failed_table(site, job)[BUSY][-1] == "yes"  # resent: not again
    assert not (site.data.newsletters / f"{job}.missed.lock").exists()  # swept by the run

    second = site.cli("newsletter", "resend", job, check=False)
    assert second.returncode == 1 and second.stdout == ""
    assert len(second.stderr.strip().splitlines()) == 1
    assert "nobody to send it again to" in second.stderr
    status, _, page = press()
    assert status == 400 and "nobody to send it again to" in html.unescape(page)
    assert newsletters.list_jobs(site.data) == []
    site.run_at(t0 + timedelta(days=3, hours=3))
    assert received(smtp_server) == sorted([*before, BUSY])

    site.set(language="ru")  # the page in Russian, the server's words as they came
    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, token = log_in(app)
    _, _, page, _ = call(app, environ("GET", f"/newsletters/{job}/failed", "", b"", "",
                                      "missing", script="/admin", HTTP_COOKIE=cookie))
    text = html.unescape(page)
    for words in (f"Кто не получил выпуск {job}", "временный отказ, попытки прекращены",
                  "в стоп-листе", "отправлено ещё раз", f"<code>{BUSY_REPLY}</code>"):
        assert words in text, words
    assert "Send it again" not in text  # nobody left to send it to: no button


def test_resend_from_the_cli_and_erase_forgets_the_kept_row(site, smtp_server, t0):
    """`newsletter resend` prints the new job; the subscriber's erase takes their
    row out of the kept list, and export shows it first."""
    job = newsletter(site, smtp_server)
    site.run_at(t0)
    site.run_at(t0 + timedelta(days=3, hours=1))
    made = site.cli("newsletter", "resend", job)
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}\n", made.stdout)
    assert "1 recipient" in made.stderr

    from vykhukhol.members import personal

    settings = site.settings()
    found = personal.export(site.data, settings, BUSY, now())
    assert any(entry.get("file", "").endswith(f"{job}.missed")
               for entry in found["newsletter_rows"])
    personal.erase(site.data, settings, BUSY, now())
    assert BUSY not in site.data.job(job, "missed").read_text()


def test_a_newsletter_everyone_got_lists_nobody_and_resends_to_nobody(site):
    """Everyone got it: nothing is kept, the list is a header alone, and a resend
    is refused in one line with the data directory untouched."""
    site.service("news", enabled=False)
    site.subscriber("news", FINE)
    job = site.cli("newsletter", "create", "--services", "news", "--subject", "Hi",
                   "--body", "Hello!").stdout.strip()
    site.cli("cron")
    assert not site.data.job(job, "job").exists() and not site.data.job(job, "missed").exists()
    listed = site.cli("newsletter", "failed", job)
    assert listed.stdout.splitlines() == ["#email\tname\tstate\ttime\twhy\treply\tresent"]
    assert "everyone got it" in listed.stderr
    refused(site, "newsletter", "resend", job, says=("nobody to send it again to",))
