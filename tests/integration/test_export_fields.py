"""Exports carry the site's fields (docs/using/import.md#export): a column
per defined field after the subscriber's own, then ``language``; and an
export read back by the CSV import gives the same values, through the real
command line on real files."""

from __future__ import annotations

import csv
import io

from vykhukhol import services as svc
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import FIELDS
from vykhukhol.settings import fields as site_fields
from vykhukhol.settings.fields import Field


def define(site) -> None:
    site_fields.add(site.data.root, Field("city", "text", labels={"ru": "Город", "en": "City"}))
    site_fields.add(site.data.root, Field("born", "date", labels={"en": "Birthday"}))
    site_fields.add(site.data.root, Field("vip", "yesno"))


def give(site, service: str, email: str, values: dict[str, str | None], language: str | None) -> None:
    path = svc.find_service(site.data, service).subscribers_path
    assert subs.update_one(path, email, lambda s: s.with_fields(values).with_language(language))


def test_an_export_carries_the_fields_and_reads_back_the_same(site, tmp_path):
    site.service("news")
    site.service("copy")
    define(site)
    site.subscriber("news", "anna@example.org", "Anna")
    site.subscriber("news", "boris@example.org", "=Boris; -1")
    site.subscriber("news", "clara@example.org", "Clara")
    give(site, "news", "anna@example.org", {"city": "Тверь, центр", "born": "1990-05-01",
                                            "vip": "yes"}, "ru")
    give(site, "news", "boris@example.org", {"city": "-5 =SUM(A1)"}, "en")
    exported = tmp_path / "news.csv"
    site.cli("subscriber", "export", "news", str(exported))
    rows = list(csv.reader(io.StringIO(exported.read_text(encoding="utf-8-sig"))))
    assert rows[0] == [*FIELDS, "city", "born", "vip", "language"]
    anna = dict(zip(rows[0], next(r for r in rows if r[0] == "anna@example.org"), strict=True))
    assert (anna["city"], anna["born"], anna["vip"], anna["language"]) == (
        "Тверь, центр", "1990-05-01", "yes", "ru")
    result = site.cli("subscriber", "import", "copy", str(exported))
    assert "3 added" in result.stdout and "0 invalid" in result.stdout, result.stderr
    before, after = site.subscribers("news"), site.subscribers("copy")
    assert sorted(after) == sorted(before)
    for email, sub in before.items():
        assert (after[email].name, after[email].fields, after[email].language) == (
            sub.name, sub.fields, sub.language), email
    site.service("third")
    site.cli("import-from", "csv", str(exported), "--service", "third")
    again = site.subscribers("third")
    for email, sub in before.items():
        assert (again[email].fields, again[email].language) == (sub.fields, sub.language), email


def test_an_export_without_fields_still_says_each_language(site, tmp_path):
    site.service("news")
    site.subscriber("news", "anna@example.org", "Anna")
    give(site, "news", "anna@example.org", {}, "en")
    out = site.cli("subscriber", "export", "news").stdout
    rows = list(csv.reader(io.StringIO(out.removeprefix("\ufeff"))))
    assert rows[0] == [*FIELDS, "language"] and rows[1][-1] == "en"


def test_the_csv_import_refuses_a_bad_value_naming_its_line_and_column(site, tmp_path):
    site.service("news")
    define(site)
    path = tmp_path / "people.csv"
    path.write_text("email;name;Birthday;Vip\nanna@example.org;Anna;31.12.1990;да\n"
                    "boris@example.org;Boris;1990-13-01;no\n", encoding="utf-8")
    result = site.cli("subscriber", "import", "news", str(path))
    assert "1 added" in result.stdout and "1 invalid" in result.stdout
    assert "Columns to fields: Birthday → born; Vip → vip." in result.stdout
    assert "line 3: 'boris@example.org;Boris;1990-13-01;no': column Birthday: Birthday: a date" \
        in result.stderr
    assert site.subscribers("news")["anna@example.org"].fields == {"born": "1990-12-31",
                                                                  "vip": "yes"}
