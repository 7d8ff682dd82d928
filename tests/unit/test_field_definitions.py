"""The site's field definitions (docs/using/fields.md#fields): what a
hand-edited fields.ini may say, and how a value is checked and kept."""

import pytest

from vykhukhol.errors import BadInput, NotFound
from vykhukhol.settings import fields
from vykhukhol.settings.fields import Field


def test_no_file_means_no_fields(tmp_path):
    assert fields.load(tmp_path) == []


def test_definitions_are_added_kept_in_order_and_removed(tmp_path):
    fields.add(tmp_path, Field("city", "text", labels={"ru": "Город", "en": "City"}))
    fields.add(tmp_path, Field("plan", "choice", True, {"en": "Plan"}, ("Free", "Pro")))
    loaded = fields.load(tmp_path)
    assert [f.name for f in loaded] == ["city", "plan"]
    assert loaded[1] == Field("plan", "choice", True, {"en": "Plan"}, ("Free", "Pro"))
    assert loaded[0].label("ru") == "Город" and loaded[1].label("ru") == "Plan"
    fields.remove(tmp_path, "city")
    assert [f.name for f in fields.load(tmp_path)] == ["plan"]
    with pytest.raises(NotFound):
        fields.remove(tmp_path, "city")


@pytest.mark.parametrize("name", ["email", "language", "joined", "City", "1st", "a-b", "", "x" * 33, "город"])
def test_a_name_that_clashes_or_is_not_a_name_is_refused(tmp_path, name):
    with pytest.raises(BadInput):
        fields.add(tmp_path, Field(name))
    assert fields.load(tmp_path) == []


def test_a_taken_name_and_a_choice_without_values_are_refused(tmp_path):
    fields.add(tmp_path, Field("city"))
    with pytest.raises(BadInput, match="already"):
        fields.add(tmp_path, Field("city", "number"))
    with pytest.raises(BadInput, match="choices"):
        fields.add(tmp_path, Field("plan", "choice"))


@pytest.mark.parametrize("text, problem", [
    ("[city]\ntype = colour\n", "type"),
    ("[email]\n", "built-in"),
    ("[plan]\ntype = choice\n", "choices"),
    ("[city]\nrequired = perhaps\n", "required"),
    ("[city\n", "cannot be read"),
])
def test_a_broken_hand_edit_names_its_section(tmp_path, text, problem):
    (tmp_path / "fields.ini").write_text(text, encoding="utf-8")
    with pytest.raises(BadInput, match=problem):
        fields.load(tmp_path)


@pytest.mark.parametrize("kind, raw, kept", [
    ("number", "42", "42"), ("number", "-12,5", "-12.5"), ("number", "1 000", "1000"),
    ("number", "0.50", "0.5"), ("date", "31.12.2026", "2026-12-31"), ("date", "2026-01-02", "2026-01-02"),
    ("yesno", "Да", "yes"), ("yesno", "off", "no"), ("text", "  Тверь ", "Тверь"), ("text", "", None),
])
def test_a_value_is_kept_in_one_form(kind, raw, kept):
    assert Field("x", kind).value_of(raw) == kept


@pytest.mark.parametrize("kind, raw", [
    ("number", "1e5"), ("number", "abc"), ("number", "٣"), ("date", "2026-02-30"), ("date", "tomorrow"),
    ("yesno", "maybe"), ("text", "a\x00b"), ("text", "x" * 201),
])
def test_a_value_that_does_not_fit_is_refused_with_its_label(kind, raw):
    with pytest.raises(BadInput, match="^Age"):
        Field("age", kind, labels={"en": "Age"}).value_of(raw)


def test_a_required_field_must_have_a_value_unless_the_edit_is_partial():
    defined = [Field("city", required=True), Field("age", "number")]
    with pytest.raises(BadInput, match="required"):
        fields.check_values(defined, {"age": "3"})
    assert fields.check_values(defined, {"age": "3"}, partial=True) == {"age": "3"}
    assert fields.check_values(defined, {"city": "Ржев", "age": ""}) == {"city": "Ржев", "age": None}
