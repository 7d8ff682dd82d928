"""Times at the calendar's ends typed into a subscriber file (0001-01-01,
9999-12-31) are valid lines: a run, a rewrite and the admin pages must take
them without a traceback and without turning them into malformed lines.
(The long fuzz campaign found both: strftime wrote the year 1 as "1", and a
delay added to 9999-12-31 overflowed.)"""

from __future__ import annotations

import pytest

from support.servetools import call, environ, log_in
from vykhukhol.services import subscribers as subs
from vykhukhol.timeutil import format_time, parse_time
from vykhukhol.web import admin as admin_mod

LINES = [
    "late@example.org\tLate\tactive\t9999-12-31T23:59:59Z\t9999-12-31T23:59:59Z\t1\t"
    "9999-12-31T23:59:59Z\t0\t-\t0\t-",
    "early@example.org\tEarly\tnew\t0001-01-01T00:00:00Z\t-\t0\t-\t0\t0001-01-01T00:00:00Z\t0\t-",
    "first@example.org\tFirst\tactive\t0001-01-01T00:00:00Z\t0001-01-01T00:00:00Z\t0\t-\t0\t-\t0\t-",
]


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00Z", "0999-12-31T23:59:59Z",
                                  "9999-12-31T23:59:59Z"])
def test_a_time_written_out_reads_back_the_same(text):
    assert format_time(parse_time(text)) == text


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Tokyo"])
def test_a_run_and_the_admin_pages_take_times_at_the_calendars_ends(site, zone):
    site.set(timezone=zone)
    service = site.service("course", letters=[("One", "0s", "x"), ("Two", "1d", "y")])
    with service.subscribers_path.open("a", encoding="utf-8") as out:
        out.write("".join(line + "\n" for line in LINES))

    report = site.run_at()
    assert report.splitlines()[-1].endswith("done"), report
    members = site.subscribers("course")  # every line still parses after the rewrite
    assert {"late@example.org", "early@example.org", "first@example.org"} <= members.keys()
    assert not [item for item in subs.read(service.subscribers_path)
                if isinstance(item, subs.Malformed)]
    assert members["first@example.org"].sent == 1  # due since the year 1: sent

    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, _ = log_in(app)
    for path in ("/", "/services/course", "/services/course/subscribers"):
        status, _, page, _ = call(app, environ("GET", path, "", b"", "", "missing",
                                               script="/admin", HTTP_COOKIE=cookie))
        assert status == 200, f"{path}: {page[:300]}"
