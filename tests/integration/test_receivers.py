"""Letters per day to the big mailbox providers (docs/deliverability/reputation.md#bulk-line): a real
`vykhukhol cron` run counts what it handed over per provider into
data/state/receivers, and the status warns before Gmail's bulk line."""

from __future__ import annotations

import re
from datetime import date

from vykhukhol import i18n
from vykhukhol.watch import health, receivers

LESSONS = [("Lesson 1", "0s", "Hello.")]


def test_a_run_counts_its_letters_per_big_provider_and_the_page_shows_them(site):
    site.service("course", letters=LESSONS)
    for address in ("ann@gmail.com", "bob@GoogleMail.com", "cy@yandex.ru", "di@hotmail.co.uk",
                    "ed@mail.ru", "fay@yahoo.fr", "gus@example.com"):
        site.subscriber("course", address)
    report = site.run_at()
    assert site.sent_counts(report) == {"course": 7}
    days = receivers.recent(site.data)
    assert len(days) == 1
    assert days[0][1] == {"gmail": 2, "yandex": 1, "microsoft": 1, "mailru": 1, "yahoo": 1}
    site.subscriber("course", "hal@gmail.com")
    site.run_at()
    assert receivers.recent(site.data)[0][1]["gmail"] == 3  # added to, not replaced
    assert not any("Gmail" in w for w in health.warnings(site.data, site.settings(), site.cgi_dir))


def test_the_status_warns_before_gmails_bulk_line_in_both_languages(site):
    today = date.today().isoformat()
    receivers.note_run(site.data.state, "2026-01-01", {"gmail": 9000})  # long ago: dropped below
    for day in range(1, receivers.KEEP_DAYS + 1):
        receivers.note_run(site.data.state, f"2026-02-{day:02d}", {"gmail": 10})
    receivers.note_run(site.data.state, today, {"gmail": 4001, "yandex": 5})
    assert all(day != "2026-01-01" for day, _ in receivers.recent(site.data, 100))
    warned = [w for w in health.warnings(site.data, site.settings(), site.cgi_dir) if "Gmail" in w]
    assert warned == [f"4001 letters went to Gmail addresses on {today}. From 5000 a day Gmail counts "
                      "the site as a bulk sender for good, and then demands SPF and DKIM, a DMARC "
                      "record with the From domain aligned, one-click unsubscribe honoured within "
                      "two days and complaints under 0.3%: check the Deliverability page "
                      "(`vykhukhol doctor`) now."]

    def ru(text, /, **values):
        return i18n.tr("ru", text, **values)

    def ru_n(singular, plural, n, /, **values):
        return i18n.ntr("ru", singular, plural, n, **values)

    russian = [w for w in health.warnings(site.data, site.settings(), site.cgi_dir, ru, ru_n)
               if "Gmail" in w]
    assert russian and russian[0].startswith(f"{today} на адреса Gmail ушло 4001 письмо.")
    assert re.search("Доставляемость", russian[0])
    out = site.ok("status")
    assert "warning: 4001 letters went to Gmail" in out


def test_a_hand_edited_tally_line_reads_as_nothing(site):
    site.data.state.mkdir(parents=True, exist_ok=True)
    (site.data.state / receivers.FILE).write_text("2026-02-01 gmail\tlots\n2026-02-01 nobody\t3\n")
    assert receivers.recent(site.data) == [("2026-02-01", {"gmail": 0})]
    assert receivers.busiest_gmail_day(site.data) is None
