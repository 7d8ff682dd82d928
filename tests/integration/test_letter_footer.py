"""Every list letter carries the footer (docs/using/services.md#footer):
series letters, newsletters and reminders, in the text and the HTML part, in
the site's language — why the reader gets it, the unsubscribe link, the own
page, the postal address when set — and the confirmation request does not.
Sent through a real SMTP server (aiosmtpd on 127.0.0.1)."""

from __future__ import annotations

import email.policy
from datetime import timedelta

import pytest

from vykhukhol import newsletters
from vykhukhol import services as svc
from vykhukhol.timeutil import now

ADMIN = "admin@example.org"
BOB = "bob@example.org"
HTML = "<html><body><p>Hello {{ name }}.</p></body></html>"
WHY = {"en": 'You receive this letter because you subscribed to "Course".',
       "ru": "Вы получили это письмо, потому что подписались на рассылку «Course»."}
UNSUB = {"en": "Unsubscribe: https://lists.example.org/cgi/unsubscribe.py?",
         "ru": "Отписаться: https://lists.example.org/cgi/unsubscribe.py?"}
MANAGE = {"en": "Your subscriptions: https://lists.example.org/cgi/manage.py?",
          "ru": "Ваши подписки: https://lists.example.org/cgi/manage.py?"}


def letters_to(server, to: str) -> list:
    return [r.message for r in server.handler.received if to in r.rcpt_tos]


def parts(message) -> tuple[str, str | None]:
    text = message.get_body(("plain",)).get_content().replace("\r\n", "\n")
    html = message.get_body(("html",))
    return text, html.get_content().replace("\r\n", "\n") if html is not None else None


def course(site, server, lang: str, html: str | None = HTML, body: str = "Hello {{ name }}.\n"):
    site.use_smtp(server.port)
    site.set(language=lang, postal_address="1 Main Street, Springfield")
    service = site.service("course", letters=[])
    svc.add_letter(service, "Lesson 1", "0s", body, html)
    site.subscriber("course", BOB, name="Bob")
    return service


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_a_series_letter_carries_the_footer_in_both_parts_in_the_sites_language(
        site, smtp_server, lang) -> None:
    course(site, smtp_server, lang)
    site.run_at(now())
    [message] = letters_to(smtp_server, BOB)
    text, html = parts(message)
    assert text.startswith("Hello Bob.\n\n-- \n")
    for line in (WHY[lang], UNSUB[lang], MANAGE[lang], "1 Main Street, Springfield"):
        assert line in text
    assert text.count("unsubscribe.py?") == 1
    assert message["List-Unsubscribe"].strip("<>").split(">")[0] in text.replace("\n", "")
    # HTML: inside the body, with working links, the title escaped as a value
    assert html.index("vykhukhol-footer") < html.index("</body>")
    assert 'href="https://lists.example.org/cgi/unsubscribe.py?' in html
    assert 'href="https://lists.example.org/cgi/manage.py?' in html
    assert "1 Main Street, Springfield" in html
    assert {"en": "Unsubscribe</a>", "ru": "Отписаться</a>"}[lang] in html


def test_a_letter_that_places_the_footer_gets_it_there_and_only_once(site, smtp_server) -> None:
    course(site, smtp_server, "en", html="<p>Top</p>{{ footer }}<p>Bottom</p>",
           body="Top\n{{ footer }}Bottom\n")
    site.run_at(now())
    [message] = letters_to(smtp_server, BOB)
    text, html = parts(message)
    assert text.startswith("Top\n-- \n") and text.rstrip().endswith("Bottom")
    assert text.count(WHY["en"]) == 1
    assert html.startswith("<p>Top</p><div class=\"vykhukhol-footer\"")
    assert html.count("vykhukhol-footer") == 1 and "&lt;div" not in html


def test_the_sites_footer_and_a_services_own_override_the_default(site, smtp_server) -> None:
    service = course(site, smtp_server, "en", html=None)
    (site.root / "footer.txt").write_text("Site footer for {{ service }}: {{ unsubscribe_url }}\n")
    site.service("news", letters=[("News 1", "0s", "News.\n")])
    site.subscriber("news", BOB, name="Bob")
    (service.folder / "footer.txt").write_text("Course's own footer. {{ postal_address }}\n")
    site.run_at(now())
    texts = {m["Subject"]: parts(m)[0] for m in letters_to(smtp_server, BOB)}
    assert texts["Lesson 1"] == "Hello Bob.\n\nCourse's own footer. 1 Main Street, Springfield\n"
    assert texts["News 1"].startswith("News.\n\nSite footer for News: https://lists.example.org/")


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_a_newsletter_carries_the_footer_in_both_parts(site, smtp_server, lang) -> None:
    course(site, smtp_server, lang)
    newsletters.create(site.data, ["course"], "Big news", "News for {{ name }}.", html=HTML)
    site.run_at(now())
    [message] = [m for m in letters_to(smtp_server, BOB) if m["Subject"] == "Big news"]
    text, html = parts(message)
    assert text.startswith("News for Bob.\n\n-- \n") and WHY[lang] in text and UNSUB[lang] in text
    assert "vykhukhol-footer" in html and "manage.py?" in html


def test_a_reminder_carries_the_footer_and_the_confirmation_request_does_not(
        site, smtp_server) -> None:
    site.use_smtp(smtp_server.port)
    site.set(language="en", reminder_period="1h")
    site.service("course", letters=[("Lesson 1", "0s", "Hello.")])
    site.subscribe("course", "new@example.org", name="New")
    site.subscriber("course", BOB, state="new", ago=7200)
    site.run_at(now() + timedelta(minutes=1))
    [reminder] = letters_to(smtp_server, BOB)
    assert WHY["en"] in parts(reminder)[0] and "confirm.py?" in parts(reminder)[0]
    requests = letters_to(smtp_server, "new@example.org")
    assert requests
    for request in requests:
        body = parts(request)[0]
        assert "confirm.py?" in body and "-- \n" not in body and WHY["en"] not in body


def test_a_broken_site_footer_stops_the_letter_not_the_run(site, smtp_server) -> None:
    course(site, smtp_server, "en")
    (site.root / "footer.txt").write_text("{% if x %}never closed\n")
    report = site.run_at(now())
    assert letters_to(smtp_server, BOB) == []
    assert "footer: line" in site.log()
    assert "cannot be made" in report or "cannot be made" in site.log()


def test_the_footer_is_written_out_as_email_policy_reads_it(site, smtp_server) -> None:
    """Quoted-printable UTF-8 keeps the footer's «» and the signature dash intact."""
    course(site, smtp_server, "ru", html=None)
    site.run_at(now())
    [received] = [r for r in smtp_server.handler.received if BOB in r.rcpt_tos]
    message = email.message_from_bytes(received.data, policy=email.policy.default)
    assert WHY["ru"] in message.get_body(("plain",)).get_content()
