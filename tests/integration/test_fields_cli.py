"""``vykhukhol field add|list|remove``: the site's fields from the command line
(docs/using/fields.md#fields-cli), through the real command in a subprocess."""

from __future__ import annotations

import json

from support.clikit import refused


def test_a_field_added_is_listed_kept_in_fields_ini_and_removed(site):
    added = site.cli("field", "add", "city", "--type", "text", "--label-ru", "Город",
                     "--label-en", "City")
    assert added.stdout == "field city added (text)\n"
    site.cli("field", "add", "plan", "--type", "choice", "--choices", "Free|Pro", "--required")

    table = site.cli("field", "list").stdout.splitlines()
    assert table[0].split() == ["#name", "type", "required", "label_ru", "label_en", "choices"]
    assert table[1].split() == ["city", "text", "no", "Город", "City", "-"]
    assert table[2].split() == ["plan", "choice", "yes", "-", "-", "Free", "|", "Pro"]
    listed = json.loads(site.cli("field", "list", "--json").stdout)
    assert listed[1] == {"name": "plan", "type": "choice", "required": True, "label_ru": "",
                         "label_en": "", "choices": ["Free", "Pro"]}
    text = (site.root / "fields.ini").read_text(encoding="utf-8")
    assert "[city]\ntype = text\nrequired = no\nlabel_en = City\nlabel_ru = Город\n" in text

    site.service("news")
    site.cli("service", "edit", "news", "--form-fields", "plan, city")
    removed = site.cli("field", "remove", "city")
    assert removed.stdout.startswith("field city removed")
    assert "service news: its subscribe form no longer asks for it" in removed.stdout
    assert "form_fields = plan\n" in (site.data.db("main") / "news" / "service.ini").read_text()
    assert [f["name"] for f in json.loads(site.cli("field", "list", "--json").stdout)] == ["plan"]


def test_an_empty_list_prints_its_header_and_an_empty_json_list(site):
    assert site.cli("field", "list").stdout.split() == [
        "#name", "type", "required", "label_ru", "label_en", "choices"]
    assert json.loads(site.cli("field", "list", "--json").stdout) == []


def test_a_bad_field_is_refused_in_one_line_and_nothing_changes(site):
    site.cli("field", "add", "city", "--type", "text")
    refused(site, "field", "add", "email", "--type", "text", says=("built-in",))
    refused(site, "field", "add", "lang", "--type", "text", says=("built-in",))
    refused(site, "field", "add", "city", "--type", "number", says=("already",))
    refused(site, "field", "add", "Bad-Name", "--type", "text", says=("a-z",))
    refused(site, "field", "add", "plan", "--type", "choice", says=("choices",))
    refused(site, "field", "add", "plan", "--type", "bogus", code=2, says=("choice",))
    refused(site, "field", "remove", "nothing", says=("no field",))
    result = site.cli("field", "add", "email", "--type", "text", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr


def test_removing_one_field_of_a_file_past_the_limit_keeps_all_the_others(site):
    # A hand edit may hold more fields than the pages show; a remove loses none of them.
    text = "".join(f"[f{n}]\ntype = text\n" for n in range(35))
    (site.root / "fields.ini").write_text(text, encoding="utf-8")
    assert site.cli("field", "remove", "f0").stdout.startswith("field f0 removed")
    kept = (site.root / "fields.ini").read_text(encoding="utf-8")
    assert "[f0]" not in kept
    assert all(f"[f{n}]\n" in kept for n in range(1, 35))
