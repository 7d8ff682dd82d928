"""``fields`` in letters (docs/using/fields.md#fields-templates): a series
letter, a confirmation request of a service's own text and a newsletter's
:func:`vykhukhol.render.fields_context` read the reader's values, escaped in
HTML, as nothing (or a ``default``) when missing, and never ending a line of
the letter, even a value a hand edit of the file put a line feed into. Real
runs of the sender into the outbox."""

from __future__ import annotations

from support.webtools import plain_text
from vykhukhol import render
from vykhukhol import services as svc
from vykhukhol.render import checkup
from vykhukhol.services import subscribers as subs

SUBJECT = "Hi from {{ fields.city | default('nowhere') }}"
BODY = "Dear {{ fields.city | default('friend') }}, plan {{ fields.plan }}|{{ fields.items }}.\n"
HTML = "<p>{{ fields.city }}</p>"


def test_a_series_letter_reads_the_readers_values_escaped_and_on_one_line(site):
    site.ok("field", "add", "city", "--type", "text")
    site.ok("field", "add", "items", "--type", "text")
    service = site.service("news")
    svc.add_letter(service, SUBJECT, "0s", BODY, html=HTML)
    site.subscriber("news", "anna@example.org", name="Anna")
    site.subscriber("news", "bob@example.org", name="Bob")
    # A value as a hand edit may leave it: an escaped line feed, markup.
    path = service.subscribers_path
    subs.update_one(path, "anna@example.org", lambda s: s.replace(
        extra=[*s.extra, "f.city=<b>Tver</b>%0ABcc: x@evil.example", "f.items=I"]))

    site.ok("cron")
    letters = {str(m["To"]): m for m in site.outbox()}
    anna = letters["Anna <anna@example.org>"]
    assert str(anna["Subject"]) == "Hi from <b>Tver</b> Bcc: x@evil.example"
    assert anna["Bcc"] is None
    assert plain_text(anna).startswith("Dear <b>Tver</b> Bcc: x@evil.example, plan |I.")
    html = anna.get_body(("html",)).get_content()
    assert "<p>&lt;b&gt;Tver&lt;/b&gt; Bcc: x@evil.example</p>" in html
    bob = letters["Bob <bob@example.org>"]
    assert str(bob["Subject"]) == "Hi from nowhere"
    assert plain_text(bob).startswith("Dear friend, plan |.")


def test_a_confirmation_of_the_services_own_text_reads_the_values_the_form_gave(site):
    site.ok("field", "add", "city", "--type", "text")
    site.service("news", confirm_subject="Welcome, {{ fields.city | default('friend') }}",
                 confirm_body="Confirm: {{ confirm_url }}\n")
    site.subscribe("news", "anna@example.org", name="Anna", fields={"city": "Тверь"})
    site.subscribe("news", "bob@example.org", name="Bob")
    subjects = sorted(str(m["Subject"]) for m in site.outbox())
    assert subjects == ["Welcome, friend", "Welcome, Тверь"]
    assert site.subscribers("news")["anna@example.org"].fields == {"city": "Тверь"}


def test_fields_context_is_what_a_newsletter_gives_its_templates():
    values = render.fields_context({"city": "a\r\nb", "plan": ""})
    assert render.render("{{ fields.city }}|{{ fields.plan | default('none') }}",
                         {"fields": values}) == "a  b|none"
    assert render.render_html("{{ fields.city }}", {"fields": render.fields_context(
        {"city": "<i>"})}) == "&lt;i&gt;"
    assert render.render("[{{ fields }}]", {"fields": values}) == "[]"


def test_a_template_reading_fields_is_no_unknown_variable_and_passes_the_checkup(site):
    assert render.unknown_variables(BODY) == []
    assert checkup.letter_problem(SUBJECT, BODY, HTML) is None
    site.service("news")
    code, out, err = site.call("letter", "add", "news", "--subject", SUBJECT, "--delay", "1d",
                               "--body", BODY)
    assert code == 0 and "not a variable" not in err, err
