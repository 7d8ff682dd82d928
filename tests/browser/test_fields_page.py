"""The admin's Fields page in Chromium (docs/using/fields.md#fields-admin):
reached from the navigation, fields added (one refused with what was typed
kept), a service's form set to ask for them, the public subscribe form
drawing them and refusing a value that does not fit, a field removed after
its confirmation page, and the page in Russian; screenshots in tests/artifacts/."""

from __future__ import annotations

import time

from support.webkit import wait_for
from vykhukhol import services as svc
from vykhukhol.settings import fields


def test_the_fields_page_in_both_languages(site, server, browser):
    site.service("news")
    b = browser
    b.log_in()
    b.press(b.link("Fields"))
    assert b.path == "/admin/fields"
    assert "No fields yet." in b.text()

    b.fill("#field-name", "city")
    b.fill("#field-label-ru", "Город")
    b.fill("#field-label-en", "City")
    b.press("#add-field")
    assert "Field city added." in b.flash()
    b.fill("#field-name", "plan")
    b.fill("#field-kind", "choice")
    b.fill("#field-choices", "Free | Pro")
    b.find("input[name=required]").click()
    b.press("#add-field")
    assert "Field plan added." in b.flash()
    assert [f.name for f in fields.load(site.root)] == ["city", "plan"]
    assert "Free | Pro" in b.text("#fields") and "one of a list" in b.text("#fields")

    b.fill("#field-name", "email")
    b.fill("#field-label-en", "Mail <b>")
    b.press("#add-field")
    assert "'email' is a built-in name" in b.text(".error")
    assert b.find("#field-label-en").get_attribute("value") == "Mail <b>"  # kept as typed
    b.screenshot("fields-en")

    b.open("/admin/services/news")
    b.fill("#form_fields", "plan, city")
    b.press("form.box button[type=submit]")
    assert "Saved." in b.flash()
    assert 'name="f.plan"' in b.find("#snippet").get_attribute("value")
    b.open("/admin/fields")
    assert "news" in b.text("#fields")

    b.open("/cgi/subscribe.py?service=news")
    b.fill("#email", "anna@example.org")
    b.fill("#f-city", "Тверь")
    b.driver.execute_script("document.getElementById('f-plan').removeAttribute('required')")
    time.sleep(2.1)  # a person's pace: a form posted faster than 2 s is a bot's
    b.press("button[type=submit]")
    assert "plan is required" in b.text(".error")  # no label: the name
    assert b.find("#f-city").get_attribute("value") == "Тверь"
    b.fill("#f-plan", "Pro")
    time.sleep(2.1)
    b.press("button[type=submit]")
    assert "Check your mailbox" in b.text()
    assert wait_for(lambda: "anna@example.org" in site.subscribers("news"))  # stored after the answer
    assert site.subscribers("news")["anna@example.org"].fields == {"city": "Тверь", "plan": "Pro"}

    b.open("/admin/fields")
    b.press("#fields tr:nth-child(2) button.danger")
    assert "Remove field city?" in b.text("h1")
    b.press("#confirm-delete")
    assert "Field city removed." in b.flash()
    assert [f.name for f in fields.load(site.root)] == ["plan"]
    assert svc.find_service(site.data, "news").form_fields == ("plan",)  # its form stops asking

    site.set(language="ru")
    b.open("/admin/fields")
    assert b.text("h1") == "Поля"
    assert "одно из списка" in b.text("#fields")
    assert "Новое поле" in b.text()
    b.screenshot("fields-ru")
