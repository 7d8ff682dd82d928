"""The admin's newer pages in a real browser (docs/using/admin.md#admin-pages):
the password page, delete confirmations, the settings labels, the Bounces
page, the status chart, the series arrows, the search box and the ru/en
switch. Headless Chromium against a ``vykhukhol serve`` subprocess, as in
test_admin.py, whose helpers (tests/support/adminkit.py) these tests reuse.

Each test opens with the behaviour it pins and leaves screenshots in
``tests/artifacts/`` (named ``*-en.png`` / ``*-ru.png``) for a person to look at.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from selenium.webdriver.common.by import By

from support.adminkit import assert_no_script, outbox_letters
from support.servetools import PASSWORD  # tests/conftest.py's installation
from vykhukhol import services as svc
from vykhukhol.timeutil import now

DATA = Path(__file__).resolve().parents[1] / "data" / "bounces"
DEAD, ALIVE = "dead@example.com", "alive@example.com"


# --- helpers ------------------------------------------------------------------------


def log_out(b: Any) -> None:
    b.press("header form button[type=submit]")


def set_language(site: Any, b: Any, lang: str) -> None:
    """Choose ``lang`` on the Settings page, as the owner does."""
    b.open("/admin/settings")
    b.fill("#language", lang)
    b.press("#save-settings")
    assert site.settings()["language"] == lang
    assert b.find("html").get_attribute("lang") == lang


def change_password(b: Any, current: str, new: str, again: str | None = None) -> None:
    b.open("/admin/password")
    b.fill("#current", current)
    b.fill("#new", new)
    b.fill("#again", new if again is None else again)
    b.press("#change-password")


def letter_rows(b: Any) -> dict[int, Any]:
    """The series table's rows by letter number."""
    rows = {}
    for row in b.all("#letters tr"):
        cells = row.find_elements(By.TAG_NAME, "td")
        if cells:
            rows[int(cells[0].text)] = row
    return rows


def values(title: str) -> tuple[int, ...]:
    """The numbers of a chart day's hover title, after its date."""
    return tuple(int(n) for n in re.findall(r"\b\d+\b", title.split(": ", 1)[1]))


def buttons(row: Any) -> list[str]:
    return [button.text for button in row.find_elements(By.TAG_NAME, "button")]


# --- the password page ---------------------------------------------------------------


PASSWORD_TEXTS = {
    "en": {"wrong": "The current password is wrong; nothing changed.",
           "differ": "The new passwords differ; nothing changed.",
           "done": "Password changed. Every other session has ended.",
           "title": "Change password"},
    "ru": {"wrong": "Текущий пароль неверен; ничего не изменено.",
           "differ": "Новые пароли не совпадают; ничего не изменено.",
           "done": "Пароль изменён. Все остальные сеансы закончены.",
           "title": "Сменить пароль"},
}


def test_the_password_page_refuses_a_wrong_current_password_and_changes_it_with_the_right_one(
        site, server, browser):
    """In English, then in Russian: a wrong current password or two different new ones change nothing (the error in the page's language); the right one changes it, the old one no longer logs in and the new one does."""
    b = browser
    current = PASSWORD
    for lang, new in (("en", "a-new-password-1"), ("ru", "новый-пароль-2")):
        site.set(language=lang)
        texts = PASSWORD_TEXTS[lang]
        b.log_in(current)
        assert b.path == "/admin/"
        stored = site.settings()["security.admin_password"]

        change_password(b, "not-the-password", new)
        assert b.text("h1") == texts["title"]
        assert b.text("[role=alert]") == texts["wrong"]
        assert site.settings()["security.admin_password"] == stored
        b.screenshot(f"password-wrong-{lang}")

        change_password(b, current, new, new + "x")
        assert b.text("[role=alert]") == texts["differ"]
        assert site.settings()["security.admin_password"] == stored

        change_password(b, current, new)
        assert b.flash() == texts["done"]
        assert not b.all("[role=alert]")
        assert site.settings()["security.admin_password"] != stored
        b.screenshot(f"password-changed-{lang}")

        log_out(b)
        b.log_in(current)
        assert b.path == "/admin/login", "the old password still logs in"
        b.log_in(new)
        assert b.path == "/admin/"
        log_out(b)
        current = new


# --- delete confirmations ------------------------------------------------------------


def test_deleting_a_letter_or_a_subscriber_asks_on_a_page_of_its_own(site, server, browser):
    """The Delete button of a letter or a subscriber leads to a confirmation page (no script on it); Cancel there leaves everything; its Delete deletes just that one."""
    site.service("news", letters=[("First lesson", "0s", "One."), ("Second lesson", "1d", "Two.")])
    site.subscriber("news", DEAD, "Dead")
    site.subscriber("news", ALIVE, "Alive")
    b = browser
    b.log_in()

    b.open("/admin/services/news")
    b.press(letter_rows(b)[1].find_element(By.CSS_SELECTOR, "button.danger"))
    assert b.path == "/admin/services/news/letters/1/delete"
    assert b.text("h1") == "Delete letter 1?"
    assert "First lesson" in b.text(".warn")
    assert_no_script(b)
    b.screenshot("confirm-delete-letter-en")
    assert len(svc.load_letters(svc.find_service(site.data, "news"))) == 2
    b.press(b.link("Cancel"))
    assert b.path == "/admin/services/news"
    assert [x.subject for x in svc.load_letters(svc.find_service(site.data, "news"))] == \
        ["First lesson", "Second lesson"]

    b.press(letter_rows(b)[1].find_element(By.CSS_SELECTOR, "button.danger"))
    b.press("#confirm-delete")
    assert b.path == "/admin/services/news"
    assert b.flash() == "Letter 1 deleted; later letters moved up."
    assert [x.subject for x in svc.load_letters(svc.find_service(site.data, "news"))] == \
        ["Second lesson"]
    assert list(letter_rows(b)) == [1]

    def delete_button(address: str) -> Any:
        [row] = [r for r in b.all("#subscribers tr") if address in r.text]
        return row.find_element(By.CSS_SELECTOR, "button.danger")

    b.open("/admin/services/news/subscribers")
    b.press(delete_button(DEAD))
    assert b.text("h1") == f"Delete {DEAD}?"
    assert "cannot be undone" in b.text(".warn")
    assert_no_script(b)
    b.screenshot("confirm-delete-subscriber-en")
    assert set(site.subscribers("news")) == {DEAD, ALIVE}
    b.press(b.link("Cancel"))
    assert b.path == "/admin/services/news/subscribers"
    assert set(site.subscribers("news")) == {DEAD, ALIVE}

    b.press(delete_button(DEAD))
    b.press("#confirm-delete")
    assert b.flash() == f"{DEAD} deleted."
    assert set(site.subscribers("news")) == {ALIVE}
    assert DEAD not in b.text("#subscribers") and ALIVE in b.text("#subscribers")

    site.set(language="ru")
    b.reload()
    b.press(delete_button(ALIVE))
    assert b.text("h1") == f"Удалить {ALIVE}?"
    assert "Отменить это нельзя." in b.text(".warn")
    b.screenshot("confirm-delete-subscriber-ru")
    b.press(b.link("Отменить"))
    assert set(site.subscribers("news")) == {ALIVE}


# --- the settings page ---------------------------------------------------------------


SETTINGS_TEXTS = {
    "en": {"admin_email": "Administrator's e-mail", "mail.smtp_port": "SMTP port",
           "host": "Set on the host only", "sendmail": "sendmail program",
           "dkim": "DKIM key file", "refused": "Nothing was saved: correct the fields marked below."},
    "ru": {"admin_email": "Почта администратора", "mail.smtp_port": "Порт SMTP",
           "host": "Задаются только на сервере", "sendmail": "Программа sendmail",
           "dkim": "Файл ключа DKIM", "refused": "Ничего не сохранено: исправьте отмеченные поля."},
}


def test_the_settings_page_labels_each_field_shows_host_only_keys_read_only_and_marks_a_bad_value(
        site, server, browser):
    """In English and Russian: each field has a human label with its key in small type beside it; mail.sendmail_path and mail.dkim_key_file are shown but are no form field; an invalid port is refused with the error under its field and nothing saved."""
    b = browser
    b.log_in()
    for lang in ("en", "ru"):
        site.set(language=lang)
        texts = SETTINGS_TEXTS[lang]
        b.open("/admin/settings")
        for key in ("admin_email", "mail.smtp_port"):
            label = b.find(f"label[for='{key}']")
            key_tag = label.find_element(By.CSS_SELECTOR, "code.key")
            assert key_tag.text == key
            assert label.text.replace(key, "").strip() == texts[key], label.text
            small = float(key_tag.value_of_css_property("font-size")[:-2])
            assert small < float(label.value_of_css_property("font-size")[:-2]), (key, small)
        # Every shown field has a label that is more than its key: the rarely
        # changed ones too, once their folds are opened.
        b.driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
        for label in b.all("form label[for]"):
            key = label.get_attribute("for")
            assert label.text.replace(key, "").strip(), f"{key} has no human label"

        # Fields side by side line up, whether their labels take one line or two.
        tops = b.driver.execute_script(
            "return [...document.querySelectorAll('form .grid > div')].map(cell => ["
            " Math.round(cell.getBoundingClientRect().top),"
            " Math.round(cell.querySelector('input, select').getBoundingClientRect().top)]);")
        rows: dict[int, set[int]] = {}
        for cell, field in tops:
            rows.setdefault(cell, set()).add(field)
        assert len(rows) > 1 and all(len(fields) == 1 for fields in rows.values()), rows

        assert texts["host"] in b.text("main")
        form = b.find("form[action$='/settings']")
        for key, label in (("mail.sendmail_path", texts["sendmail"]),
                           ("mail.dkim_key_file", texts["dkim"])):
            assert not form.find_elements(By.NAME, key), f"{key} can be changed from the web"
            shown = b.find(f"[id='{key}']")
            assert shown.tag_name == "code"
            assert label in shown.find_element(By.XPATH, "./..").text
        b.screenshot(f"settings-labels-{lang}")

        before = site.data.settings.read_bytes()
        b.fill("[id='mail.smtp_port']", "70000")
        b.press("#save-settings")
        assert b.text("div.error[role=alert]") == texts["refused"]
        field = b.find("[id='mail.smtp_port']")
        assert field.get_attribute("value") == "70000"  # what was typed stays to be corrected
        error = field.find_element(By.XPATH, "./following-sibling::div[@class='field-error']")
        assert "65535" in error.text, error.text
        assert len(b.all(".field-error")) == 1
        assert site.data.settings.read_bytes() == before
        b.screenshot(f"settings-error-{lang}")


# --- bounces -------------------------------------------------------------------------


def return_path(letter: Any) -> str:
    """The tagged envelope sender the outbox transport wrote on top of a letter."""
    return str(letter["Return-Path"]).strip("<>")


def test_the_bounces_page_lists_piped_results_and_shows_a_kept_message(site, server, browser):
    """Before anything came back the page says so; after real bounce reports for a letter the site sent are piped into `vykhukhol bounce`, it lists a permanent and a temporary failure for the service and its kept message reads in full."""
    site.set(mail__from_email="list@example.org")
    site.service("course", letters=[("Lesson 1", "0s", "Hello {{ name }}."), ("Lesson 2", "30d", "Again.")])
    site.subscriber("course", DEAD, "Dead")
    b = browser
    b.log_in()
    b.open("/admin/bounces")
    assert b.text("h1") == "Bounces"
    assert "Nothing has come back yet." in b.text("main")
    assert b.all("#bounces") == [] and b.all("#kept") == []
    b.screenshot("bounces-empty-en")

    site.cli("cron")
    [letter] = outbox_letters(site, DEAD)
    sender = return_path(letter)
    assert sender.startswith("list+"), sender
    for corpus, failed in (("flufl-postfix_01.txt", "xxxxx@local.ie"),
                           ("flufl-dsn_05.txt", "userx@example.cz")):
        raw = f"Delivered-To: {sender}\n".encode() + \
            (DATA / corpus).read_bytes().replace(failed.encode(), DEAD.encode())
        site.cli("bounce", input=raw.decode("latin-1"))
    site.cli("bounce", input=f"From: {DEAD}\nTo: {sender}\nSubject: thanks!\n\nLovely lesson.\n")

    b.reload()
    rows = [r.text for r in b.all("#bounces tr")[1:]]
    assert len(rows) == 3, rows
    kinds = " | ".join(rows)
    for kind in ("permanent failure", "temporary failure", "kept for the admin"):
        assert kind in kinds, kinds
    assert all(DEAD in row and "service course" in row for row in rows), rows
    b.screenshot("bounces-en")
    [kept] = b.all("#kept a")
    b.press(kept)
    assert b.path.startswith("/admin/bounces/kept/")
    message = b.text("#kept-message")
    assert "Subject: thanks!" in message and "Lovely lesson." in message
    b.screenshot("bounce-kept-en")

    site.set(language="ru")
    b.open("/admin/bounces")
    assert b.text("h1") == "Возвраты"
    kinds = b.text("#bounces")
    assert "постоянный отказ" in kinds and "временный отказ" in kinds, kinds
    b.screenshot("bounces-ru")


def test_the_bounces_page_names_refusals_and_mailbox_problems_in_the_admins_language(
        site, server, browser):
    """A bomb piped into `vykhukhol bounce`, an empty message and a bounce mailbox
    nobody answers at are listed with our own reasons, in English and in Russian;
    the bomb is kept for the admin."""
    import socket

    site.set(mail__from_email="list@example.org")
    site.cli("bounce", input="Subject: x\n\n" + "\n" * 20_000)
    site.cli("bounce", input="")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    site.set(mail__bounce_mailbox=f"imap://u:p@127.0.0.1:{port}/INBOX")
    site.cli("cron")
    b = browser
    b.log_in()
    b.open("/admin/bounces")
    rows = " | ".join(r.text for r in b.all("#bounces tr")[1:])
    for text in ("refused unread", "too many lines: 20002 (at most 5000)", "empty message",
                 "mailbox problem", f"imap://127.0.0.1:{port}: connection refused"):
        assert text in rows, rows
    assert len(b.all("#kept a")) == 1
    b.screenshot("bounces-refused-en")
    site.set(language="ru")
    b.open("/admin/bounces")
    rows = " | ".join(r.text for r in b.all("#bounces tr")[1:])
    for text in ("отклонено без чтения", "слишком много строк: 20002 (допустимо не больше 5000)",
                 "пустое письмо", "сбой почтового ящика", "в соединении отказано"):
        assert text in rows, rows
    b.screenshot("bounces-refused-ru")


# --- the status chart ----------------------------------------------------------------


def test_the_status_chart_labels_its_days_and_each_day_tells_both_values_on_hover(
        site, server, browser):
    """The 30-day chart shows at least a label a week, inside the chart and not overlapping; each day's hover title (SVG <title>) carries that day's subscriptions, letters handed over and bounces."""
    site.service("news", letters=[("Hello", "0s", "Hi.")])
    for number in range(3):
        site.subscriber("news", f"today{number}@example.net", ago=5)
    site.subscriber("news", "week@example.net", ago=7 * 86400)  # the same hour, 7 days back
    site.cli("cron")  # three letters today (the older subscriber's too: four)
    sent_today = len(outbox_letters(site))
    assert sent_today >= 3
    b = browser
    b.log_in()
    b.open("/admin/")
    labels = b.all("svg text.day-label")
    assert len(labels) >= 30 // 7, [x.text for x in labels]
    boxes = b.driver.execute_script(
        "const svg = arguments[0][0].ownerSVGElement.getBoundingClientRect();"
        "return [svg.left, svg.right].concat(arguments[0].map(t => {"
        " const r = t.getBoundingClientRect(); return [r.left, r.right, r.width]; }));", labels)
    left, right, spans = boxes[0], boxes[1], boxes[2:]
    for text, (start, end, width) in zip([x.text for x in labels], spans, strict=True):
        assert text and width > 0, text
        assert left <= start and end <= right, (text, start, end, left, right)
    assert all(a[1] < b_[0] for a, b_ in zip(spans, spans[1:], strict=False)), "day labels overlap"

    days = b.all("svg rect.day")
    assert len(days) == 30
    titles = [b.driver.execute_script("return arguments[0].querySelector('title').textContent;", d)
              for d in days]
    # The numbers in the order the chart draws its bars (wording and plural forms
    # are the catalog's business); the day first.
    assert [values(t) for t in (titles[-1], titles[-8], titles[0])] == \
        [(3, sent_today, 0), (1, 0, 0), (0, 0, 0)], titles
    assert titles[-1].startswith(str(now().astimezone(ZoneInfo(site.settings()["timezone"])).date()))
    assert "subscri" in titles[-1] and "handed over" in titles[-1], titles[-1]
    # The invisible columns lie on top of the bars: a mouse over a bar finds a day.
    top = b.driver.execute_script(
        "arguments[0].scrollIntoView({block: 'center'});"
        "const r = arguments[0].getBoundingClientRect();"
        "return document.elementFromPoint(r.left + r.width / 2, r.bottom - 2).getAttribute('class');",
        days[-1])
    assert top == "day"
    b.find("svg").screenshot(str(b.screenshot("status-chart-en").with_name("status-chart-svg-en.png")))

    site.set(language="ru")
    b.reload()
    title = b.driver.execute_script("return arguments[0].querySelector('title').textContent;",
                                    b.all("svg rect.day")[-1])
    assert values(title) == (3, sent_today, 0), title
    assert "подпис" in title and "передано" in title, title


def test_the_chart_shows_bounces_beside_the_letters_and_the_history_keeps_the_newsletter(
        site, server, browser):
    """A newsletter handed over to two, one of them bounced (piped into the real
    `vykhukhol bounce`): the status chart draws today's bounce as a third bar with
    its own legend and hover words, and the Newsletters page's History table keeps
    the finished newsletter with its counts, admin_email empty, in both languages."""
    from vykhukhol import newsletters
    from vykhukhol import returntag as tags

    site.set(admin_email="", mail__from_email="list@example.org")
    site.service("news", enabled=False)
    for address in ("dead@example.com", "alive@example.com"):
        site.subscriber("news", address, ago=60)  # today, even just after midnight
    job = newsletters.create(site.data, ["news"], "Spring issue", "Hello!")
    site.cli("cron")
    settings = site.settings()
    sender = tags.bounce_address("list@example.org", settings["mail.verp_separator"],
                                 tags.make(settings.secret, tags.NEWSLETTER, job,
                                           "dead@example.com"))
    dsn = (Path(__file__).resolve().parents[1] / "data" / "bounces" / "flufl-postfix_01.txt")
    raw = f"Delivered-To: {sender}\n".encode() + dsn.read_bytes().replace(
        b"xxxxx@local.ie", b"dead@example.com")
    site.cli("bounce", input=raw.decode("latin-1"))

    b = browser
    b.log_in()
    for lang, legend, words in (("en", "bounces: 1", ("handed over", "1 bounce")),
                                ("ru", "отказы доставки: 1", ("передано", "1 отказ доставки"))):
        site.set(language=lang)
        b.open("/admin/")
        assert len(b.all("svg[role=img] rect.bar-bounced")) == 30
        heights = [float(r.get_attribute("height")) for r in b.all("svg[role=img] rect.bar-bounced")]
        assert heights[-1] > 0 and not any(heights[:-1]), heights
        assert legend in b.text(), b.text()
        title = b.driver.execute_script(
            "return arguments[0].querySelector('title').textContent;", b.all("svg rect.day")[-1])
        # The dead address's bounce says it does not exist: it is deleted,
        # so one of today's two subscriptions is left.
        assert values(title) == (1, 2, 1), title
        for word in words:
            assert word in title, title
        b.find("svg").screenshot(str(b.screenshot(f"status-chart-bounces-{lang}")
                                     .with_name(f"status-chart-bounces-svg-{lang}.png")))

        b.open("/admin/newsletters")
        row = b.find(f"#history-{job}")
        cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
        assert cells[0].startswith("Spring issue") and cells[1] == "news", cells
        assert cells[4:] == ["2", "0", "1", "0", "0", "-"], cells  # "-": clicks not counted
        b.screenshot(f"newsletters-history-{lang}")


# --- the series arrows -----------------------------------------------------------------


def test_the_series_arrows_show_where_a_letter_can_move_and_move_it(site, server, browser):
    """With three letters, letter 1 has only ↓, letter 3 only ↑, letter 2 both; pressing ↑ on letter 2 makes it letter 1."""
    site.service("news", letters=[("Alpha", "0s", "A."), ("Beta", "1d", "B."), ("Gamma", "2d", "C.")])
    b = browser
    b.log_in()
    b.open("/admin/services/news")
    rows = letter_rows(b)
    assert "↑" not in buttons(rows[1]) and "↓" in buttons(rows[1])
    assert "↑" in buttons(rows[2]) and "↓" in buttons(rows[2])
    assert "↑" in buttons(rows[3]) and "↓" not in buttons(rows[3])
    b.screenshot("series-arrows-en")

    [up] = [x for x in rows[2].find_elements(By.TAG_NAME, "button") if x.text == "↑"]
    b.press(up)
    assert b.flash() == "Letter 2 moved to position 1."
    assert [x.subject for x in svc.load_letters(svc.find_service(site.data, "news"))] == \
        ["Beta", "Alpha", "Gamma"]
    rows = letter_rows(b)
    assert "Beta" in rows[1].text and "Alpha" in rows[2].text
    assert "↑" not in buttons(rows[1])


# --- the search box -------------------------------------------------------------------


PLACEHOLDER_FITS = """
const input = arguments[0];
const style = getComputedStyle(input);
const context = document.createElement('canvas').getContext('2d');
context.font = style.font || `${style.fontSize} ${style.fontFamily}`;
const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
return [context.measureText(input.placeholder).width, room];
"""


def test_the_subscriber_search_placeholder_fits_its_box(site, server, browser):
    """In English and Russian the search box's placeholder text is narrower than the box, at the usual window width and at a phone's."""
    site.service("news")
    site.subscriber("news", ALIVE, "Alive")
    b = browser
    b.log_in()
    try:
        for lang, placeholder in (("en", "Search by address or name"),
                                  ("ru", "Поиск по адресу или имени")):
            site.set(language=lang)
            for width in (1280, 380):
                b.driver.set_window_size(width, 900)
                b.open("/admin/services/news/subscribers")
                box = b.find("input[name='q']")
                assert box.get_attribute("placeholder") == placeholder
                text, room = b.driver.execute_script(PLACEHOLDER_FITS, box)
                assert 0 < text <= room, (lang, width, text, room)
                if width == 1280:
                    b.screenshot(f"subscribers-search-{lang}")
    finally:
        b.driver.set_window_size(1280, 900)


# --- the language switch ------------------------------------------------------------------


SWITCH_TEXTS = {
    "en": {"/admin/": ["Status", "Letter to all users", "Last 30 days"],
           "/admin/settings": ["Administrator's e-mail", "Set on the host only", "SMTP port"],
           "/admin/services": ["Services"],
           "/admin/bounces": ["Bounces", "Nothing has come back yet."],
           "/admin/password": ["Change password", "Current password"]},
    "ru": {"/admin/": ["Состояние", "Новый выпуск", "Последние 30 дней"],
           "/admin/settings": ["Почта администратора", "Задаются только на сервере", "Порт SMTP"],
           "/admin/services": ["Рассылки"],
           "/admin/bounces": ["Возвраты", "Пока ничего не вернулось."],
           "/admin/password": ["Сменить пароль", "Текущий пароль"]},
}


def test_switching_the_language_on_the_settings_page_turns_the_admin_russian_and_back(
        site, server, browser):
    """Language ru chosen on the Settings page makes the menu («Новый выпуск»), the settings labels and the other pages Russian; en turns them English again."""
    site.service("news")
    b = browser
    b.log_in()
    for lang in ("ru", "en"):
        other = "en" if lang == "ru" else "ru"
        set_language(site, b, lang)
        for path, texts in SWITCH_TEXTS[lang].items():
            b.open(path)
            assert b.find("html").get_attribute("lang") == lang
            page = b.text()
            for text in texts:
                assert text in page, (lang, path, text)
            for text in SWITCH_TEXTS[other][path]:
                assert text not in page, (lang, path, text)
            if path == "/admin/":
                b.screenshot(f"switch-status-{lang}")
        b.open("/admin/settings")
        b.screenshot(f"switch-settings-{lang}")
