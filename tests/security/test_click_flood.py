"""A flood of clicks on one link cannot grow a letter's counts file without bound.

go.py counts a click for anyone holding a letter's link, and a mail scanner
or a script can follow it thousands of times an hour. The counts file keeps
one counter per link and hour (docs/using/clicks.md#clicks), so 10,000 clicks
of one link in an hour leave a line or two, and the admin's History table
and ``vykhukhol newsletter history --json`` still add them up right; a file
written one line a click, as older versions did, still reads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

from support.servetools import call, environ, log_in
from vykhukhol import tokens
from vykhukhol.web import admin as admin_mod
from vykhukhol.web import go

CLICKS = 10_000


def counted_newsletter(site, tmp_path: Path) -> str:
    site.set(language="en", site_url="https://lists.example.org")
    site.service("news")
    site.subscriber("news", "anna@example.org")
    (tmp_path / "body.txt").write_text("Read https://example.org/a and https://example.org/b\n",
                                       encoding="utf-8")
    job = site.cli("newsletter", "create", "--services", "news", "--subject", "News",
                   "--body-file", str(tmp_path / "body.txt"), "--clicks").stdout.strip()
    site.run_at()
    return job


def history_json(site) -> dict:
    return {entry["job"]: entry for entry in json.loads(
        site.cli("newsletter", "history", "--json").stdout)}


def admin_total(site, job: str) -> str:
    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, _ = log_in(app)
    status, _, page, _ = call(app, environ("GET", "/newsletters", "", b"", "", "missing",
                                           script="/admin", HTTP_COOKIE=cookie))
    assert status == 200, page
    row = re.search(rf'<tr id="history-{re.escape(job)}">.*?</tr>', page, re.S)
    assert row, page
    return re.findall(r'<td class="num">([^<]*)</td>', row.group(0))[-1]


def test_ten_thousand_clicks_of_one_link_leave_a_few_lines_and_the_right_totals(site,
                                                                                tmp_path) -> None:
    job = counted_newsletter(site, tmp_path)
    app = go.app(site.data)
    query = urlsplit(tokens.click_link("", site.settings().secret, job, 1)).query
    for _ in range(CLICKS):
        status, headers, _, errors = call(app, environ("GET", "", query, b"", "", "missing",
                                                       script="/cgi/go.py"))
        assert status == 302 and headers["Location"] == "https://example.org/a", errors
    lines = (site.data.clicks / f"{job}.counts").read_text().splitlines()
    assert 1 <= len(lines) <= 2, lines[:5]  # one hour, or two if the hour turned meanwhile
    entry = history_json(site)[job]
    assert entry["clicks"] == CLICKS
    assert [link["clicks"] for link in entry["links"]] == [CLICKS, 0]
    assert admin_total(site, job) == str(CLICKS)


def test_a_counts_file_of_one_line_a_click_still_reads_and_is_folded(site, tmp_path) -> None:
    job = counted_newsletter(site, tmp_path)
    counts = site.data.clicks / f"{job}.counts"
    counts.write_text("2026-12-01T09\t1\n" * 3 + "2026-12-01T09\t2\n" + "junk\n", encoding="utf-8")
    assert [link["clicks"] for link in history_json(site)[job]["links"]] == [3, 1]
    app = go.app(site.data)
    query = urlsplit(tokens.click_link("", site.settings().secret, job, 2)).query
    status, _, _, errors = call(app, environ("GET", "", query, b"", "", "missing",
                                             script="/cgi/go.py"))
    assert status == 302, errors
    lines = counts.read_text().splitlines()
    assert lines[:2] == ["2026-12-01T09\t1\t3", "2026-12-01T09\t2\t1"], lines
    assert len(lines) == 3 and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d\t2\t1", lines[2]), lines
    assert [link["clicks"] for link in history_json(site)[job]["links"]] == [3, 2]
    assert admin_total(site, job) == "5"
