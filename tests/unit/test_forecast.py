"""When a newsletter will be done (docs/using/newsletters.md#forecast): the pace from the runs the
cron was seen to start, the caps, the learned pace; the daily cap walked day
by day; the words in both languages."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from vykhukhol.files import kv
from vykhukhol.watch import forecast

UTC = timezone.utc
NOON = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)  # a Tuesday


def test_the_pace_is_the_least_of_the_runs_the_caps_and_what_the_server_taught():
    assert forecast.hourly(50, 300, 0, None) == 600       # 50 a run, 12 runs an hour
    assert forecast.hourly(50, 300, 200, None) == 200     # hourly_limit
    assert forecast.hourly(50, 300, 0, 120.0) == 120      # the learned pace
    assert forecast.hourly(50, 3600, 0, None) == 50       # a cron seen once an hour


def test_a_daily_cap_moves_the_rest_to_the_next_local_day():
    # 1,000 letters at 100 an hour: 10 hours without a cap...
    assert forecast.finish(1000, NOON, NOON, 100, 0, "UTC") == NOON + timedelta(hours=10)
    # ...but at most 500 a day: 500 by 17:00, the next 500 from midnight on.
    done = forecast.finish(1000, NOON, NOON, 100, 500, "UTC")
    assert done == datetime(2026, 12, 2, 5, 0, tzinfo=UTC)


def test_a_job_that_starts_later_counts_from_its_start():
    start = NOON + timedelta(days=2)
    assert forecast.finish(100, start, NOON, 100, 0, "UTC") == start + timedelta(hours=1)
    assert forecast.finish(0, start, NOON, 100, 0, "UTC") == start


def test_nothing_allowed_is_more_than_a_year():
    assert forecast.finish(10, NOON, NOON, 0, 0, "UTC") is None
    assert forecast.describe(None, NOON, "en", "UTC") == "more than a year"


def test_the_words_in_both_languages():
    thursday = datetime(2026, 12, 3, 14, 0, tzinfo=UTC)
    assert forecast.describe(thursday, NOON, "en", "UTC") == "about 2 days: finishes Thursday 14:00"
    assert forecast.describe(thursday, NOON, "ru", "UTC") == "около 2 дней: закончится в четверг в 14:00"
    assert forecast.describe(NOON + timedelta(hours=5), NOON, "en", "UTC") == \
        "about 5 hours: finishes Tuesday 17:00"
    assert forecast.describe(NOON + timedelta(minutes=20), NOON, "ru", "UTC") == \
        "в течение часа: закончится в 12:20"


def test_the_cron_gap_and_the_learned_pace_come_from_their_files(site):
    assert forecast.cron_gap(site.data) == forecast.DEFAULT_GAP
    kv.write_kv(site.data.state / "cron", {"median_gap": "900"})
    assert forecast.cron_gap(site.data) == 900
    said = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    assert forecast.learned_pace(site.data, said, 0) is None
    # pace 240 an hour when the server said so, 480 in the hour before (watch/pace.py)
    kv.write_kv(site.data.state / "pace", {"smtp.example.org": "240 2026-12-01T10:00:00Z 480"})
    assert forecast.learned_pace(site.data, said, 0) == 240
    assert forecast.learned_pace(site.data, said + timedelta(hours=2), 0) == pytest.approx(290.4)


def test_newsletter_list_says_when_each_job_finishes(site):
    site.service("news", letters=[("L", "0s", "Hi.")])
    for i in range(30):
        site.subscriber("news", f"r{i}@example.org", state="active")
    site.set(news_per_run=10)
    kv.write_kv(site.data.state / "cron", {"median_gap": "3600"})  # a cron once an hour
    site.ok("newsletter", "create", "--services", "news", "--subject", "Hello", "--body", "Hi")
    [header, line] = site.ok("newsletter", "list").splitlines()
    assert header.startswith("#job\t")
    assert line.endswith(": finishes " + line.rsplit("finishes ", 1)[1])
    assert "about 3 hours" in line  # 30 recipients, 10 an hour


def test_a_braked_newsletter_is_paused_in_the_list_the_history_and_the_forecast(site):
    """Braked by complaints, a newsletter sends nothing until it is resumed:
    no finish time is forecast; the list, the admin's jobs and History say it
    is paused, why, and that it finishes only after a resume."""
    from support.servetools import call, environ, log_in
    from vykhukhol.bounces import tally
    from vykhukhol.newsletters import history
    from vykhukhol.watch import brakes
    from vykhukhol.web import admin as admin_mod

    site.service("news", letters=[("L", "0s", "Hi.")])
    for i in range(30):
        site.subscriber("news", f"r{i}@example.org", state="active")
    job = site.ok("newsletter", "create", "--services", "news", "--subject", "Hello",
                  "--body", "Hi").strip()
    history.begin(site.data, job, "Hello", ["news"], NOON)  # its first run, then the brake
    brake = brakes.Brake(brakes.target(brakes.NEWSLETTER, job), brakes.COMPLAINTS, 30, 3, 0,
                         10.0, 5.0, "2026-12-01T12:00:00Z")
    tally.latch(site.data, brake.target, brake.to_json())

    [_, line] = site.ok("newsletter", "list").splitlines()
    assert line.endswith("\tpaused, complaints: 3 of 30 letters (10.00 %, the brake at 10 %): "
                         "it finishes only after it is resumed"), line
    assert forecast.paused(brake, "ru") == (
        "приостановлена, жалобы: 3 из 30 (10.00 %, тормоз на 10 %): "
        "закончится только после возобновления")

    site.set(language="en")
    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, _ = log_in(app)
    status, _, page, _ = call(app, environ("GET", "/newsletters", "", b"", "", "missing",
                                           script="/admin", HTTP_COOKIE=cookie))
    assert status == 200, page
    jobs, history = page.split('id="history"')
    said = "paused, complaints: 3 of 30 letters (10.00 %, the brake at 10 %)"
    assert said in jobs and "within the hour" not in jobs
    assert said in history.split(f'id="history-{job}"')[1].split("</tr>")[0]
