"""A letter that cannot be made (an unclosed ``{% if %}`` left in 003.txt by
an FTP edit) is an alert to admin_email, at most once an hour and in the
site's language, and a warning on Status until it is fixed; the other
letters go on (docs/using/services.md#broken-letter)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from vykhukhol import services as svc
from vykhukhol.timeutil import now
from vykhukhol.watch import health

ADMIN = "admin@example.org"
SUBJECT = "not can make the letter"


def mailed(site, subject: str) -> list:
    return [m for m in site.outbox() if m["Subject"] == subject]


def course_with_a_broken_third_letter(site):
    service = site.service("course", letters=[("One", "0s", "1"), ("Two", "0s", "2"),
                                              ("Three", "0s", "3")])
    (service.letters_dir / "003.txt").write_text(
        "Subject: Three\nDelay: 0s\n\n{% if name %}Hello {{ name }}\n", encoding="utf-8")
    site.subscriber("course", "far@example.org", sent=2, last_sent_ago=7200)
    site.subscriber("course", "new@example.org", sent=0)
    return service


@pytest.mark.parametrize("lang, words", [("en", "its template has a mistake"),
                                         ("ru", "в его шаблоне ошибка")])
def test_a_broken_letter_alerts_once_an_hour_in_the_sites_language(site, lang, words) -> None:
    site.set(language=lang)
    course_with_a_broken_third_letter(site)
    first = now()
    report = site.run_at(first)
    [alert] = mailed(site, SUBJECT)
    text = alert.get_body(("plain",)).get_content()
    assert words in text and "course, 3" in text and "line 1" in text.replace("строка", "line")
    assert SUBJECT in report  # the run says so, not "all done" in silence
    # the others went on: letter 1 to the new subscriber
    assert [m["Subject"] for m in site.outbox() if m["To"].addresses[0].addr_spec
            == "new@example.org"] == ["One"]
    assert site.subscribers("course")["far@example.org"].sent == 2  # waits, not moved on
    site.run_at(first + timedelta(minutes=30))
    assert len(mailed(site, SUBJECT)) == 1  # at most once an hour
    site.run_at(first + timedelta(minutes=61))
    assert len(mailed(site, SUBJECT)) == 2


def test_status_warns_of_the_broken_letter_until_it_is_fixed(site) -> None:
    service = course_with_a_broken_third_letter(site)
    found = [w for w in health.warnings(site.data, site.settings(), site.cgi_dir)
             if "letter 3 cannot be made" in w]
    assert found and "course" in found[0] and "line 1" in found[0]
    svc.edit_letter(service, 3, "Three", "0s", "{% if name %}Hello {{ name }}{% endif %}\n", None)
    assert not [w for w in health.warnings(site.data, site.settings(), site.cgi_dir)
                if "cannot be made" in w]
    site.run_at(now())
    assert site.subscribers("course")["far@example.org"].sent == 3


def test_a_broken_site_footer_is_a_status_warning(site) -> None:
    site.service("course", letters=[("One", "0s", "1")])
    (site.root / "footer.html").write_text("{{ unsubscribe_url ", encoding="utf-8")
    assert [w for w in health.warnings(site.data, site.settings(), site.cgi_dir)
            if w.startswith("The site's footer")]
