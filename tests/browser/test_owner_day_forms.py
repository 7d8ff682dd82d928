"""The owner's day in Chromium: forms
that create or send are one-time (Back and the button again shows what the
first press made), Cancel asks first, test letters of any letter to a typed
address, a waiting newsletter's letter edited until its first letter leaves,
a cancelled one shown as cancelled. Screenshots in tests/artifacts/."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from selenium.webdriver.common.by import By

from support.adminkit import job_rows, local_input, outbox_letters, text_of
from vykhukhol import newsletters
from vykhukhol.newsletters import history
from vykhukhol.timeutil import now


def _new_newsletter(b: Any, subject: str, text: str, at: str = "") -> None:
    b.open("/admin/newsletters/new")
    b.find("input[name='svc_news']").click()
    b.fill("#subject", subject)
    b.fill("#text", text)
    if at:
        b.set_value("#at", at)


def test_back_and_create_again_makes_no_second_newsletter(site, server, browser):
    """Create, Back, Create: one job; the second press says what the first made."""
    site.service("news")
    site.subscriber("news", "ann@example.net", "Ann")
    b = browser
    b.log_in()
    _new_newsletter(b, "Once only", "Hello {{ name }}.", local_input(site, now() + timedelta(days=1)))
    b.press("#create-newsletter")
    assert b.path == "/admin/newsletters" and "created" in b.flash()
    [job] = newsletters.list_jobs(site.data)

    b.driver.back()
    b._loaded()
    assert b.path == "/admin/newsletters/new"
    assert b.find("#subject").get_attribute("value") == "Once only", "the form as it was typed"
    b.press("#create-newsletter")
    assert [j.name for j in newsletters.list_jobs(site.data)] == [job.name]
    assert "sent already" in b.flash() and f"Newsletter {job.name} created." in b.flash()
    b.screenshot("once-second-create-en")


def test_cancel_asks_first_and_keep_it_keeps_the_newsletter(site, server, browser):
    site.service("news")
    site.subscriber("news", "ann@example.net", "Ann")
    b = browser
    b.log_in()
    _new_newsletter(b, "Maybe later", "Hello.", local_input(site, now() + timedelta(days=1)))
    b.press("#create-newsletter")
    [row] = job_rows(b)
    b.press(row.find_element(By.CSS_SELECTOR, "button.danger"))
    assert b.path.endswith("/cancel") and "Maybe later" in b.text(".warn")
    b.screenshot("newsletter-cancel-asks-en")
    b.press("#cancel")  # "Keep it"
    assert len(newsletters.list_jobs(site.data)) == 1
    [row] = job_rows(b)
    b.press(row.find_element(By.CSS_SELECTOR, "button.danger"))
    b.press("#confirm-delete")
    assert newsletters.list_jobs(site.data) == []
    [entry] = history.entries(site.data)
    assert entry.cancelled
    cells = b.find(f"#history-{entry.job}").text
    assert "cancelled" in cells and "never started" in cells
    b.screenshot("newsletter-cancelled-history-en")


def test_a_test_of_an_unsaved_letter_goes_to_the_typed_address_marked_and_for_the_sample(
        site, server, browser):
    """A new series letter, never saved, and a newsletter not yet created: each test
    goes to the address typed on the form, "[test]" before the subject, Ivan's
    variables; the form keeps what was typed and nothing is saved."""
    site.service("course")
    site.service("news")
    b = browser
    b.log_in()
    b.open("/admin/services/course/letters/new")
    b.fill("#subject", "Lesson for {{ name }}")
    b.fill("#body", "Hello {{ name }} <{{ email }}>.")
    b.fill("#test_to", "tester@example.com")
    b.press("#test-letter")
    assert "the test letter to tester@example.com was not sent, it is on the Outbox page" in b.flash()
    assert b.find("#subject").get_attribute("value") == "Lesson for {{ name }}"
    b.screenshot("test-letter-unsaved-en")
    [letter] = outbox_letters(site, "tester@example.com")
    assert letter["Subject"] == "[test] Lesson for Ivan"
    assert "Hello Ivan <ivan@test.invalid>." in text_of(letter)
    assert not (site.data.services / "main" / "course" / "letters" / "001.txt").exists()

    _new_newsletter(b, "News for {{ name }}", "Dear {{ name }}.")
    b.fill("#test_to", "other@example.com")
    b.press("#test-letter")
    [letter] = outbox_letters(site, "other@example.com")
    assert letter["Subject"] == "[test] News for Ivan" and "Dear Ivan." in text_of(letter)
    assert newsletters.list_jobs(site.data) == []

    b.fill("#test_to", "not an address")
    b.press("#test-letter")
    assert "not an address" not in " ".join(str(m["To"]) for m in outbox_letters(site))
    assert b.find("#newsletter-error").is_displayed()


def test_a_waiting_newsletter_is_edited_until_its_first_letter_leaves(site, server, browser):
    site.service("news")
    site.subscriber("news", "ann@example.net", "Ann")
    b = browser
    b.log_in()
    _new_newsletter(b, "Frist draft", "Helo {{ name }}.", local_input(site, now() + timedelta(days=1)))
    b.press("#create-newsletter")
    [job] = newsletters.list_jobs(site.data)
    [row] = job_rows(b)
    b.press(row.find_element(By.CSS_SELECTOR, "a.edit-job"))
    assert b.find("#subject").get_attribute("value") == "Frist draft"
    b.fill("#subject", "First draft")
    b.fill("#text", "Hello {{ name }}.")
    b.screenshot("newsletter-edit-en")
    b.press("#save-newsletter")
    assert f"Newsletter {job.name} changed." in b.flash()
    assert newsletters.read_letter(site.data, job.name)[:2] == ("First draft", "Hello {{ name }}.")
    newsletters.reschedule(site.data, job.name, now() - timedelta(seconds=5))
    site.cli("cron")
    [letter] = outbox_letters(site, "ann@example.net")
    assert letter["Subject"] == "First draft" and "Hello Ann." in text_of(letter)


def test_an_edit_is_refused_once_a_run_has_begun_the_newsletter(site, server, browser):
    site.service("news")
    site.subscriber("news", "ann@example.net", "Ann")
    name = newsletters.create(site.data, ["news"], "Sent", "Text.", start=now() + timedelta(days=1))
    b = browser
    b.log_in()
    b.open(f"/admin/newsletters/{name}/edit")
    newsletters.change_job(site.data, name, lambda j: j.values.update(first_run="2026-12-01T00:00:00Z"))
    b.fill("#subject", "Changed")
    b.press("#save-newsletter")
    assert "can no longer be changed" in b.text("#newsletter-error")
    assert newsletters.read_letter(site.data, name)[0] == "Sent"
