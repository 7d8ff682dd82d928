"""The newsletters' history (docs/using/newsletters.md#newsletter-history).

A newsletter goes out through the real CLI (`newsletter create`, `cron`, the
outbox transport), its files are deleted when it is done, and its line in
``data/newsletters/history.txt`` stays: `vykhukhol newsletter history
[--json]` prints it, and the counts of bounces, complaints and unsubscribes
keep growing as late reports come in through `vykhukhol bounce` (real bounce
reports from tests/data/bounces) and the unsubscribe link of the letter
itself (the public app, in-process). A letter accepted by the server is
"handed over", never "sent", in every text the owner reads.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from support.servetools import call, environ, log_in
from vykhukhol import returntag as tags
from vykhukhol.newsletters import history
from vykhukhol.web import admin as admin_mod
from vykhukhol.web import subscription

DATA = Path(__file__).resolve().parents[1] / "data" / "bounces"
ARF = (DATA / "rfc5965-example.txt").read_bytes()
DEAD, ANGRY, LEAVER, BYMAIL = ("dead@example.com", "angry@example.com", "leaver@example.com",
                               "bymail@example.com")
EVERYONE = [DEAD, ANGRY, LEAVER, BYMAIL]


def newsletter_site(site, admin_email: str = "") -> str:
    """A list of four, one newsletter handed over to all of them and finished."""
    site.set(mail__from_email="list@example.org", admin_email=admin_email)
    site.service("news", enabled=False)
    for address in EVERYONE:
        site.subscriber("news", address)
    job = site.cli("newsletter", "create", "--services", "news", "--subject",
                   "Issue {{ service }}", "--body", "Hello!").stdout.strip()
    site.cli("cron")
    assert not site.data.job(job, "job").exists()  # finished: its files are gone
    return job


def tagged(site, job: str, address: str) -> str:
    settings = site.settings()
    return tags.bounce_address(settings["mail.from_email"], settings["mail.verp_separator"],
                               tags.make(settings.secret, tags.NEWSLETTER, job, address))


def dsn(sender: str, failed: str) -> bytes:
    raw = (DATA / "flufl-postfix_01.txt").read_bytes().replace(b"xxxxx@local.ie", failed.encode())
    return f"Delivered-To: {sender}\n".encode() + raw


def complaint(sender: str, address: str) -> bytes:
    return ARF.replace(b"<somespammer@example.net>", f"<{sender}>".encode()).replace(
        b"user@example.com", address.encode())


def pipe(site, raw: bytes) -> None:
    result = site.cli("bounce", input=raw.decode("latin-1"), check=False)
    assert result.returncode == 0 and "Traceback" not in result.stdout + result.stderr, result


def history_json(site) -> list[dict]:
    return json.loads(site.cli("newsletter", "history", "--json").stdout)


def letter_of(site, address: str):
    [letter] = [m for m in site.outbox() if m["To"].addresses[0].addr_spec == address]
    return letter


def unsubscribe(site, url: str, method: str = "POST") -> int:
    """Follow a letter's unsubscribe link as the page's button does (or one-click)."""
    query = urlsplit(url).query
    body = urlencode({k: v[0] for k, v in parse_qs(query).items()}).encode()
    status, _, _, _ = call(subscription.unsubscribe(site.data), environ(
        method, "", "" if method == "POST" else query, body if method == "POST" else b"",
        "application/x-www-form-urlencoded", str(len(body)) if method == "POST" else "missing"))
    return status


def test_a_finished_newsletter_stays_in_the_history_and_late_reports_keep_counting(site):
    """Handed over 4; then a permanent bounce (twice: counted once), a complaint, a
    mailto unsubscribe and a link unsubscribe, all after the job's files are gone."""
    job = newsletter_site(site)
    [entry] = history_json(site)
    assert entry == {"job": job, "subject": "Issue News", "services": ["news"],
                     "started": entry["started"], "finished": entry["finished"],
                     "handed": 4, "failed": 0, "in_doubt": 0, "bounced": 0, "complaints": 0,
                     "unsubscribed": 0, "cancelled": False, "where": None, "matched": None,
                     "clicks": None, "links": []}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entry["started"])
    assert entry["finished"] >= entry["started"]

    report = dsn(tagged(site, job, DEAD), DEAD)
    pipe(site, report)
    pipe(site, report)  # the same message again: processed before, counted once
    pipe(site, complaint(tagged(site, job, ANGRY), ANGRY))
    pipe(site, f"From: {BYMAIL}\nTo: {tagged(site, job, BYMAIL)}\nSubject: unsubscribe\n\n".encode())
    link = re.search(r"<(http[^>]+)>", str(letter_of(site, LEAVER)["List-Unsubscribe"])).group(1)
    assert parse_qs(urlsplit(link).query)["n"] == [job]  # the link says which newsletter
    assert unsubscribe(site, link) == 200
    assert unsubscribe(site, link) == 200  # gone already: nothing more to count

    [entry] = history_json(site)
    assert (entry["handed"], entry["bounced"], entry["complaints"], entry["unsubscribed"]) == (
        4, 1, 1, 2)
    # 5.1.1: the address is gone, deleted and suppressed at once; counted once
    assert set(site.subscribers("news")) == set()
    assert (site.data.root / "suppressed.txt").read_text().count(f"{DEAD}\t") == 1

    plain = site.cli("newsletter", "history").stdout.splitlines()
    assert plain[0].startswith("#job\tstarted\tfinished\thanded over\tfailed")
    assert plain[1].split("\t")[:1] + plain[1].split("\t")[3:] == [
        job, "4", "0", "0", "1", "1", "2", "-", "news", "Issue News", "-", "-"]  # "-": clicks not
    # counted; "-", "-": a newsletter to all (no condition, no count)


def test_a_link_naming_another_or_no_newsletter_makes_no_line(site):
    """The newsletter named in a link is not signed: it can only add to a line that
    exists, and only when the unsubscribe really happened."""
    job = newsletter_site(site)
    link = re.search(r"<(http[^>]+)>", str(letter_of(site, LEAVER)["List-Unsubscribe"])).group(1)
    forged = link.replace(f"n={job}", "n=20990101-000000-abcdef")
    assert unsubscribe(site, forged) == 200
    assert LEAVER not in site.subscribers("news")  # the unsubscribe itself works
    assert [e.job for e in history.entries(site.data)] == [job]
    assert history_json(site)[0]["unsubscribed"] == 0
    broken = link.replace(f"n={job}", "n=../../etc")
    assert unsubscribe(site, broken) == 200


def test_a_bounce_batch_redone_after_a_kill_counts_once(site):
    """A kill after a batch's effects and before its ``done`` line: the next reader
    redoes the batch from its journal, and the history and the chart's day count
    take it once."""
    from vykhukhol import files
    from vykhukhol.bounces import apply, ledger, record

    job = newsletter_site(site)
    settings = site.settings()
    files.make_folder(ledger.journal_path(site.data).parent)
    plan = ledger.Plan(ids=["m1"], history=[(job, "bounced"), (job, "bounced"),
                                           (job, "complaints")], bounced=2)
    ledger.run_plan(site.data, settings, "batch-1", plan, fresh=True)
    journal = ledger.journal_path(site.data)
    kept = [line for line in journal.read_text().splitlines() if not line.startswith("done")]
    journal.write_text("\n".join(kept) + "\n")  # as if killed before the done line
    apply.process(site.data, settings, [], "pipe")  # the next reader finishes the batch
    assert "done\tbatch-1" in journal.read_text()
    [entry] = history.entries(site.data)
    assert (entry.bounced, entry.complaints) == (2, 1)
    assert sum(record.per_day(site.data).values()) == 2

    plan.ids = ["m2"]
    ledger.run_plan(site.data, settings, "batch-2", ledger.Plan.from_json(plan.to_json()),
                    fresh=True)
    [entry] = history.entries(site.data)
    assert (entry.bounced, entry.complaints) == (4, 2)
    assert sum(record.per_day(site.data).values()) == 4


@pytest.mark.parametrize(("lang", "words"), [
    ("en", ("History", "Handed over", "Bounced", "Issue News")),
    ("ru", ("История", "Передано", "Отказы доставки", "Issue News")),
])
def test_the_newsletters_page_shows_the_history_without_an_admin_email(site, lang, words):
    """Finished newsletters no longer vanish from the admin when admin_email is empty."""
    job = newsletter_site(site)
    pipe(site, dsn(tagged(site, job, DEAD), DEAD))
    site.set(language=lang)
    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, _ = log_in(app)
    status, _, page, _ = call(app, environ("GET", "/newsletters", "", b"", "", "missing",
                                           script="/admin", HTTP_COOKIE=cookie))
    assert status == 200
    row = html.unescape(re.search(rf'<tr id="history-{job}">(.*?)</tr>', page, re.S).group(1))
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[4:] == ["4", "0", "1", "0", "0", "-"], cells  # "-": clicks not counted
    for word in words:
        assert word in html.unescape(page)


def test_a_report_of_an_english_site_is_in_english_and_says_handed_over(site):
    """language = en: the completion report and its subject in English."""
    site.set(language="en")
    newsletter_site(site, admin_email="admin@example.org")
    to_admin = {m["Subject"]: m for m in site.outbox()
                if m["To"].addresses[0].addr_spec == "admin@example.org"}
    report = to_admin["Newsletter finished: Issue News"]
    alert = to_admin["all dispatchs is off"]  # the literal subject, an English body
    assert alert.get_body(("plain",)).get_content().startswith("All serial services are")
    text = report.get_body(("plain",)).get_content()
    assert "Letters handed over to the mail server: 4" in text
    assert not re.search(r"[а-яА-ЯёЁ]", text), text
    assert not re.search(r"\bsent\b", text, re.I), text
    assert re.search(r"finished: 4 handed over, 0 failed, 0 skipped, 0 in doubt", site.log())
    assert re.search(r"run ended after [\d.]+s: .*; handed over 4$", site.log(), re.M)


@pytest.mark.parametrize(("lang", "body"), [
    ("en", "Vykhukhol cannot start sending: the script is in debug mode."),
    ("ru", "Выхухоль не может начать отправку: скрипт стоит в режиме отладки (debug)."),
])
def test_an_alert_keeps_its_literal_subject_and_speaks_the_sites_language(site, lang, body):
    """The letter's body and the status page's line follow `language`; the subject is the
    original's; the run log keeps English."""
    site.set(language=lang, mode="debug", admin_email="admin@example.org")
    site.cli("cron")
    [alert] = [m for m in site.outbox() if m["Subject"] == "Script is off"]
    assert alert.get_body(("plain",)).get_content().startswith(body)
    assert "\talert\tScript is off: Vykhukhol cannot start sending" in site.log()
    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, _ = log_in(app)
    _, _, page, _ = call(app, environ("GET", "/", "", b"", "", "missing", script="/admin",
                                      HTTP_COOKIE=cookie))
    assert f"Script is off: {body}" in html.unescape(page)
