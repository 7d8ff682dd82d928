"""The admin in a real browser (docs/using/admin.md#admin): headless Chromium against a
``vykhukhol serve`` subprocess, pressing the buttons a site owner presses.

Each test opens with the behaviour it pins. Mail goes to the outbox folder;
the sender runs as ``vykhukhol cron`` in a subprocess, as a crontab would
start it. Screenshots of every main page land in ``tests/artifacts/``.
"""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from support.adminkit import (
    assert_no_script,
    job_rows,
    local_input,
    newest_letter,
    outbox_letters,
    text_of,
)
from support.webkit import wait_for
from vykhukhol import newsletters
from vykhukhol import services as svc
from vykhukhol.timeutil import now

SCRIPT_NAME = "<script>alert(1)</script>"
LOGIN = "/admin/login"
PAGES = ["/admin/", "/admin/settings", "/admin/services", "/admin/newsletters", "/admin/outbox"]
COOKIE = "vykhukhol_session"


# --- helpers ------------------------------------------------------------------------


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a redirect is the answer under test: hand it back as it is


def fetch(url: str, form: dict[str, str] | None = None,
          cookie: str | None = None) -> tuple[int, dict[str, str], str]:
    """(status, headers, body) of one plain request; POST when ``form`` is given.
    No browser, no redirects followed, no proxy."""
    request = urllib.request.Request(url, data=urlencode(form).encode() if form is not None else None,
                                     method="POST" if form is not None else "GET")
    if form is not None:
        request.add_header("Content-Type", "application/x-www-form-urlencoded")
    if cookie:
        request.add_header("Cookie", cookie)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as answer:
        return answer.code, dict(answer.headers), answer.read().decode(errors="replace")


# --- the whole story ----------------------------------------------------------------


def test_an_owner_builds_a_series_in_the_browser_and_a_confirmed_subscriber_gets_letter_one(
        site, server, browser):
    """Log in, create a DB, a service and two previewed letters, enable it; a visitor subscribes and confirms in the browser; after a mode round trip a run sends letter 1, read in the Outbox page."""
    b = browser
    b.log_in()
    assert b.path == "/admin/"
    assert "Log out" in b.text("header")

    b.open("/admin/services")
    b.fill("#db-name", "main")
    b.press("#create-db")
    assert "DB main created." in b.flash()
    b.fill("#svc-name", "news")
    Select(b.find("#svc-db")).select_by_visible_text("main")
    b.fill("#svc-title", "Weekly news")
    b.fill("#svc-from-email", "news@example.org")
    b.press("#create-service")
    assert b.path == "/admin/services/news"
    assert "Service news created" in b.flash()
    assert b.text("#enabled-state") == "Disabled"

    letters = [("Lesson 1 for {{ name }}", "0s", "Hello {{ name }}, this is lesson one.",
                "Lesson 1 for Ivan", "Hello Ivan, this is lesson one."),
               ("Lesson 2 for {{ name }}", "2d", "Lesson two, {{ name }}.",
                "Lesson 2 for Ivan", "Lesson two, Ivan.")]
    for number, (subject, delay, body, shown_subject, shown_body) in enumerate(letters, 1):
        b.press("#add-letter")
        b.fill("#subject", subject)
        b.fill("#delay", delay)
        b.fill("#body", body)
        b.press("#preview-letter")
        preview = b.text("#preview")
        assert shown_subject in preview and shown_body in preview, preview
        assert b.find("#subject").get_attribute("value") == subject  # the typed text survives
        assert svc.load_letters(svc.find_service(site.data, "news"))[number - 1:] == []
        if number == 1:
            b.screenshot("letter-preview-en")
        b.press("#save-letter")
        assert f"Letter {number} added." in b.flash()
    rows = b.text("#letters")
    assert "Lesson 1 for {{ name }}" in rows and "Lesson 2 for {{ name }}" in rows

    b.press("#toggle-service")
    assert b.flash() == "Enabled."
    assert b.text("#enabled-state") == "Enabled"
    assert svc.find_service(site.data, "news").enabled

    reader = "reader@example.net"
    b.open("/cgi/subscribe.py?service=news")
    b.fill("#email", reader)
    b.fill("#name", "Reader")
    b.screenshot("subscribe-en")
    time.sleep(2.1)  # a person's pace: a form posted faster than 2 s is a bot's
    b.press("form button[type=submit]")
    assert "Check your mailbox" in b.text()
    assert wait_for(lambda: reader in site.subscribers("news"))  # stored after the answer
    assert site.subscribers("news")[reader].state.value == "new"

    request = text_of(newest_letter(site, reader))
    [link] = re.findall(rf"{re.escape(server.url)}/cgi/confirm\.py\?\S+", request)
    b.open(link)
    assert "Confirm your subscription" in b.text()
    b.screenshot("confirm-en")
    assert site.subscribers("news")[reader].state.value == "new"  # opening the link changes nothing
    b.press("form button[type=submit]")
    assert "Subscription confirmed" in b.text()
    assert site.subscribers("news")[reader].state.value == "active"

    b.open("/admin/")
    assert b.text("#mode") == "working"
    b.press("#mode-switch")
    assert b.text("#mode") == "debug (no letter goes to subscribers)"
    assert "Mode: debug." in b.flash()
    assert site.settings()["mode"] == "debug"
    b.press("#mode-switch")
    assert b.text("#mode") == "working"
    assert "Mode: working." in b.flash()
    assert site.settings()["mode"] == "working"

    site.cli("cron")
    b.open("/admin/outbox")
    b.press(b.link("Lesson 1 for Reader"))
    letter = b.text("#letter-text")
    assert "Hello Reader, this is lesson one." in letter
    assert reader in b.text("table")
    b.screenshot("outbox-series-letter-en")
    subjects = [m["Subject"] for m in outbox_letters(site, reader)]
    assert subjects[-1] == "Lesson 1 for Reader"
    assert "Lesson 2 for Reader" not in subjects  # its two days have not passed
    assert site.subscribers("news")[reader].sent == 1


def test_a_letter_to_all_users_shows_its_progress_and_a_waiting_one_can_be_cancelled(
        site, server, browser):
    """A newsletter made in the browser shows sent 1 / 2 after one run and is gone after the last, with a report mailed; a job set for later disappears when cancelled."""
    site.service("news")
    site.subscriber("news", "ann@example.net", "Ann")
    site.subscriber("news", "bob@example.net", "Bob")
    site.set(news_per_run=1)
    b = browser
    b.log_in()

    b.open("/admin/newsletters/new")
    b.find("input[name='svc_news']").click()
    b.fill("#subject", "Big news")
    b.fill("#text", "Hello {{ name }}, big news.")
    b.press("#preview-newsletter")
    assert "Hello Ivan, big news." in b.text("#preview")
    assert b.find("input[name='svc_news']").is_selected()
    b.screenshot("newsletter-preview-en")
    b.press("#create-newsletter")
    assert b.path == "/admin/newsletters"
    assert "Newsletter" in b.flash() and "created" in b.flash()
    [row] = job_rows(b)
    job = row.get_attribute("id")[len("job-"):]
    assert "handed over 0 / 2" in row.find_element(By.CSS_SELECTOR, ".progress").text

    site.cli("cron")
    b.reload()
    [row] = job_rows(b)
    assert "handed over 1 / 2" in row.find_element(By.CSS_SELECTOR, ".progress").text
    b.screenshot("newsletters-progress-en")

    site.cli("cron")
    b.reload()
    assert job_rows(b) == []
    assert "No newsletter is waiting or being handed over" in b.text()
    for reader, name in (("ann@example.net", "Ann"), ("bob@example.net", "Bob")):
        letter = newest_letter(site, reader)
        assert letter["Subject"] == "Big news" and f"Hello {name}, big news." in text_of(letter)
    report = newest_letter(site, site.settings()["admin_email"])
    # The site speaks English, so does its report.
    assert report["Subject"] == "Newsletter finished: Big news"
    assert "Letters handed over to the mail server: 2" in text_of(report)

    later = now() + timedelta(days=2)
    b.open("/admin/newsletters/new")
    b.find("input[name='svc_news']").click()
    b.fill("#subject", "Later news")
    b.fill("#text", "Not yet, {{ name }}.")
    b.set_value("#at", local_input(site, later))
    b.press("#create-newsletter")
    [row] = job_rows(b)
    waiting = row.get_attribute("id")[len("job-"):]
    assert waiting != job
    assert "(waiting)" in row.text
    assert row.find_element(By.CSS_SELECTOR, "input[name='at']").get_attribute("value") == \
        local_input(site, later)
    b.press(row.find_element(By.CSS_SELECTOR, "button.danger"))
    b.press("#confirm-delete")  # Cancel asks first
    assert f"Newsletter {waiting} cancelled." in b.flash()
    assert job_rows(b) == []
    assert newsletters.list_jobs(site.data) == []
    site.cli("cron")
    assert not [m for m in outbox_letters(site) if m["Subject"] == "Later news"]


# --- safety ------------------------------------------------------------------------


def test_a_subscriber_named_like_a_script_shows_as_text_everywhere(site, server, browser):
    """A subscriber added in the admin with the name <script>alert(1)</script> appears as that literal text on the subscribers page, in a search and in the outbox, and nothing runs."""
    site.service("news")
    evil = "evil@example.net"
    b = browser
    b.log_in()
    b.open("/admin/services/news/subscribers")
    b.fill("#add-email", evil)
    b.fill("#add-name", SCRIPT_NAME)
    b.press("#add-subscriber")
    assert b.flash() == "Added."
    assert site.subscribers("news")[evil].name == SCRIPT_NAME
    assert SCRIPT_NAME in b.text("#subscribers")
    assert_no_script(b)
    b.screenshot("subscribers-script-name-en")

    b.fill("input[name='q']", "<script>")
    b.press("form.box button[type=submit]")
    assert SCRIPT_NAME in b.text("#subscribers")
    assert b.find("input[name='q']").get_attribute("value") == "<script>"
    assert_no_script(b)

    b.open("/admin/outbox")  # the confirmation request went to the address, name and all
    assert_no_script(b)
    row = [r for r in b.all("#outbox tr") if evil in r.text]
    assert row, b.text()
    assert SCRIPT_NAME in row[0].text
    b.press(row[0].find_element(By.TAG_NAME, "a"))
    assert SCRIPT_NAME in b.text("table")
    assert_no_script(b)


def test_a_post_without_a_valid_csrf_token_changes_nothing(site, server, browser):
    """With a valid session cookie, a POST to /admin/mode with a wrong or missing CSRF token is refused with 403 and settings.ini stays byte for byte the same; the page's own token works."""
    b = browser
    b.log_in()
    b.open("/admin/")
    [session] = [c for c in b.driver.get_cookies() if c["name"] == COOKIE]
    assert session["httpOnly"] is True and session["sameSite"] == "Strict"
    cookie = f"{COOKIE}={session['value']}"
    before = site.data.settings.read_bytes()

    for form in ({"mode": "debug", "csrf": "0" * 64}, {"mode": "debug", "csrf": ""},
                 {"mode": "debug"}):
        status, _, body = fetch(server.url + "/admin/mode", form, cookie)
        assert status == 403, (form, body[:500])
    assert site.data.settings.read_bytes() == before

    # In the browser: the same form with its hidden token tampered with.
    b.driver.execute_script("document.querySelector(\"form[action$='/mode'] input[name='csrf']\").value = 'forged';")
    b.press("#mode-switch")
    assert "Error" in b.text("h1")
    assert site.data.settings.read_bytes() == before
    b.open("/admin/")
    assert b.text("#mode") == "working"

    b.open("/admin/")
    token = b.find("input[name='csrf']").get_attribute("value")
    status, headers, _ = fetch(server.url + "/admin/mode", {"mode": "debug", "csrf": token}, cookie)
    assert status == 303, "the cookie was good: only the token could have been refused"
    assert site.settings()["mode"] == "debug"


def test_a_refused_admin_form_tells_the_owner_what_to_do(site, server, browser):
    """A form sent with a stale CSRF token answers "The form has expired; open the page again.", and one sent after the session ended answers "Your session has ended; log in again." (the admin's own messages), not a bare "Access denied."."""
    b = browser
    b.log_in()
    b.open("/admin/")
    b.driver.execute_script("document.querySelector(\"form[action$='/mode'] input[name='csrf']\").value = 'stale';")
    b.press("#mode-switch")
    expired = b.text("main")

    b.open("/admin/")
    b.driver.delete_cookie(COOKIE)  # the session ran out while the page stayed open
    b.press("#mode-switch")
    ended = b.text("main")
    assert site.settings()["mode"] == "working"
    assert "The form has expired; open the page again." in expired, expired
    assert "Your session has ended; log in again." in ended, ended


def test_five_wrong_passwords_lock_the_login_even_for_the_right_password(site, server, browser):
    """Five wrong passwords in a row lock the login: the sixth attempt, with the right password, is refused with the lock-out message and no session."""
    b = browser
    for attempt in range(5):
        b.log_in(f"wrong-password-{attempt}")
        assert b.text("[role=alert]") == "Wrong password.", attempt
    b.log_in()
    assert b.text("[role=alert]") == "Too many wrong passwords. Try again in 15 minutes."
    assert b.path == LOGIN
    assert not [c for c in b.driver.get_cookies() if c["name"] == COOKIE]
    b.screenshot("login-locked-en")
    b.open("/admin/")
    assert b.path == LOGIN


def test_no_admin_page_answers_without_a_session(site, server, browser):
    """Without a session cookie (or with a made-up one) every admin page redirects to the login, and every admin POST is refused with 403 and changes nothing."""
    site.service("news", enabled=False)
    before = site.data.settings.read_bytes()
    for cookie in (None, f"{COOKIE}=made-up-session-id"):
        for path in PAGES:
            status, headers, body = fetch(server.url + path, cookie=cookie)
            assert status == 303, (path, cookie, status)
            assert headers["Location"] == LOGIN, (path, headers)
            assert "news" not in body
        posts = {"/admin/mode": {"mode": "debug"},
                 "/admin/settings": {"language": "ru"},
                 "/admin/dbs": {"db": "intruder"},
                 "/admin/services": {"name": "intruder", "db": "main", "title": "x"},
                 "/admin/services/news/enable": {},
                 "/admin/newsletters/new": {"svc_news": "1", "subject": "s", "text": "t"},
                 "/admin/logout": {}}
        for path, form in posts.items():
            status, _, _ = fetch(server.url + path, {**form, "csrf": "0" * 64}, cookie)
            assert status == 403, (path, cookie, status)
    assert site.data.settings.read_bytes() == before
    assert svc.list_dbs(site.data) == ["main"]
    assert [s.name for s in svc.load_services(site.data)] == ["news"]
    assert not svc.find_service(site.data, "news").enabled
    assert newsletters.list_jobs(site.data) == []

    for path in PAGES:
        browser.open(path)
        assert browser.path == LOGIN, path
        assert browser.find("#password")


# --- languages ---------------------------------------------------------------------


TEXTS = {"en": ["Status", "Settings", "Services", "Newsletters", "Outbox", "Log out"],
         "ru": ["Состояние", "Настройки", "Рассылки", "Выпуски", "Исходящие", "Выйти"]}


def _screenshots(b: Any, lang: str) -> list[Path]:
    shots = []
    for name, path in (("status", "/admin/"), ("settings", "/admin/settings"),
                       ("services", "/admin/services"), ("service", "/admin/services/news"),
                       ("letter", "/admin/services/news/letters/1"),
                       ("subscribers", "/admin/services/news/subscribers"),
                       ("newsletter-new", "/admin/newsletters/new"),
                       ("newsletters", "/admin/newsletters"), ("outbox", "/admin/outbox")):
        b.open(path)
        assert b.path == path, f"{path} led to {b.path}"
        assert "Traceback" not in b.text()
        shots.append(b.screenshot(f"{name}-{lang}"))
    b.open("/admin/outbox")
    b.press("#outbox a")
    shots.append(b.screenshot(f"outbox-letter-{lang}"))
    return shots


def test_the_admin_renders_in_english_and_in_russian_when_the_language_is_switched(
        site, server, browser):
    """Switching the language field on the Settings page turns every admin page English, then Russian, and leaves the other settings as they were."""
    site.service("news", letters=[("Lesson 1 for {{ name }}", "0s", "Hello {{ name }}."),
                                  ("Lesson 2", "3d", "More.")])
    site.subscriber("news", "ann@example.net", "Ann", sent=1)
    site.subscribe("news", "new@example.net", name="Newcomer")  # a letter in the outbox
    newsletters.create(site.data, ["news"], "Spring news", "Hello {{ name }}.",
                       start=now() + timedelta(days=3))
    site.set(language="ru")
    before = dict(site.settings().raw)
    b = browser
    b.open(LOGIN)
    assert "Вход" in b.text()
    b.screenshot("login-ru")
    b.log_in()

    for lang in ("en", "ru"):
        b.open("/admin/settings")
        assert b.find("#language").get_attribute("value") != lang
        b.fill("#language", lang)
        b.press("#save-settings")
        assert site.settings()["language"] == lang
        assert b.find("html").get_attribute("lang") == lang
        # The message is written before the new language applies: accept either.
        assert b.flash() in ("Settings saved.", "Настройки сохранены."), b.flash()
        header = b.text("header")
        for text in TEXTS[lang]:
            assert text in header, (lang, text, header)
        for other in TEXTS["ru" if lang == "en" else "en"]:
            assert other not in header, (lang, other, header)
        _screenshots(b, lang)

    after = site.settings().raw
    changed = {k: (before.get(k), v) for k, v in after.items() if before.get(k, v) != v}
    assert changed == {}, "saving the language changed other settings"
