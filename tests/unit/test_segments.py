"""The condition language of a newsletter to part of its services
(lib/vykhukhol/newsletters/segments/): what each name and operator
chooses, compared by the field's kind; errors that name their column, in
English and Russian; and no input that makes the parser raise anything but
BadInput or run long."""

from __future__ import annotations

import operator
import time
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vykhukhol.errors import BadInput
from vykhukhol.newsletters import segments
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.settings.fields import Field
from vykhukhol.states import SubscriberState

FIELDS = [Field("city"), Field("plan", "choice", choices=("free", "pro")), Field("age", "number"),
          Field("born", "date"), Field("vip", "yesno")]


def reader(email: str = "a@example.org", joined: str = "2026-02-01", sent: int = 0,
           lang: str | None = None, **values: str) -> Subscriber:
    sub = Subscriber(email, "", SubscriberState.ACTIVE,
                     datetime.fromisoformat(joined).replace(hour=12, tzinfo=UTC), None, sent)
    return sub.with_language(lang).with_fields(dict(values))


def chooses(condition: str, sub: Subscriber, service: str = "news", default: str = "ru") -> bool:
    return segments.parse(condition, FIELDS, default).matches(sub, service)


def test_a_text_compares_without_regard_to_case_in_unicode():
    tver = reader(city="Тверь")
    assert chooses('city = "тверь"', tver)
    assert chooses('fields.city = "ТВЕРЬ"', tver)
    assert chooses('city contains "вер"', tver)
    assert chooses('city in ("Москва", "тверь")', tver)
    assert not chooses('city != "Тверь"', tver)
    assert not chooses('city = "Тула"', tver)


def test_a_number_compares_as_a_number_and_a_date_as_a_date():
    young, old = reader(age="9", born="2017-05-01"), reader(age="10.5", born="1990-12-31")
    assert chooses("age < 10", young) and not chooses("age < 10", old)  # not "10.5" < "9"
    assert chooses("age >= 10.5 and born < 2000-01-01", old)
    assert chooses("age = 9.0", young)
    assert chooses("born > 2010-01-01", young) and not chooses("born > 2010-01-01", old)


def test_joined_service_reached_and_language():
    sub = reader(joined="2026-03-01", sent=3, lang="en")
    assert chooses("joined > 2026-01-01 and joined <= 2026-03-01", sub)
    assert not chooses("joined > 2026-03-01", sub)
    assert chooses('service = "News"', sub, "news") and not chooses('service = "offers"', sub)
    assert chooses("reached >= 3", sub) and not chooses("reached > 3", sub)
    assert chooses('language = "en"', sub)
    # a reader without a language of their own has the site's
    assert chooses('language = "ru"', reader()) and chooses('language = "en"', reader(), default="en")


def test_a_missing_value_matches_only_is_empty_and_not_equal():
    nobody = reader()
    assert chooses("city is empty", nobody) and not chooses("city is not empty", nobody)
    assert chooses('city != "Тверь"', nobody)
    for condition in ('city = "Тверь"', 'city contains ""', 'city in ("a")', "age < 100",
                      "age > -100", "born < 2100-01-01", "vip = no"):
        assert not chooses(condition, nobody), condition
    for age in ("many", "NaN", "Infinity"):  # a hand edit: no value
        spoiled = reader(age=age, born="someday")
        assert chooses("age is empty and born is empty", spoiled)
        assert not chooses("age < 10 or age >= 10", spoiled)


def test_an_empty_text_in_a_condition_is_no_value_that_anything_equals_or_holds():
    tver = reader(city="Тверь")
    for condition in ('city = ""', 'city < ""', 'city >= ""', 'city contains ""', 'city in ("")'):
        assert not chooses(condition, tver), condition
    assert chooses('city != ""', tver) and chooses('city > "" or city is not empty', tver)


def test_a_field_named_as_a_word_of_the_language_is_named_through_fields():
    named = [Field("contains"), Field("empty", "number")]
    condition = segments.parse('fields.contains = "x" and fields.empty is empty', named)
    assert condition.text == 'fields.contains = "x" and fields.empty is empty'
    assert segments.parse(condition.text, named).text == condition.text
    assert condition.matches(reader(contains="X"), "news")


def test_and_or_not_and_parentheses():
    sub = reader(city="Тверь", plan="pro", vip="yes")
    assert chooses('plan = "pro" and (city = "Тула" or vip = yes)', sub)
    assert not chooses('plan = "pro" and not (city = "Тверь" or vip = yes)', sub)
    assert chooses('not not city = "тверь"', sub)
    assert chooses('city = "Тула" or plan = "PRO" and vip = yes', sub)  # and binds first
    assert chooses('CITY = "тверь" AND Vip = Yes', sub)


def test_the_condition_is_written_back_in_one_canonical_line():
    condition = segments.parse('  (fields.city="Тверь"\n OR vip=yes) and\tname_text is empty'
                               .replace("name_text", "born"), FIELDS)
    assert condition.text == '(city = "Тверь" or vip = yes) and born is empty'
    again = segments.parse(condition.text, FIELDS)
    assert again.text == condition.text
    quoted = segments.parse(r'city = "say \"hi\" \\ there"', FIELDS)
    assert quoted.text == r'city = "say \"hi\" \\ there"'
    assert quoted.matches(reader(city='say "hi" \\ there'), "news")


@pytest.mark.parametrize(("condition", "said"), [
    ('age > 1 and cty = "Тверь"', 'column 13: unknown field "cty" (fields: city, plan, age, '
                                  'born, vip, language, joined, service, reached)'),
    ("joined > 2026-13-01", "column 10: a date such as 2026-01-01"),
    ('born < "вчера"', "column 8: a date such as 2026-01-01"),
    ("age = 1.2.3", "column 7: a number such as 42 or 12.5"),
    ("city = Тверь", 'column 8: a text in quotes such as "Тверь"'),
    ('city = "Тверь', 'column 8: a text that is not closed: end it with "'),
    ('plan = "gold"', "column 8: plan is one of free, pro"),
    ("vip > yes", "column 5: vip is yes or no: compare it with = or !="),
    ("age contains 1", "column 5: contains compares text; age is not text"),
    ('city = "a" city', "column 12: and, or, or the end of the condition"),
    ('(city = "a"', "column 12: a closing parenthesis )"),
    ("city ~ 1", "column 6: a condition cannot hold '~'"),
    ("city is full", "column 9: empty (is empty, is not empty)"),
    ("and = 1", "column 1: a name such as city or joined"),
    ("  ", "the condition is empty"),
])
def test_an_error_names_its_column(condition, said):
    with pytest.raises(BadInput) as caught:
        segments.parse(condition, FIELDS)
    assert caught.value.message == said


def test_an_error_reads_in_russian():
    with pytest.raises(BadInput) as caught:
        segments.parse('age > 1 and cty = "Тверь"', FIELDS)
    assert caught.value.text("ru").startswith('столбец 13: неизвестное поле «cty» (поля: city, plan')
    with pytest.raises(BadInput) as caught:
        segments.parse("joined > 2026-13-01", FIELDS)
    assert caught.value.text("ru") == "столбец 10: дата, например 2026-01-01"


def test_length_and_depth_are_bounded():
    deep = "(" * 21 + "vip = yes" + ")" * 21
    with pytest.raises(BadInput, match="column 21: nested deeper than 20"):
        segments.parse(deep, FIELDS)
    segments.parse("(" * 19 + "vip = yes" + ")" * 19, FIELDS)
    with pytest.raises(BadInput, match="column 2001: a condition is at most 2000 characters"):
        segments.parse("vip = yes or " * 200, FIELDS)
    with pytest.raises(BadInput, match="nested deeper"):
        segments.parse("not " * 30 + "vip = yes", FIELDS)


ALPHABET = st.sampled_from(list('()," \\=!<>-.0123456789aeinorstycvpgdj_ТвЕр\t\n~')
                           + ["and ", "or ", "not ", "in ", "is ", "empty", "contains ", "city",
                              "age", "born", "vip", "joined", "2026-01-01", '"x"', "yes"])


@given(st.lists(ALPHABET, max_size=120).map("".join) | st.text(max_size=300))
def test_no_input_makes_the_parser_raise_anything_but_bad_input_or_run_long(text):
    began = time.perf_counter()
    try:
        condition = segments.parse(text, FIELDS)
    except BadInput as exc:
        assert exc.message and exc.text("ru")
    else:
        assert segments.parse(condition.text, FIELDS).text == condition.text
        condition.matches(reader(city="x", age="3"), "news")
    assert time.perf_counter() - began < 2  # generous: the machine may be shared


def test_a_value_a_line_repeats_is_judged_alike_every_time():
    condition = segments.parse('city = "Тверь" and age >= 30', FIELDS)
    people = [reader(city=city, age=age) for city in ("тверь", "Тула", "") for age in ("29", "30")]
    first = [condition.matches(sub, "news") for sub in people]
    assert first == [False, True, False, False, False, False]
    assert [condition.matches(sub, "news") for sub in people] == first


def test_the_longest_condition_parses_quickly():
    text = " or ".join(f'city = "{i}"' for i in range(180))[:2000]
    text = text[:text.rfind(" or ")]
    began = time.perf_counter()
    condition = segments.parse(text, FIELDS)
    assert not condition.matches(reader(city="x"), "news")
    assert time.perf_counter() - began < 1  # some milliseconds on a quiet machine


# The compiled test reads the subscriber line where it lies, keeps verdicts
# and asks "and"/"or" cheapest first; the plain reading below asks the
# Subscriber itself, in the written order. Both must say the same.

VALUES = {"city": ('"Тверь"', '"тверь"', '"Тула"', '""', '"a\\tb"'), "plan": ('"free"', '"pro"'),
          "age": ("9", "10.5", "30", "-1"), "born": ("1990-12-31", "2000-01-01"),
          "vip": ("yes", "no"), "language": ('"en"', '"ru"'),
          "joined": ("2026-02-01", "2026-03-01"), "reached": ("0", "3"),
          "service": ('"news"', '"Offers"')}
OPS = ("=", "!=", "<", "<=", ">", ">=", "contains", "in", "is empty", "is not empty")


def _compare(name: str, op: str, values: list[str]) -> str:
    if op.startswith("is"):
        return f"{name} {op}"
    if op == "in":
        return f"{name} in ({', '.join(values)})"
    return f"{name} {op} {values[0]}"


compares = st.sampled_from(sorted(VALUES)).flatmap(lambda name: st.builds(
    _compare, st.just(name), st.sampled_from(OPS),
    st.lists(st.sampled_from(VALUES[name]), min_size=1, max_size=3)))
conditions = st.recursive(compares, lambda inner: st.one_of(
    st.builds("not ({})".format, inner),
    st.lists(inner, min_size=2, max_size=4).map(lambda each: " and ".join(f"({c})" for c in each)),
    st.lists(inner, min_size=2, max_size=4).map(lambda each: " or ".join(f"({c})" for c in each))),
    max_leaves=8)
people = st.builds(
    lambda joined, sent, lang, values, other: reader(joined=joined, sent=sent, lang=lang,
                                                     **values).replace(
        extra=[*other[:1], *reader(lang=lang, **values).extra, *other[1:]]),
    st.sampled_from(["2026-02-01", "2026-03-01", "2025-12-31"]), st.sampled_from([0, 3, 7]),
    st.sampled_from([None, "en", "ru", "EN"]),
    st.fixed_dictionaries({}, optional={
        "city": st.sampled_from(["Тверь", "ТВЕРЬ", "Тула", "a\tb", "100%"]),
        "plan": st.sampled_from(["free", "PRO"]), "age": st.sampled_from(["9", "30.0", "many"]),
        "born": st.sampled_from(["1990-12-31", "someday"]), "vip": st.sampled_from(["yes", "No"])}),
    st.lists(st.sampled_from(["paused=2026-05-01T00:00:00Z", "x.note=f.city=Тверь", "lang"]),
             max_size=2))


def _plain(node, sub: Subscriber, service: str, default: str) -> bool:
    from vykhukhol.newsletters.segments.grammar import Both, Either, Not
    if isinstance(node, Not):
        return not _plain(node.node, sub, service, default)
    if isinstance(node, Both):
        return all(_plain(n, sub, service, default) for n in node.nodes)
    if isinstance(node, Either):
        return any(_plain(n, sub, service, default) for n in node.nodes)
    text = {"service": service, "reached": str(sub.sent), "language": sub.language,
            "joined": sub.subscribed.date().isoformat() if sub.subscribed else None,
            }.get(node.name, sub.fields.get(node.name)) if node.name in VALUES else None
    value = None if text is None else _as(node.kind, text)
    if node.name == "language" and value is None:
        value = default.casefold()
    wanted = [_as(node.kind, v) for v in node.values]
    if node.op in ("empty", "not empty"):
        return (value is None) == (node.op == "empty")
    if node.op == "!=":
        return value != wanted[0]
    if node.op == "in":
        return value is not None and value in wanted
    if value is None or wanted[0] is None:
        return False
    if node.op == "contains":
        return wanted[0] in value
    return {"=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge}[node.op](value, wanted[0])


def _as(kind: str, text: str):
    from datetime import date
    from decimal import Decimal, InvalidOperation
    if kind == "number":
        try:
            number = Decimal(text)
        except InvalidOperation:
            return None
        return number if number.is_finite() else None
    if kind == "date":
        try:
            return date.fromisoformat(text).isoformat() if len(text) == 10 else None
        except ValueError:
            return None
    return (text.lower() if kind == "yesno" else text.casefold()) or None


@given(conditions, st.lists(people, min_size=1, max_size=6), st.sampled_from(["news", "offers"]),
       st.sampled_from(["ru", "en"]))
def test_the_compiled_test_says_what_the_plain_reading_of_the_subscriber_says(
        text, subs, service, default):
    try:
        condition = segments.parse(text, FIELDS, default)
    except BadInput:  # an operator the name's kind has not, or a choice it does not offer
        return
    for sub in subs * 2:  # twice: the second time from the kept verdicts
        assert condition.matches(sub, service) == _plain(condition.tree, sub, service, default), \
            (condition.text, sub.to_line())
