"""The brakes on the admin's pages in Chromium
(docs/deliverability/reputation.md#brakes): Status says what is braked and why, with the figures; the
Services and Newsletters pages show it in the row with a "Resume sending"
button (a POST with the CSRF token), which lets it go on; the same in Russian.
Screenshots in tests/artifacts/.

The figures are put in data/state/brakes through its own module (what the
runs and the bounce batch write there is tests/integration/test_brakes.py's).
"""

from __future__ import annotations

from vykhukhol import newsletters
from vykhukhol.bounces import tally
from vykhukhol.timeutil import now


def braked(site, key: str, letters: int, complaints: int) -> None:
    tally.count_letters(site.data, {key: (letters, 0)}, now())
    tally.count_reports(site.data, [(key, tally.COMPLAINTS)] * complaints, f"batch-{key}", now())


def test_a_braked_service_and_newsletter_are_shown_and_resumed(site, server, browser):
    site.service("news", letters=[("Hello", "0s", "Hi.")])
    site.service("calm", letters=[("Hello", "0s", "Hi.")])
    site.subscriber("news", "anna@example.org")
    job = newsletters.create(site.data, ["news"], "Big news", "Hello.", None, None)
    braked(site, "service news", 1000, 4)
    braked(site, "service calm", 1000, 2)  # under the least count: not braked
    braked(site, f"newsletter {job}", 2000, 3)
    b = browser
    b.log_in()
    b.open("/admin/")
    page = b.text()
    assert ("Service news is braked: in the last 30 days, of its 1000 letters, complaints: 4 "
            "(0.40 %, the brake at 0.1 %)") in page
    assert f"Newsletter {job} is braked" in page and "Service calm" not in page

    b.open("/admin/services")
    assert "0.40 %" in b.text("#braked-news")
    assert not b.all("#braked-calm")
    b.screenshot("brakes-services-en")
    b.press("#resume-news")
    assert "Service news resumed" in b.flash()
    assert not b.all("#braked-news")
    b.open("/admin/")
    assert "Service news is braked" not in b.text()

    site.set(language="ru")
    b.open("/admin/newsletters")
    row = b.text(f"#braked-{job}")
    assert f"Выпуск {job} заторможен" in row and "жалоб: 3 (0.15 %" in row, row
    b.screenshot("brakes-newsletters-ru")
    b.press(f"#resume-{job}")
    assert f"Выпуск {job} возобновлён" in b.flash()
    assert not b.all(f"#braked-{job}")
