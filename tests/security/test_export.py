"""Formula cells in the CLI export.

A subscriber named ``=cmd|' /C calc'!A0`` (anyone can choose their name on
the public form) was written unchanged by ``vykhukhol subscriber export``,
while the admin's export.csv defused it: a spreadsheet opening the CLI's file
would run it. Both exports are now one function; the CLI is run for real.
"""

from __future__ import annotations

import csv
import io

from support.servetools import call, environ, log_in
from vykhukhol.web import admin

FORMULAS = ["=cmd|' /C calc'!A0", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(1+1)*cmd|' /C calc'!A0"]


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_cli_export_writes_no_formula_cell_and_matches_the_admin_export(site, tmp_path):
    site.service("news")
    for number, name in enumerate(FORMULAS):
        site.cli("subscriber", "add", "news", f"u{number}@example.org", f"--name={name}", "--confirmed")
    target = tmp_path / "export.csv"
    site.cli("subscriber", "export", "news", str(target))
    to_stdout = site.cli("subscriber", "export", "news").stdout

    rows = _rows(target.read_text(encoding="utf-8"))
    names = [row[1] for row in rows[1:]]
    assert names == ["'" + name for name in FORMULAS]
    for row in rows:
        for cell in row:
            assert cell == "-" or not cell.startswith(("=", "+", "-", "@")), row
    assert to_stdout.replace("\r\n", "\n") == target.read_text(encoding="utf-8").replace("\r\n", "\n")

    app = admin.app(site.data, site.cgi_dir)
    cookie, _ = log_in(app)
    # The CLI writes commas; the admin's comma dialect is the same file.
    status, headers, body, _ = call(app, environ("GET", "/services/news/export.csv", "dialect=comma",
                                                 b"", "", "missing", script="/admin",
                                                 HTTP_COOKIE=cookie))
    assert status == 200 and headers["Content-Type"].startswith("text/csv")
    assert body == target.read_bytes().decode("utf-8")
