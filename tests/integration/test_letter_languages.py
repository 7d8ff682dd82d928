"""Series letters and newsletters in the reader's language
(docs/using/services.md#letter-languages, docs/using/newsletters.md#newsletter-languages):
a Russian site whose letters also exist in English sends each reader the
letter of their own language, with the footer of that language, and everyone
else the site's; a newsletter keeps each reader's language and field values
from the moment it is made, through a ``kill -9`` too. Written through the
command line and sent by real ``vykhukhol cron`` processes to aiosmtpd."""

from __future__ import annotations

import html as html_lib
import os
import re
import signal
import subprocess
import sys
import time
from datetime import timedelta
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from support.servetools import admin_client
from vykhukhol import services as svc
from vykhukhol.mail import compose
from vykhukhol.newsletters import read_rows
from vykhukhol.services import due_summary
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.states import LedgerState, SubscriberState
from vykhukhol.timeutil import now

LIB = Path(__file__).resolve().parents[2] / "lib"
ADMIN = "admin@example.org"
ANNA, BORIS = "anna@example.org", "boris@example.org"  # her language is English; he has none
WHY_EN = 'You receive this letter because you subscribed to "Course".'
WHY_RU = "Вы получили это письмо, потому что подписались на рассылку «Course»."


def reader(site: Any, service: str, email: str, name: str, language: str | None = None,
           **fields: str) -> None:
    """A subscriber confirmed an hour ago, with their own language and field values."""
    back = now() - timedelta(hours=1)
    sub = Subscriber(email, name, SubscriberState.ACTIVE, back, back, ip="127.0.0.1")
    sub = sub.with_language(language).with_fields(dict(fields))
    subs.add(svc.find_service(site.data, service).subscribers_path, sub)
    due_summary.forget_due(site.data, service)  # written behind the sender's back


def received(smtp_server: Any) -> dict[str, list[EmailMessage]]:
    got: dict[str, list[EmailMessage]] = {}
    for letter in list(smtp_server.handler.received):
        for rcpt in letter.rcpt_tos:
            if rcpt != ADMIN:
                got.setdefault(rcpt, []).append(letter.message)
    return got


def text_of(message: EmailMessage) -> str:
    return message.get_body(("plain",)).get_content().replace("\r\n", "\n")


def html_of(message: EmailMessage) -> str:
    return message.get_body(("html",)).get_content().replace("\r\n", "\n")


def cron(site: Any) -> str:
    return site.cli("cron").stdout


def course(site: Any, smtp_server: Any) -> None:
    """A Russian site (the default) whose letter 1 is written in Russian and English."""
    site.use_smtp(smtp_server.port)
    site.service("course", letters=[])
    site.cli("letter", "add", "course", "--subject", "Урок 1", "--delay", "0s",
             "--body", "Здравствуйте, {{ name }}.",
             "--subject-en", "Lesson 1", "--body-en", "Hello, {{ name }}.")
    reader(site, "course", ANNA, "Anna", "en")
    reader(site, "course", BORIS, "Boris")


def test_a_series_letter_goes_in_the_readers_language_with_that_languages_footer(
        site, smtp_server) -> None:
    course(site, smtp_server)
    letters = site.data.root / "services" / "main" / "course" / "letters"
    assert sorted(p.name for p in letters.glob("001*")) == ["001.en.txt", "001.txt"]
    cron(site)
    got = received(smtp_server)
    [anna], [boris] = got[ANNA], got[BORIS]
    assert anna["Subject"] == "Lesson 1" and boris["Subject"] == "Урок 1"
    assert text_of(anna).startswith("Hello, Anna.\n\n-- \n") and WHY_EN in text_of(anna)
    assert text_of(boris).startswith("Здравствуйте, Boris.\n\n-- \n") and WHY_RU in text_of(boris)
    assert WHY_RU not in text_of(anna) and WHY_EN not in text_of(boris)
    # one letter in two languages is one letter of the series
    assert {email: s.sent for email, s in site.subscribers("course").items()} == {ANNA: 1, BORIS: 1}


def test_a_version_written_by_ftp_is_sent_to_the_readers_of_its_language(site, smtp_server) -> None:
    site.use_smtp(smtp_server.port)
    service = site.service("course", letters=[("Урок 1", "0s", "Здравствуйте.")])
    (service.letters_dir / "001.en.txt").write_text(
        "Subject: Lesson 1\nFormat: markdown\n\nHello, **{{ name }}**.\n", encoding="utf-8")
    reader(site, "course", ANNA, "Anna", "en")
    reader(site, "course", BORIS, "Boris", "ru")
    cron(site)
    got = received(smtp_server)
    [anna], [boris] = got[ANNA], got[BORIS]
    assert anna["Subject"] == "Lesson 1" and "<strong>Anna</strong>" in html_of(anna)
    assert WHY_EN in text_of(anna) and "You receive this letter" in html_of(anna)
    assert boris["Subject"] == "Урок 1" and WHY_RU in text_of(boris)


def test_a_reader_whose_language_a_letter_lacks_gets_the_sites_letter_and_footer(
        site, smtp_server) -> None:
    site.use_smtp(smtp_server.port)
    site.service("course", letters=[])
    site.cli("letter", "add", "course", "--subject", "Урок 1", "--delay", "0s",
             "--body", "Здравствуйте.")
    reader(site, "course", ANNA, "Anna", "en")
    cron(site)
    [anna] = received(smtp_server)[ANNA]
    assert anna["Subject"] == "Урок 1" and WHY_RU in text_of(anna)


def test_the_english_footer_is_the_footer_en_file_when_the_site_has_one(site, smtp_server) -> None:
    course(site, smtp_server)
    (site.data.root / "footer.txt").write_text("-- \nПодвал сайта\n", encoding="utf-8")
    (site.data.root / "footer.en.txt").write_text("-- \nThe site's footer\n", encoding="utf-8")
    cron(site)
    got = received(smtp_server)
    assert text_of(got[ANNA][0]).endswith("-- \nThe site's footer\n")
    assert text_of(got[BORIS][0]).endswith("-- \nПодвал сайта\n")


def test_letter_language_writes_and_removes_one_letters_version(site) -> None:
    site.service("course", letters=[("Урок 1", "0s", "Текст."), ("Урок 2", "1d", "Ещё.")])
    site.cli("letter", "language", "course", "2", "en", "--subject", "Lesson 2", "--body", "More.")
    service = svc.find_service(site.data, "course")
    second = svc.load_letters(service)[1]
    assert second.versions["en"].subject == "Lesson 2"
    letter, language = second.for_reader("en")
    assert (letter.subject, letter.body, letter.delay, language) == ("Lesson 2", "More.", 86400, "en")
    assert site.cli("letter", "list", "course").stdout.splitlines()[1:] == [
        "1\t0s\tУрок 1\t-\t-\t-", "2\t1d\tУрок 2\t-\t-\ten"]
    # the version moves with its letter, and goes with it
    site.cli("letter", "remove", "course", "1")
    [first] = svc.load_letters(service)
    assert first.versions["en"].body == "More."
    site.cli("letter", "language", "course", "1", "en", "--remove")
    assert svc.load_letters(service)[0].versions == {}
    assert sorted(p.name for p in service.letters_dir.iterdir() if p.suffix == ".txt") == ["001.txt"]


def test_letter_language_refuses_a_letter_that_cannot_be_made_and_writes_nothing(site) -> None:
    site.service("course", letters=[("Урок 1", "0s", "Текст.")])
    result = site.cli("letter", "language", "course", "1", "en", "--subject", "Lesson 1",
                      "--body", "{% if %}", check=False)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert svc.load_letters(svc.find_service(site.data, "course"))[0].versions == {}


# --- newsletters ---------------------------------------------------------------------


def news(site: Any, smtp_server: Any, *extra: str) -> str:
    """A newsletter to the service "course" (made first, with its readers)."""
    site.use_smtp(smtp_server.port)
    return site.cli("newsletter", "create", "--services", "course", "--subject", "Новости",
                    "--body", "Привет из {{ fields.city }}.", *extra).stdout.split()[0]


def test_a_newsletter_with_a_second_body_sends_each_reader_their_languages(
        site, smtp_server) -> None:
    site.service("course")
    reader(site, "course", ANNA, "Anna", "en", city="Tver")
    reader(site, "course", BORIS, "Boris", city="Тверь")
    job = news(site, smtp_server, "--subject-en", "News", "--body-en",
               "Hello from {{ fields.city }}{{ fields.missing }}.")
    assert site.data.job(job, "en.letter").exists()
    assert (site.data.root / "letters" / f"{job}.en.letter").exists()  # the kept copy
    assert site.data.job(job, "readers").read_text(encoding="utf-8").splitlines()[1:] == [
        "0\tlang=en\tf.city=Tver", "1\tf.city=Тверь"]
    cron(site)
    got = received(smtp_server)
    [anna], [boris] = got[ANNA], got[BORIS]
    assert anna["Subject"] == "News" and boris["Subject"] == "Новости"
    assert text_of(anna).startswith("Hello from Tver.\n\n-- \n")
    assert 'You receive this letter because you subscribed to "Course".' in text_of(anna)
    assert text_of(boris).startswith("Привет из Тверь.\n\n-- \n")
    assert "Вы получили это письмо" in text_of(boris)
    # finished: every file of the job went, its readers' file too
    assert not any(site.data.newsletters.glob(f"{job}.*"))


def test_the_readers_file_is_written_only_when_someone_has_a_language_or_a_value(
        site, smtp_server) -> None:
    site.service("course")
    reader(site, "course", BORIS, "Boris")
    job = news(site, smtp_server)
    assert not site.data.job(job, "readers").exists()
    site.cli("newsletter", "cancel", job)
    assert not any(site.data.newsletters.glob(f"{job}.*"))


def test_cancelling_a_newsletter_removes_its_second_body_and_readers(site, smtp_server) -> None:
    site.service("course")
    reader(site, "course", ANNA, "Anna", "en")
    job = news(site, smtp_server, "--subject-en", "News", "--body-en", "Hello.")
    assert site.data.job(job, "readers").exists() and site.data.job(job, "en.letter").exists()
    site.cli("newsletter", "cancel", job)
    assert not any(site.data.newsletters.glob(f"{job}.*"))
    assert not any((site.data.root / "letters").glob(f"{job}.*"))


def test_a_second_body_that_cannot_be_made_is_refused_and_leaves_nothing(site, smtp_server) -> None:
    site.use_smtp(smtp_server.port)
    site.service("course")
    reader(site, "course", ANNA, "Anna", "en")
    result = site.cli("newsletter", "create", "--services", "course", "--subject", "Новости",
                      "--body", "Привет.", "--subject-en", "News", "--body-en", "{% for %}",
                      check=False)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert not site.data.newsletters.exists() or not any(site.data.newsletters.glob("*.job"))
    assert not (site.data.root / "letters").exists() or not any(
        (site.data.root / "letters").glob("*.letter"))


def _without_varying(data: bytes) -> bytes:
    """A letter less what differs each time it is made (its Message-ID, Date
    and MIME boundary) and the outbox's Return-Path."""
    data = re.sub(rb"(?m)^(Message-ID|Date|Return-Path): .*\r?\n", b"", data)
    for boundary in set(re.findall(rb'boundary="([^"]+)"', data)):
        data = data.replace(boundary, b"BOUNDARY")
    return data


def test_a_newsletter_without_a_second_body_sends_the_same_bytes_as_before(
        site, smtp_server) -> None:
    """A job with one body makes each letter exactly as the plain newsletter
    call does, whatever languages and values its readers have."""
    site.set(mail__from_email="list@example.org")  # the outbox transport keeps the bytes
    site.service("course")
    reader(site, "course", ANNA, "Anna", "en", city="Tver")
    reader(site, "course", BORIS, "Boris")
    job = site.cli("newsletter", "create", "--services", "course", "--subject", "Новости {{ name }}",
                   "--body", "Привет, {{ name }}.", "--html-file", str(_html(site))).stdout.split()[0]
    cron(site)
    service, settings = svc.find_service(site.data, "course"), site.settings()
    sent = {message["To"].addresses[0].addr_spec: path.read_bytes()
            for path, message in zip(sorted(site.data.outbox.glob("*.eml")), site.outbox(),
                                     strict=True)}
    sent.pop(ADMIN)  # the report of the finished job
    assert set(sent) == {ANNA, BORIS}
    for email, name in ((ANNA, "Anna"), (BORIS, "Boris")):
        lease = re.search(rb"(?m)^X-Vykhukhol-Run: (\S+)", sent[email])
        assert lease, sent[email][:400]
        made = compose.newsletter(service, "Новости {{ name }}", "Привет, {{ name }}.",
                                  "<p>Привет, {{ name }}.</p>\n", settings, email, name,
                                  lease.group(1).decode(), now(), job=job)
        assert _without_varying(sent[email]) == _without_varying(made.data)


def _html(site: Any) -> Path:
    path = site.root.parent / "letter.html"
    path.write_text("<p>Привет, {{ name }}.</p>\n", encoding="utf-8")
    return path


# --- kill -9 mid-newsletter ------------------------------------------------------------


def _env() -> dict[str, str]:
    values = dict(os.environ)
    values["PYTHONPATH"] = str(LIB) + os.pathsep + values.get("PYTHONPATH", "")
    values.pop("VYKHUKHOL_DATA", None)
    return values


def test_a_newsletter_killed_midway_keeps_each_readers_choice_after_they_change_it(
        site, smtp_server) -> None:
    """The body is chosen from the snapshot made with the job: a run killed
    midway, a reader who changes their language meanwhile, and the rest still
    get the body they were due, each once."""
    site.use_smtp(smtp_server.port)
    site.service("course")
    emails = [f"r{i:02}@example.org" for i in range(16)]
    for i, email in enumerate(emails):
        reader(site, "course", email, f"R{i}", "en" if i % 2 else None)
    site.set(news_per_run=500)
    job = site.cli("newsletter", "create", "--services", "course", "--subject", "Новости",
                   "--body", "Привет.", "--subject-en", "News", "--body-en",
                   "Hello.").stdout.split()[0]
    smtp_server.handler.data_delay = 0.5
    victim = subprocess.Popen([sys.executable, "-m", "vykhukhol", "--data", str(site.root), "cron"],
                              env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while len(list(smtp_server.handler.received)) < 3:
            assert time.monotonic() < deadline and victim.poll() is None, "no letters went"
            time.sleep(0.02)
        time.sleep(0.15)
        os.kill(victim.pid, signal.SIGKILL)
    finally:
        victim.wait(10)
        victim.stdout.close()
        victim.stderr.close()
    time.sleep(0.3)
    assert 3 <= len(list(smtp_server.handler.received)) < len(emails)  # killed midway
    smtp_server.handler.data_delay = 0.0
    # Everyone now says the other language: the letters already chosen stay so.
    path = svc.find_service(site.data, "course").subscribers_path
    subs.rewrite(path, lambda sub: sub.with_language(None if sub.language else "en"))
    site.cli("mode", "debug")
    site.cli("mode", "working")
    for _ in range(3):
        cron(site)
        if not site.data.job(job, "job").exists():
            break
    got = received(smtp_server)
    assert set(got) <= set(emails) and max(len(letters) for letters in got.values()) == 1
    assert len(got) >= len(emails) - 1  # at most the one in flight at the kill, in doubt
    for email, [message] in got.items():
        english = int(email[1:3]) % 2 == 1
        assert message["Subject"] == ("News" if english else "Новости"), email
        assert text_of(message).startswith("Hello." if english else "Привет.")
    assert not site.data.job(job, "readers").exists()


def test_the_ledger_keeps_its_format_beside_the_readers_file(site, smtp_server) -> None:
    site.service("course")
    reader(site, "course", ANNA, "Anna", "en", city="Tver")
    job = news(site, smtp_server)
    [row] = read_rows(site.data.job(job, "list"))
    assert (row.email, row.name, row.state) == (ANNA, "Anna", LedgerState.PENDING)
    assert site.data.job(job, "list").read_text(encoding="utf-8").splitlines()[1] == \
        f"{ANNA}\tAnna\tpending\t-\t-\t-"


# --- the admin's forms -----------------------------------------------------------------


@pytest.fixture
def admin(site):
    """The admin of a Russian site: its letters' other language is English."""
    request = admin_client(site)

    def page(path: str, fields: dict | None = None) -> tuple[int, str]:
        """A POST of ``fields``, or a GET without them."""
        status, _, text = request("GET", path) if fields is None else request("POST", path, fields)
        return status, text

    return page


def shown(page: str, preview_id: str) -> tuple[str, str]:
    """(subject, text) a preview of the page shows."""
    subject = re.search(rf'<strong id="{preview_id}-subject">(.*?)</strong>', page, re.S)
    text = re.search(rf'<pre id="{preview_id}-text"[^>]*>(.*?)</pre>', page, re.S)
    assert subject and text, page
    return html_lib.unescape(subject.group(1)), html_lib.unescape(text.group(1))


def test_the_admins_letter_form_previews_and_saves_the_letter_in_english_too(site, admin) -> None:
    service = site.service("course", letters=[])
    status, page = admin("/services/course/letters/new")
    assert status == 200 and 'id="other_subject"' in page and "На английском" in page
    letter = {"subject": "Урок {{ name }}", "delay": "0s", "body": "Здравствуйте.", "html": "",
              "other_subject": "Lesson {{ name }}", "other_body": "Hello.", "other_html": ""}
    status, page = admin("/services/course/letters", {**letter, "action": "preview"})
    assert status == 200
    subject, text = shown(page, "preview")
    assert subject.startswith("Урок ") and WHY_RU in text
    subject, text = shown(page, "preview-other")
    assert subject.startswith("Lesson ") and text.startswith("Hello.\n\n-- \n")
    assert WHY_EN in text
    status, _ = admin("/services/course/letters", {**letter, "action": "save"})
    assert status == 303
    [saved] = svc.load_letters(service)
    assert saved.subject == "Урок {{ name }}" and saved.versions["en"].subject == "Lesson {{ name }}"
    status, page = admin("/services/course/letters/1")
    assert status == 200 and 'value="Lesson {{ name }}"' in html_lib.unescape(page)
    # an English version that cannot be made: refused, the letter unchanged
    status, page = admin("/services/course/letters/1",
                         {**letter, "other_body": "{% if %}", "action": "save"})
    assert status == 400
    assert svc.load_letters(service)[0].versions["en"].body == "Hello."
    # emptied on the form: the English version goes
    status, _ = admin("/services/course/letters/1", {**letter, "other_subject": "", "other_body": "",
                                                     "action": "save"})
    assert status == 303 and svc.load_letters(service)[0].versions == {}
    assert not (service.letters_dir / "001.en.txt").exists()


def test_the_admins_newsletter_form_previews_both_bodies_and_creates_the_job_with_both(
        site, admin) -> None:
    site.service("course")
    reader(site, "course", ANNA, "Anna", "en")
    letter = {"svc_course": "1", "subject": "Новости", "text": "Привет.", "html": "",
              "other_subject": "News", "other_body": "Hello.", "other_html": ""}
    status, page = admin("/newsletters/new", {**letter, "action": "preview"})
    assert status == 200
    assert shown(page, "preview")[0] == "Новости"
    subject, text = shown(page, "preview-other")
    assert subject == "News" and WHY_EN in text
    status, _ = admin("/newsletters/new", {**letter, "action": "create"})
    assert status == 303
    [job] = [path.stem for path in site.data.newsletters.glob("*.job")]
    assert site.data.job(job, "en.letter").read_text(encoding="utf-8") == "Subject: News\n\nHello."
    assert site.data.job(job, "readers").exists()


def test_erasing_an_address_forgets_what_a_waiting_newsletter_kept_of_them(site, smtp_server) -> None:
    from vykhukhol.members import personal

    site.service("course")
    reader(site, "course", ANNA, "Anna", "en", city="Tver")
    reader(site, "course", BORIS, "Boris", "ru")
    job = news(site, smtp_server, "--at", "2099-01-01 09:00")
    settings = site.settings()
    [row] = personal.export(site.data, settings, ANNA, now())["newsletter_rows"]
    assert (row["language"], row["fields"]) == ("en", {"city": "Tver"})
    personal.erase(site.data, settings, ANNA, now())
    assert site.data.job(job, "readers").read_text(encoding="utf-8").splitlines()[1:] == ["1\tlang=ru"]
    personal.erase(site.data, settings, BORIS, now())
    assert not site.data.job(job, "readers").exists()


def test_a_waiting_newsletters_letter_in_english_is_changed_or_removed_on_its_edit_page(
        site, admin) -> None:
    site.service("course")
    reader(site, "course", ANNA, "Anna", "en")
    job = site.cli("newsletter", "create", "--services", "course", "--subject", "Новости",
                   "--body", "Привет.", "--subject-en", "News", "--body-en", "Hello.",
                   "--at", "2099-01-01 09:00").stdout.split()[0]
    status, page = admin(f"/newsletters/{job}/edit")
    assert status == 200 and 'value="News"' in page and "Hello.</textarea>" in page
    letter = {"subject": "Новости", "text": "Привет.", "html": "",
              "other_subject": "More news", "other_body": "Hello again.", "other_html": ""}
    status, page = admin(f"/newsletters/{job}/edit", {**letter, "action": "preview"})
    assert status == 200 and shown(page, "preview-other")[0] == "More news"
    status, _ = admin(f"/newsletters/{job}/edit", {**letter, "action": "save"})
    assert status == 303
    assert site.data.job(job, "en.letter").read_text(encoding="utf-8") == \
        "Subject: More news\n\nHello again."
    assert "Hello again." in (site.data.root / "letters" / f"{job}.en.letter").read_text("utf-8")
    status, _ = admin(f"/newsletters/{job}/edit", {**letter, "other_subject": "", "other_body": "",
                                                   "action": "save"})
    assert status == 303 and not site.data.job(job, "en.letter").exists()
    assert not (site.data.root / "letters" / f"{job}.en.letter").exists()


def test_a_job_whose_readers_file_cannot_be_written_leaves_no_file_behind(
        site, monkeypatch) -> None:
    from vykhukhol import newsletters
    from vykhukhol.errors import StorageError

    site.service("course")
    reader(site, "course", ANNA, "Anna", "en")

    def full_disk(*args: object) -> None:
        raise StorageError("No space left on device")

    monkeypatch.setattr(newsletters.snapshot, "write_readers", full_disk)
    with pytest.raises(StorageError):
        newsletters.create(site.data, ["course"], "Новости", "Привет.",
                           versions={"en": ("News", "Hello.", None)})
    assert not any(site.data.newsletters.glob("*.*letter")) and not any(
        site.data.newsletters.glob("*.list"))
    assert not any((site.data.root / "letters").glob("*.letter"))


def test_the_admins_test_letter_of_a_letter_in_two_languages_is_two_letters(site, admin) -> None:
    """Each says the language it is in and has that language's footer; a letter in
    one language is one test letter, as before."""
    site.service("course", letters=[])
    letter = {"subject": "Урок {{ name }}", "delay": "0s", "body": "Здравствуйте.", "html": "",
              "other_subject": "Lesson {{ name }}", "other_body": "Hello.", "other_html": "",
              "test_to": "owner@example.org", "action": "test"}
    status, page = admin("/services/course/letters", letter)
    assert status == 200 and "Русский: " in page and "English: " in page, page
    russian, english = site.outbox()
    assert str(russian["Subject"]) == "[тест: Русский] Урок Иван"
    assert str(english["Subject"]) == "[тест: English] Lesson Иван"
    assert text_of(english).startswith("Hello.\n\n-- \n") and WHY_EN in text_of(english)
    assert WHY_RU in text_of(russian) and str(english["To"]) == "owner@example.org"
    # a version that cannot be made: refused, nothing sent
    status, _ = admin("/services/course/letters", {**letter, "other_body": "{% if %}"})
    assert status == 400 and len(site.outbox()) == 2
    status, _ = admin("/services/course/letters", {**letter, "other_subject": "", "other_body": ""})
    assert status == 200 and str(site.outbox()[-1]["Subject"]) == "[тест] Урок Иван"

    news = {"svc_course": "1", "subject": "Новости", "text": "Привет.", "html": "",
            "other_subject": "News", "other_body": "Hello from {{ name }}.", "other_html": "",
            "test_to": "owner@example.org", "action": "test"}
    status, page = admin("/newsletters/new", news)
    assert status == 200, page
    russian, english = site.outbox()[-2:]
    assert str(russian["Subject"]) == "[тест: Русский] Новости"
    assert str(english["Subject"]) == "[тест: English] News"
    assert text_of(english).startswith("Hello from Иван.\n\n-- \n") and WHY_EN in text_of(english)
    status, _ = admin("/newsletters/new", {**news, "other_subject": ""})
    assert status == 400 and len(site.outbox()) == 5
    assert not list(site.data.newsletters.glob("*.job"))


def test_the_owner_adds_a_subscriber_with_their_language_from_the_command_line(site) -> None:
    """`subscriber add --language en` on a Russian site: the line keeps it, and the
    confirmation request speaks it; a language the site does not know is refused."""
    site.service("course", letters=[])
    site.cli("subscriber", "add", "course", "vera@example.org", "--language", "en")
    [request] = [m for m in site.outbox() if "vera@example.org" in str(m["To"])]
    assert str(request["Subject"]) == "Please confirm your subscription: Course"
    site.cli("subscriber", "add", "course", "gleb@example.org", "--language", "ru", "--confirmed")
    site.cli("subscriber", "add", "course", "ivan@example.org", "--confirmed")
    lines = {sub.email: sub for sub in subs.subscribers(
        svc.find_service(site.data, "course").subscribers_path)}
    assert lines["vera@example.org"].language == "en" and lines["gleb@example.org"].language == "ru"
    assert lines["ivan@example.org"].language is None
    refused = site.cli("subscriber", "add", "course", "x@example.org", "--language", "xx", check=False)
    assert refused.returncode == 2 and "--language" in refused.stderr and "'en'" in refused.stderr
    assert "x@example.org" not in lines and "x@example.org" not in (
        svc.find_service(site.data, "course").subscribers_path.read_text(encoding="utf-8"))


def test_the_admin_adds_a_subscriber_with_their_language(site, admin) -> None:
    """The Subscribers page's add form: the language chosen is stored and the
    confirmation request speaks it; anything else is refused, nothing stored."""
    service = site.service("course", letters=[])
    status, page = admin("/services/course/subscribers")
    assert status == 200 and 'name="language"' in page and "Язык сайта" in page, page
    status, _ = admin("/services/course/subscribers", {"email": "vera@example.org",
                                                       "language": "en", "confirmed": "no"})
    assert status == 303
    [request] = [m for m in site.outbox() if "vera@example.org" in str(m["To"])]
    assert str(request["Subject"]) == "Please confirm your subscription: Course"
    status, page = admin("/services/course/subscribers", {"email": "gleb@example.org",
                                                          "language": "de", "confirmed": "yes"})
    assert status == 400 and "язык de: укажите один из ru, en" in page, page
    lines = {sub.email: sub for sub in subs.subscribers(service.subscribers_path)}
    assert lines["vera@example.org"].language == "en" and "gleb@example.org" not in lines
    status, _ = admin("/services/course/subscribers", {"email": "ivan@example.org", "language": "",
                                                       "confirmed": "yes"})
    assert status == 303
    assert subs.find(service.subscribers_path, "ivan@example.org").language is None
