"""A subscriber's own language and field values ride on its line as trailing
fields (docs/using/services.md#subscriber-details): any value survives the
line's round trip, and an older line without them reads as it always did."""

from hypothesis import given
from hypothesis import strategies as st

from vykhukhol.services.subscriber_line import Subscriber, parse_line

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)


def test_an_old_line_has_no_language_and_no_fields():
    line = "ivan@example.com\tIvan\tactive\t2026-01-01T00:00:00Z\t-\t0\t-\t0\t-\t0\t-"
    reader = parse_line(line)
    assert reader.language is None
    assert reader.fields == {}
    assert reader.to_line() == line


@given(st.dictionaries(NAMES, st.text(min_size=1, max_size=40)), st.sampled_from(["ru", "en"]))
def test_any_values_survive_the_line(values, language):
    reader = Subscriber("ivan@example.com").paused(None).with_language(language).with_fields(values)
    line = reader.to_line()
    assert "\n" not in line and "\r" not in line
    assert len(line.split("\t")) == 11 + len(values) + 1
    again = parse_line(line)
    assert again.fields == values
    assert again.language == language
    assert again == reader


def test_a_change_keeps_the_other_values_and_an_empty_value_removes_one():
    reader = Subscriber("ivan@example.com").with_fields({"city": "Тверь", "age": "40", "city_old": "Ржев"})
    reader = reader.paused(None).with_fields({"city": "Москва", "age": ""})
    assert reader.fields == {"city": "Москва", "city_old": "Ржев"}
    assert "f.city=Москва" in reader.to_line()


def test_a_value_that_looks_escaped_is_kept_as_written():
    for value in ("%09", "%2509", "100%", "a%0Ab", "%%0D%"):
        reader = parse_line(Subscriber("a@b.c").with_fields({"x": value}).to_line())
        assert reader.fields == {"x": value}
