"""Imports fill the site's fields (docs/using/import.md#import-fields): each
tool's columns (Mailchimp's merge fields by their labels, listmonk's
attributes, phpList's attributes) matched to a defined field by name or
label, ``--map`` deciding instead, the dry run listing the mapping, a value
that does not fit refusing its row and no other, and a language column
setting the reader's language — all through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vykhukhol.settings import fields as site_fields
from vykhukhol.settings.fields import Field


@pytest.fixture
def defined(site):
    site.service("news")
    site_fields.add(site.data.root, Field("city", "text", labels={"ru": "Город", "en": "City"}))
    site_fields.add(site.data.root, Field("age", "number", labels={"ru": "Возраст", "en": "Age"}))
    site_fields.add(site.data.root, Field("plan", "choice", labels={"en": "Plan"},
                                          choices=("Free", "Pro")))
    return site


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_csv_fills_fields_by_name_and_label_and_refuses_only_the_bad_row(defined, tmp_path):
    site = defined
    path = write(tmp_path, "people.csv",
                 "email,name,City,AGE,tariff,Language,notes\n"
                 "anna@example.org,Anna,Тверь,41,Pro,ru_RU,x\n"
                 "boris@example.org,Boris,Omsk,forty,Free,en,y\n"
                 "clara@example.org,Clara,,1 000,,de,z\n")
    result = site.cli("import-from", "csv", str(path), "--service", "news", "--map", "Tariff=plan")
    assert result.returncode == 0, result.stderr
    people = site.subscribers("news")
    assert sorted(people) == ["anna@example.org", "clara@example.org"]
    assert people["anna@example.org"].fields == {"city": "Тверь", "age": "41", "plan": "Pro"}
    assert people["anna@example.org"].language == "ru"
    assert people["clara@example.org"].fields == {"age": "1000"}
    assert people["clara@example.org"].language is None, "a language other than ru or en says nothing"
    assert "line 3, column AGE: 'boris@example.org,Boris,Omsk,forty" in result.stderr
    assert "Age: a number such as 42 or 12.5" in result.stderr
    assert "refused: 1." in result.stdout


def test_the_dry_run_lists_the_mapping_and_the_unused_columns(defined, tmp_path):
    site = defined
    path = write(tmp_path, "people.csv", "email,Town,Возраст,lang,notes\nanna@example.org,Тверь,7,en,x\n")
    result = site.cli("import-from", "csv", str(path), "--service", "news", "--dry-run",
                      "--map", "town=city")
    assert result.returncode == 0, result.stderr
    assert "Columns to fields: Town → city; Возраст → age; lang → the reader's language." \
        in result.stdout
    assert "Columns left unused: notes." in result.stdout
    assert site.subscribers("news") == {}
    left_out = site.cli("import-from", "csv", str(path), "--service", "news", "--dry-run",
                        "--map", "Возраст=-")
    assert "Возраст → age" not in left_out.stdout and "unused: Town, Возраст, notes." in left_out.stdout


def test_a_map_naming_no_field_or_no_column_imports_nothing(defined, tmp_path):
    site = defined
    path = write(tmp_path, "people.csv", "email,Town\nanna@example.org,Тверь\n")
    for choice, said in (("Town=town", "no field is named 'town'"),
                         ("Village=city", "the file has no column Village"),
                         ("Town", "--map takes COLUMN=FIELD")):
        result = site.cli("import-from", "csv", str(path), "--service", "news", "--map", choice,
                          check=False)
        assert result.returncode != 0 and said in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    assert site.subscribers("news") == {}


def test_mailchimp_merge_fields_fill_fields_by_their_labels(defined, tmp_path):
    site = defined
    path = write(tmp_path, "subscribed_members_export_1.csv",
                 '"Email Address","First Name","City","Plan",MEMBER_RATING,OPTIN_TIME,LEID,EUID\n'
                 'anna@example.org,Anna,Тверь,pro,2,"2024-01-02 10:00:00",1,a1\n'
                 'boris@example.org,Boris,Omsk,Gold,2,"2024-01-02 10:00:00",2,b2\n')
    result = site.cli("import-from", "mailchimp", str(path), "--service", "news")
    assert result.returncode == 0, result.stderr
    assert site.subscribers("news")["anna@example.org"].fields == {"city": "Тверь", "plan": "Pro"}
    assert "boris@example.org" not in site.subscribers("news")
    assert "line 3, column Plan: " in result.stderr and "Plan: one of Free, Pro" in result.stderr


def test_listmonk_attributes_fill_fields_and_the_language(defined, tmp_path):
    site = defined
    rows = [("anna@example.org", {"city": "Тверь", "age": 41, "lang": "ru"}),
            ("boris@example.org", {"City": "Omsk", "age": [1]})]
    lines = ["uuid,email,name,attributes,status,created_at,updated_at"]
    for n, (email, attributes) in enumerate(rows):
        quoted = '"' + json.dumps(attributes, ensure_ascii=False).replace('"', '""') + '"'
        lines.append(f"u{n},{email},X,{quoted},enabled,2024-01-15 10:30:00 +0000 UTC,"
                     "2024-01-15 10:30:00 +0000 UTC")
    path = write(tmp_path, "subscribers.csv", "\n".join(lines) + "\n")
    result = site.cli("import-from", "listmonk", str(path), "--service", "news", "--dry-run")
    assert "Columns to fields: city → city; age → age; lang → the reader's language." \
        in result.stdout, result.stdout
    result = site.cli("import-from", "listmonk", str(path), "--service", "news")
    anna = site.subscribers("news")["anna@example.org"]
    assert anna.fields == {"city": "Тверь", "age": "41"} and anna.language == "ru"
    assert "line 3, column age: " in result.stderr


def test_phplist_attributes_fill_fields_by_their_names(defined, tmp_path):
    site = defined
    path = write(tmp_path, "export.csv",
                 "Email\tIs this subscriber confirmed\tIs this subscriber blacklisted\tCity\tLanguage\t\n"
                 "anna@example.org\t1\t0\tТверь\tEnglish\t\n")
    result = site.cli("import-from", "phplist", str(path), "--service", "news")
    assert result.returncode == 0, result.stderr
    anna = site.subscribers("news")["anna@example.org"]
    assert anna.fields == {"city": "Тверь"} and anna.language == "en"


def test_someone_who_left_is_suppressed_whatever_their_values(defined, tmp_path):
    site = defined
    path = write(tmp_path, "people.csv", "email,status,age\nanna@example.org,unsubscribed,many\n")
    result = site.cli("import-from", "csv", str(path), "--service", "news")
    assert result.returncode == 0, result.stderr
    assert "refused: 0." in result.stdout and "1 new on the suppression list" in result.stdout
