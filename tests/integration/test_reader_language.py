"""A reader's own language on a Russian site (docs/using/languages.md#reader-language),
through the real CGI scripts of a copied installation: chosen on the form, or
read from the browser's Accept-Language, stored with the line; the
confirmation request and its reminders written in it; the confirm,
unsubscribe and own pages that their links open drawn in it; the own page
changing it. A language the site does not know leaves the site's."""

from __future__ import annotations

import re
import time
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

from support.cgikit import query_of, vykhukhol
from support.webtools import assert_clean_page, plain_text
from vykhukhol import sender
from vykhukhol import services as svc
from vykhukhol.settings import load as load_settings
from vykhukhol.timeutil import now
from vykhukhol.web.admin.services import form_snippet

ANNA = "anna@example.org"
SAME_SITE = {"HTTP_SEC_FETCH_SITE": "same-origin"}
ENGLISH_BROWSER = "en-US,en;q=0.9,ru;q=0.5"


def russian(install, asks: bool = False) -> None:
    """The site in Russian; ``asks``: the service's form asks the reader's language."""
    vykhukhol("--data", str(install.data_root), "settings", "set", "language", "ru")
    if asks:
        vykhukhol("--data", str(install.data_root), "service", "edit", "news",
                  "--form-language", "yes")


def link_in(text: str, script: str) -> str:
    return re.findall(rf"https?://\S+/cgi/{re.escape(script)}\?\S+", text)[0]


def post_form(install, page, language_header: str = "", **values: str):
    """Post the subscribe form of ``page`` as a person would (after 2 s)."""
    [form] = page.forms()
    time.sleep(2.1)  # a person's pace: a form posted faster than 2 s is a bot's
    extra = {"HTTP_ACCEPT_LANGUAGE": language_header} if language_header else {}
    return install.run("cgi/subscribe.py", "POST", body=form.encoded(**values), **extra)


def press(install, page, script: str, **extra: str):
    """Press the one button of a link's page, as a browser posts it (its action's query too)."""
    [button] = page.forms()
    return install.run(f"cgi/{script}", "POST", query=urlsplit(button.action).query,
                       body=button.encoded(), **extra)


def test_a_reader_who_chose_english_gets_english_letters_and_pages(install):
    russian(install, asks=True)
    form = install.run("cgi/subscribe.py", query="service=news")  # no Accept-Language: the site's
    assert form.status == 200 and "Подписка" in form.body, form.body
    assert '<option value="ru" selected>Русский</option>' in form.body
    assert '<option value="en">English</option>' in form.body
    english = install.run("cgi/subscribe.py", query="service=news",
                          HTTP_ACCEPT_LANGUAGE=ENGLISH_BROWSER)
    assert "Subscribe: News" in english.body and '<option value="en" selected>' in english.body
    snippet = form_snippet(load_settings(install.data.settings),
                           svc.find_service(install.data, "news"))
    assert '<select name="language"' in snippet and '<option value="ru" selected>' in snippet

    # The form's choice wins over the browser's.
    answer = post_form(install, form, "ru-RU,ru", email=ANNA, name="Anna", language="en")
    assert answer.status == 200 and "Check your mailbox" in answer.body, answer.body
    assert install.subscribers()[ANNA].language == "en"
    [request] = install.mails_to(ANNA)
    assert request["Subject"] == "Please confirm your subscription: News"
    text = plain_text(request)
    assert text.startswith("Hello Anna,") and "Здравствуйте" not in text
    confirm = link_in(text, "confirm.py")
    assert parse_qs(query_of(confirm))["hl"] == ["en"]

    page = install.run("cgi/confirm.py", query=query_of(confirm))  # a browser saying nothing
    assert page.status == 200 and "Confirm your subscription" in page.body, page.body
    assert_clean_page(page)
    done = press(install, page, "confirm.py")
    assert done.status == 200 and "Subscription confirmed" in done.body, done.body
    assert install.subscribers()[ANNA].state.value == "active"



def test_a_reader_by_accept_language_only_gets_english_requests_and_reminders(install):
    russian(install)
    vykhukhol("--data", str(install.data_root), "settings", "set", "reminder_period", "1h")
    form = install.run("cgi/subscribe.py", query="service=news",
                       HTTP_ACCEPT_LANGUAGE=ENGLISH_BROWSER)
    # The form itself stays in the site's language: the service offers no choice.
    assert "Подписка" in form.body and "<select" not in form.body, form.body
    answer = post_form(install, form, ENGLISH_BROWSER, email=ANNA, name="Anna")
    assert "Проверьте" in answer.body, answer.body  # the answer too: the site's
    assert install.subscribers()[ANNA].language == "en"
    [request] = install.mails_to(ANNA)
    assert request["Subject"] == "Please confirm your subscription: News"

    later = now() + timedelta(hours=2)
    sender.run(install.data, load_settings(install.data.settings), now=lambda: later)
    reminders = install.mails_to(ANNA)[1:]
    assert len(reminders) == 1, [m["Subject"] for m in install.mails_to(ANNA)]
    text = plain_text(reminders[0])
    assert reminders[0]["Subject"] == "Please confirm your subscription: News"
    assert text.startswith("Hello Anna,") and parse_qs(query_of(link_in(text, "confirm.py")))[
        "hl"] == ["en"]
    page = install.run("cgi/confirm.py", query=query_of(link_in(text, "confirm.py")),
                       HTTP_ACCEPT_LANGUAGE="ru")  # the link's language over the browser's
    assert "Confirm your subscription" in page.body, page.body

    # The reminder's footer leads to the unsubscribe page, and from it to the own page.
    unsubscribe = link_in(text, "unsubscribe.py")
    assert parse_qs(query_of(unsubscribe))["hl"] == ["en"]
    leave = install.run("cgi/unsubscribe.py", query=query_of(unsubscribe))
    assert "Unsubscribe anna@example.org from" in leave.body, leave.body
    own = re.search(r'href="([^"]*manage\.py\?[^"]*)"', leave.body)[1].replace("&amp;", "&")
    assert parse_qs(query_of(own))["hl"] == ["en"]
    mine = install.run("cgi/manage.py", query=query_of(own))
    assert mine.status == 200 and "Your subscriptions" in mine.body, mine.body
    gone = press(install, leave, "unsubscribe.py")
    assert "You are unsubscribed" in gone.body and ANNA not in install.subscribers()


def test_a_language_the_site_does_not_know_leaves_the_sites(install):
    russian(install, asks=True)
    form = install.run("cgi/subscribe.py", query="service=news",
                       HTTP_ACCEPT_LANGUAGE="xx;q=1, " * 1000)  # 10 kB of nothing we speak
    assert '<option value="ru" selected>' in form.body
    post_form(install, form, "xx," + "de;q=0.5," * 1200, email=ANNA, language="xx")
    assert install.subscribers()[ANNA].language is None
    [request] = install.mails_to(ANNA)
    assert request["Subject"] == "Подтвердите подписку: News"
    confirm = link_in(plain_text(request), "confirm.py")
    assert "hl" not in parse_qs(query_of(confirm))
    bogus = install.run("cgi/confirm.py", query=query_of(confirm) + "&hl=xx",
                        HTTP_ACCEPT_LANGUAGE="x" * 10_000)
    assert bogus.status == 200 and "Подтвердите подписку" in bogus.body, bogus.body


def test_the_own_page_changes_the_language_of_every_line(install):
    russian(install)
    svc.add_service(install.data, "offers", "main", {"title": "Offers"})
    svc.add_service(install.data, "extra", "main", {"title": "Extra"})
    for service in ("news", "offers"):
        vykhukhol("--data", str(install.data_root), "subscriber", "add", service, ANNA,
                  "--confirmed")
    link = install.run("cgi/manage.py")  # no link: the form asking for one, in the site's
    assert "Ваши подписки" in link.body or "адрес" in link.body.lower()
    from vykhukhol import tokens

    settings = load_settings(install.data.settings)
    own = tokens.manage_link("http://localhost", settings.secret, ANNA)
    page = install.run("cgi/manage.py", query=query_of(own))
    assert "Ваши подписки" in page.body and '<option value="ru" selected>' in page.body
    [form] = [f for f in page.forms() if f.fields.get("action") == "language"]

    cross = install.run("cgi/manage.py", "POST", body=form.encoded(language="en"),
                        HTTP_SEC_FETCH_SITE="cross-site")
    assert cross.status == 403 and install.subscribers()[ANNA].language is None
    bad = install.run("cgi/manage.py", "POST", body=form.encoded(language="xx"), **SAME_SITE)
    assert bad.status == 400 and "Выберите русский или английский" in bad.body, bad.body
    assert install.subscribers()[ANNA].language is None

    done = install.run("cgi/manage.py", "POST", body=form.encoded(language="en"), **SAME_SITE)
    assert done.status == 200, done.body
    assert "Your subscriptions" in done.body and "in English from now on" in done.body
    assert install.subscribers("news")[ANNA].language == "en"
    assert install.subscribers("offers")[ANNA].language == "en"
    again = install.run("cgi/manage.py", query=query_of(own))  # no hl: the kept language
    assert "Your subscriptions" in again.body and '<option value="en" selected>' in again.body
    [join] = [f for f in again.forms() if f.fields.get("action") == "join"]
    joined = install.run("cgi/manage.py", "POST", body=join.encoded(), **SAME_SITE)
    assert "confirmation link is on its way" in joined.body, joined.body
    assert install.subscribers("extra")[ANNA].language == "en"
    [request] = install.mails_to(ANNA)
    assert request["Subject"] == "Please confirm your subscription: Extra"
    back = install.run("cgi/manage.py", "POST", body=form.encoded(language="ru"), **SAME_SITE)
    assert "Ваши подписки" in back.body and "на русском" in back.body
    assert install.subscribers("offers")[ANNA].language == "ru"


def test_a_request_held_in_debug_mode_goes_later_in_the_readers_language(fresh_site):
    site = fresh_site  # debug mode: the request waits for the first working run
    site.set(language="ru")
    site.service("news", letters=[("Lesson 1", "1d", "Hello.\n")])
    assert site.subscribe("news", ANNA, name="Anna", language="en") == "added"
    assert site.outbox() == []
    site.ok("mode", "working")
    site.run_at(now() + timedelta(minutes=1))
    [request] = [m for m in site.outbox() if ANNA in str(m["To"])]
    assert request["Subject"] == "Please confirm your subscription: News"
    assert "confirm.py?" in plain_text(request) and "&hl=en" in plain_text(request)


def test_the_admin_turns_the_forms_choice_on_behind_csrf(site):
    from support.servetools import admin_client

    site.set(language="ru")
    site.service("news")
    admin = admin_client(site)
    status, _, page = admin("GET", "/services/news")
    assert status == 200 and 'name="form_language"' in page and '<select name="language"' not in page
    status, _, _ = admin("POST", "/services/news", {"title": "News", "form_language": "yes"},
                         token=False)
    assert status == 403 and not svc.find_service(site.data, "news").form_language
    status, _, _ = admin("POST", "/services/news", {"title": "News", "form_language": "yes"})
    assert status == 303 and svc.find_service(site.data, "news").form_language
    status, _, page = admin("GET", "/services/news")
    assert "Форма подписки спрашивает язык читателя" in page
    assert '&lt;select name=&#34;language&#34;' in page  # the snippet, as text to copy
    status, _, _ = admin("POST", "/services/news", {"title": "News"})  # the box left empty
    assert status == 303 and not svc.find_service(site.data, "news").form_language


def test_the_link_request_speaks_the_browser_and_its_letter_the_readers(install):
    russian(install)
    vykhukhol("--data", str(install.data_root), "subscriber", "add", "news", ANNA, "--confirmed")
    asked = install.run("cgi/manage.py", HTTP_ACCEPT_LANGUAGE=ENGLISH_BROWSER)
    assert "Your subscriptions" in asked.body, asked.body
    [form] = asked.forms()
    time.sleep(2.1)  # a person's pace
    sent = install.run("cgi/manage.py", "POST", body=form.encoded(email=ANNA),
                       HTTP_ACCEPT_LANGUAGE=ENGLISH_BROWSER, **SAME_SITE)
    assert "Check your mailbox" in sent.body, sent.body
    [letter] = install.mails_to(ANNA)  # none kept: the asking page's language
    assert letter["Subject"] == "The page of your subscriptions"
    assert parse_qs(query_of(link_in(plain_text(letter), "manage.py")))["hl"] == ["en"]

    from vykhukhol.members import personal

    personal.set_language(install.data, ANNA, "ru")  # kept: the reader's own wins
    again = install.run("cgi/manage.py", "POST", body=form.encoded(email=ANNA),
                        HTTP_ACCEPT_LANGUAGE=ENGLISH_BROWSER, **SAME_SITE)
    assert "Check your mailbox" in again.body
    letter = install.mails_to(ANNA)[-1]
    assert letter["Subject"] == "Страница ваших подписок"
    assert parse_qs(query_of(link_in(plain_text(letter), "manage.py")))["hl"] == ["ru"]
