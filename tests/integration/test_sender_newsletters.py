"""Newsletters, "letters to all users" (docs/design/run.md#run-steps, step 2): batches of exactly
news_per_run, deduplicated recipients, start times, the suppression gate, the
Russian completion report, clean-up of finished and inadequate jobs."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest

from vykhukhol import newsletters
from vykhukhol import services as svc
from vykhukhol.members import membership
from vykhukhol.services import subscribers as subs
from vykhukhol.timeutil import now

ADMIN = "admin@example.org"
HOUR = 3600


# --- helpers ------------------------------------------------------------------





def to_of(message) -> str:
    return message["To"].addresses[0].addr_spec


def letters(site, subject: str | None = None) -> list:
    found = [m for m in site.outbox() if to_of(m) != ADMIN]
    return [m for m in found if subject is None or m["Subject"] == subject]


def reports(site) -> list:
    return [m for m in site.outbox() if to_of(m) == ADMIN and m["Subject"].startswith("Выпуск завершён")]


def job_files(site, job: str) -> list[str]:
    return sorted(p.name for p in site.data.newsletters.glob(f"{job}.*") if p.suffix != ".lock")


def ledger(site, job: str) -> dict[str, str]:
    """email → state of a job's ledger rows."""
    return {row.email: row.state.value
            for row in newsletters.read_rows(site.data.job(job, "list"))}


def news_list(site, name: str, emails: list[str], db: str = "main", enabled: bool = False) -> None:
    """A plain news list (no series) with confirmed subscribers; disabled unless asked."""
    site.service(name, db=db, enabled=enabled)
    for i, email in enumerate(emails):
        site.subscriber(name, email, name=email.split("@")[0].title(), ago=HOUR + len(emails) - i)


def create(site, services: list[str], subject: str = "Big news", text: str = "Hello {{ name }}!",
           start: datetime | None = None) -> str:
    return newsletters.create(site.data, services, subject, text, start=start)


# --- quota and batches ----------------------------------------------------------------

def test_news_per_run_sends_exactly_the_quota_on_each_run(site):
    """news_per_run=3 with 8 recipients: 3, 3 and 2 letters over three runs, then the job is gone."""
    site.set(news_per_run=3)
    emails = [f"u{i}@example.org" for i in range(8)]
    news_list(site, "news", emails)
    job = create(site, ["news"])

    got = []
    for _ in range(4):
        before = len(letters(site))
        report = site.run_at()
        got.append(len(letters(site)) - before)
        assert site.sent_counts(report).get(job, 0) == got[-1]
    assert got == [3, 3, 2, 0]
    assert [to_of(m) for m in letters(site)] == emails  # the ledger's order, each once
    assert job_files(site, job) == []


def test_the_quota_spans_jobs_and_the_oldest_start_goes_first(site):
    """Up to news_per_run letters in total per run, across jobs, oldest start time first."""
    site.set(news_per_run=3)
    news_list(site, "news", [f"u{i}@example.org" for i in range(5)])
    later = create(site, ["news"], subject="Later", start=now() - timedelta(minutes=5))
    earlier = create(site, ["news"], subject="Earlier", start=now() - timedelta(minutes=50))

    assert site.sent_counts(site.run_at()) == {earlier: 3}
    assert site.sent_counts(site.run_at()) == {earlier: 2, later: 1}
    assert site.sent_counts(site.run_at()) == {later: 3}
    assert site.sent_counts(site.run_at()) == {later: 1}
    assert len(letters(site, "Earlier")) == len(letters(site, "Later")) == 5


def test_newsletters_go_out_while_every_service_is_disabled(site):
    """Newsletters do not depend on whether services are enabled."""
    news_list(site, "news", ["a@example.org", "b@example.org"])
    create(site, ["news"])
    site.run_at()
    assert sorted(to_of(m) for m in letters(site, "Big news")) == ["a@example.org", "b@example.org"]
    assert "all dispatchs is off" in [m["Subject"] for m in site.outbox()]


def test_newsletters_and_series_letters_have_separate_quotas(site):
    """A run sends up to news_per_run newsletter letters and up to serial_per_run series letters."""
    site.set(news_per_run=2, serial_per_run=1)
    site.service("course", letters=[("Lesson 1", "0s", "one")])
    for i in range(3):
        site.subscriber("course", f"u{i}@example.org", ago=HOUR + i)
    job = create(site, ["course"])
    assert site.sent_counts(site.run_at()) == {job: 2, "course": 1}


# --- recipients -------------------------------------------------------------------

def test_an_address_in_two_services_gets_one_letter(site):
    """The ledger is deduplicated across the job's services: one row, one letter."""
    news_list(site, "one", ["both@example.org", "one@example.org"])
    news_list(site, "two", ["Both@Example.ORG", "two@example.org"], db="other")
    job = create(site, ["one", "two"])
    assert sorted(ledger(site, job)) == ["both@example.org", "one@example.org", "two@example.org"]

    site.run_at()
    site.run_at()
    assert sorted(to_of(m).lower() for m in letters(site)) == [
        "both@example.org", "one@example.org", "two@example.org"]


def test_only_confirmed_subscribers_are_recipients(site):
    """Unconfirmed subscribers are not on a newsletter's list."""
    site.service("news", enabled=False)
    site.subscriber("news", "yes@example.org")
    site.subscriber("news", "done@example.org", state="done")
    site.subscriber("news", "no@example.org", state="new", ago=60)
    job = create(site, ["news"])
    assert sorted(ledger(site, job)) == ["done@example.org", "yes@example.org"]


def test_a_job_waits_for_its_start_time(site):
    """A start time in the future: nothing is sent and the job waits; once it has come the job goes out."""
    news_list(site, "news", ["a@example.org"])
    start = now() + timedelta(hours=2)
    job = create(site, ["news"], start=start)

    assert site.sent_counts(site.run_at()) == {}
    assert site.sent_counts(site.run_at(start - timedelta(minutes=1))) == {}
    assert letters(site) == []
    assert job_files(site, job) == [f"{job}.job", f"{job}.letter", f"{job}.list"]

    assert site.sent_counts(site.run_at(start + timedelta(minutes=1))) == {job: 1}


def test_a_start_time_given_on_the_command_line_is_respected(site):
    """`newsletter create --at` in the future: the next run sends nothing."""
    news_list(site, "news", ["a@example.org"])
    at = (now() + timedelta(days=1)).strftime("%Y-%m-%d %H:%M")
    job = site.ok("newsletter", "create", "--services", "news", "--subject", "Later",
                  "--body", "text", "--at", at).strip()
    site.run_at()
    assert letters(site) == []
    assert ledger(site, job) == {"a@example.org": "pending"}


# --- the suppression gate -----------------------------------------------------------

def test_recipients_who_left_after_creation_are_skipped_not_mailed(site):
    """Suppression gate: an address unsubscribed or deleted after the job was made becomes a skipped row, with no letter."""
    site.set(news_per_run=2)
    emails = ["gone@example.org", "left@example.org", "c@example.org", "d@example.org",
              "e@example.org"]
    news_list(site, "news", emails)
    job = create(site, ["news"])

    membership.unsubscribe(site.data, "news", "left@example.org")  # the public unsubscribe
    path = svc.find_service(site.data, "news").subscribers_path
    assert subs.remove(path, "gone@example.org")  # deleted behind the ledger's back

    site.run_at()
    assert ledger(site, job) == {"gone@example.org": "skipped", "left@example.org": "skipped",
                                 "c@example.org": "sent", "d@example.org": "sent",
                                 "e@example.org": "pending"}
    site.run_at()
    assert sorted(to_of(m) for m in letters(site)) == ["c@example.org", "d@example.org",
                                                       "e@example.org"]
    [report] = reports(site)
    text = report.get_body(("plain",)).get_content()
    assert "Пропущено (адрес отписался или удалён): 2" in text
    assert "Передано почтовому серверу писем: 3" in text


def test_a_recipient_still_in_another_service_of_the_job_gets_the_letter(site):
    """The gate asks for a confirmed subscription to at least one of the job's services; the unsubscribe link names that one."""
    news_list(site, "one", ["both@example.org"])
    news_list(site, "two", ["both@example.org"], db="other")
    create(site, ["one", "two"])
    subs.remove(svc.find_service(site.data, "one").subscribers_path, "both@example.org")

    site.run_at()
    [letter] = letters(site)
    assert "s=two&" in letter["List-Unsubscribe"]


def test_a_job_left_with_only_rows_skipped_by_unsubscribes_is_finished(site):
    """An address that unsubscribes between runs gets no more letters, and a job with nothing pending left is reported and deleted."""
    site.set(news_per_run=1)
    news_list(site, "news", ["a@example.org", "b@example.org"])
    job = create(site, ["news"])
    site.run_at()
    membership.unsubscribe(site.data, "news", "b@example.org")
    site.run_at()
    site.run_at()
    assert [to_of(m) for m in letters(site)] == ["a@example.org"]
    assert job_files(site, job) == [f"{job}.missed"]  # finished; who missed it is kept
    assert len(reports(site)) == 1


# --- the end of a job ---------------------------------------------------------------

def test_a_finished_job_reports_to_the_admin_in_russian_and_its_files_are_deleted(site):
    """When the list is exhausted: a Russian report (handed over, failed, skipped, in doubt, start, end, runs) and the three files gone."""
    site.set(news_per_run=2)
    news_list(site, "news", ["a@example.org", "b@example.org", "c@example.org", "d@example.org",
                             "e@example.org"])
    job = create(site, ["news"], subject="Выпуск 7")
    membership.unsubscribe(site.data, "news", "e@example.org")

    site.run_at()
    assert reports(site) == []
    assert job_files(site, job) == [f"{job}.job", f"{job}.letter", f"{job}.list"]
    site.run_at()  # c and d; e unsubscribed, so nothing is left

    [report] = reports(site)
    assert report["Subject"] == "Выпуск завершён: Выпуск 7"
    text = report.get_body(("plain",)).get_content()
    for line in ("«Выпуск 7» завершён", "Рассылки: news", "Получателей в списке: 5",
                 "Передано почтовому серверу писем: 4", "Не принято сервером при передаче: 0",
                 "Пропущено (адрес отписался или удалён): 1", "Под сомнением", "Начат: 20",
                 "Завершён: 20", "Запусков рассыльщика: 2"):
        assert line in text, line
    assert job_files(site, job) == [f"{job}.missed"]  # who did not get it stays
    assert newsletters.list_jobs(site.data) == []
    assert re.search(rf"newsletter {job} finished: 4 handed over, 0 failed, 1 skipped, 0 in doubt",
                     site.log())
    site.run_at()
    assert len(reports(site)) == 1  # one report per job


def test_a_job_whose_last_rows_are_all_skipped_still_finishes(site):
    """A list that ends in skipped rows is exhausted: report and clean-up happen."""
    site.set(news_per_run=1)
    news_list(site, "news", ["a@example.org", "b@example.org", "c@example.org"])
    job = create(site, ["news"])
    membership.unsubscribe(site.data, "news", "b@example.org")
    membership.unsubscribe(site.data, "news", "c@example.org")
    site.run_at()
    site.run_at()
    assert [to_of(m) for m in letters(site)] == ["a@example.org"]
    assert job_files(site, job) == [f"{job}.missed"]  # who did not get it stays
    assert len(reports(site)) == 1


@pytest.mark.parametrize("lost", ["letter", "list"])
def test_a_job_missing_its_letter_or_list_is_deleted_as_inadequate(site, lost):
    """A job whose .letter or .list is gone is deleted and logged; other jobs go on."""
    news_list(site, "news", ["a@example.org"])
    broken = create(site, ["news"], subject="Broken", start=now() - timedelta(minutes=10))
    good = create(site, ["news"], subject="Good")
    site.data.job(broken, lost).unlink()

    site.run_at()
    assert job_files(site, broken) == []
    assert re.search(rf"newsletter {broken} is inadequate and deleted", site.log())
    assert [m["Subject"] for m in letters(site)] == ["Good"]
    assert job_files(site, good) == []


def test_a_job_whose_services_are_all_gone_is_deleted_as_inadequate(site):
    """A job naming only services that no longer exist is deleted and logged."""
    news_list(site, "news", ["a@example.org"])
    job = create(site, ["news"])
    site.ok("service", "remove", "news")
    site.run_at()
    assert job_files(site, job) == []
    assert "inadequate" in site.log()
    assert letters(site) == []


def test_the_ledger_records_the_lease_of_the_run_that_sent_each_row(site):
    """Sent rows carry the run's lease id and time."""
    site.set(news_per_run=1)
    news_list(site, "news", ["a@example.org", "b@example.org"])
    job = create(site, ["news"])
    report = site.run_at()
    lease = report.splitlines()[0].split()[1]
    [row, pending] = list(newsletters.read_rows(site.data.job(job, "list")))
    assert (row.state.value, row.lease) == ("sent", lease)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row.time)
    assert pending.state.value == "pending"


def test_newsletter_letters_are_personalised_and_carry_the_list_headers(site):
    """Each recipient's letter is rendered with its name and has its own unsubscribe link."""
    news_list(site, "news", ["anna@example.org"])
    create(site, ["news"], subject="For {{ name }}", text="Dear {{ name }}, see {{ unsubscribe_url }}")
    site.run_at()
    [letter] = letters(site)
    assert letter["Subject"] == "For Anna"
    body = letter.get_body(("plain",)).get_content()
    assert "Dear Anna" in body
    link = re.search(r"https://\S+", body).group(0)
    assert re.fullmatch(rf"<{re.escape(link)}>, <mailto:vykhukhol\+n1\w+@lists\.example\.org"
                        r"\?subject=unsubscribe>", letter["List-Unsubscribe"])
    assert letter["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"


# --- sending limits ------------------------------------------------------------------

def test_hourly_limit_counts_newsletter_letters_exactly(site):
    """hourly_limit=4 with news_per_run=50: four newsletter letters in the hour, over two runs."""
    site.set(hourly_limit=4, news_per_run=50)
    news_list(site, "news", [f"u{i}@example.org" for i in range(8)])
    create(site, ["news"])
    hour = now().replace(minute=0, second=0) + timedelta(hours=1)
    site.run_at(hour + timedelta(minutes=1))
    site.run_at(hour + timedelta(minutes=2))
    assert len(letters(site)) == 4
    site.run_at(hour + timedelta(minutes=61))
    assert len(letters(site)) == 8


def test_daily_limit_caps_newsletter_letters_across_runs_of_a_day(site):
    """daily_limit caps letters per day across runs."""
    site.set(daily_limit=3, news_per_run=2)
    news_list(site, "news", [f"u{i}@example.org" for i in range(5)])
    create(site, ["news"])
    day = now().replace(hour=0, minute=0, second=0) + timedelta(days=1)
    site.run_at(day + timedelta(hours=1))
    site.run_at(day + timedelta(hours=2))
    site.run_at(day + timedelta(hours=3))
    assert len(letters(site)) == 3
    site.run_at(day + timedelta(days=1, hours=1))
    assert len(letters(site)) == 5
