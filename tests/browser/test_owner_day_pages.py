"""The owner's day in Chromium: the
Settings page in groups with the rarely changed keys folded, "DB" explained
where it is asked for, a styled page for a GET on a form's address, the
Russian admin (brand, sources, snippet, durations), the export's separator
chosen beside its button. Screenshots in tests/artifacts/."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from vykhukhol.members import suppression
from vykhukhol.members.suppression import Why
from vykhukhol.timeutil import now

GROUPS = ["site", "sending", "server", "bounces", "dkim", "providers"]


def test_settings_are_grouped_and_the_rare_ones_folded_until_asked_for(site, server, browser):
    b = browser
    b.log_in()
    b.open("/admin/settings")
    assert [g.get_attribute("id") for g in b.all("section.settings-group")] == \
        [f"group-{name}" for name in GROUPS]
    assert b.find("#group-site #admin_email").is_displayed()
    assert b.find("#group-server #mail\\.smtp_host").is_displayed()
    for hidden in ("hooks\\.key", "mail\\.dkim_domain", "time_limit", "mail\\.helo_name"):
        assert not b.find(f"#{hidden}").is_displayed(), hidden
    b.screenshot("settings-grouped-en")
    b.find("#more-providers summary").click()
    assert b.find("#hooks\\.key").is_displayed()
    b.screenshot("settings-providers-open-en")

    # A folded field with an error opens its fold; nothing is saved.
    b.find("#more-sending summary").click()
    b.fill("#time_limit", "soon")
    b.press("#save-settings")
    assert b.find("#more-sending").get_attribute("open") is not None
    assert b.find("#time_limit").is_displayed() and b.all("#group-sending .field-error")
    assert site.settings().raw.get("time_limit", "30s") != "soon"


def test_a_db_is_explained_where_it_is_asked_for(site, server, browser):
    b = browser
    b.log_in()
    b.open("/admin/services")
    assert "locks as one" in b.text("#db-explained")
    assert b.find("#svc-db").get_attribute("aria-describedby") == "svc-db-help"
    b.screenshot("services-db-explained-en")


def test_a_get_on_a_forms_address_is_a_styled_admin_page(site, server, browser):
    b = browser
    b.log_in()
    b.open("/admin/settings/test")
    assert b.find("header .brand").is_displayed() and b.find("#error-text").is_displayed()
    assert "form's button" in b.text("#error-text")
    b.screenshot("admin-405-en")


def test_the_russian_admin_speaks_russian_to_the_brand(site, server, browser):
    site.service("news", letters=[("Первое", "3d", "x"), ("Второе", "5d", "y")])
    suppression.add(site.data, site.settings().secret, "s@example.org", Why.ADMIN, "cli", now())
    site.set(language="ru")
    b = browser
    b.log_in()
    b.open("/admin/services/news")
    assert b.text("header .brand") == "Выхухоль"
    assert "Выхухоль" in b.driver.title
    delays = [row.find_elements(By.TAG_NAME, "td")[2].text for row in b.all("#letters tr")
              if row.find_elements(By.TAG_NAME, "td")]
    assert "3 дня" in b.text("#letters") and "5 дней" in b.text("#letters"), delays
    snippet = b.find("#snippet").get_attribute("value")
    assert 'placeholder="имя"' in snippet and ">Подписаться</button>" in snippet
    b.screenshot("service-ru")
    b.open("/admin/suppressed")
    assert "командная строка" in b.text("table")
    assert b.find("#dialect").get_attribute("value") == "semicolon"
    b.screenshot("suppressed-ru")
