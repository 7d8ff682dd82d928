"""The learned pace in Chromium: the Status page shows the server's learned
pace and when it last said "too many" (docs/deliverability/reputation.md#pace)."""

from __future__ import annotations

from datetime import timedelta

from vykhukhol.files import kv
from vykhukhol.timeutil import format_time, now


def test_the_status_page_shows_the_learned_pace(site, server, browser):
    site.set(mail__transport="smtp", mail__smtp_host="127.0.0.1", hourly_limit=40)
    said = (now() - timedelta(minutes=70)).replace(microsecond=0)
    kv.write_kv(site.data.state / "pace", {"127.0.0.1": f"12.00 {format_time(said)} 24"})
    b = browser
    b.log_in()
    b.open("/admin/")
    box = b.text("#pace")
    # One clean hour since: 12 × 1.1 = 13.2, whole letters 13, rising up to hourly_limit.
    assert "127.0.0.1: at most 13 letters an hour, a tenth more each clean hour up to 40." in box
    assert "The server last said “too many” at" in box
    b.screenshot("status-pace-en")
