"""Schedule expressions (docs/using/services.md#schedules): examples, error messages, zones, properties."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from functools import cache
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vykhukhol.errors import BadInput
from vykhukhol.services import schedule as schedule_module
from vykhukhol.services.schedule import Schedule, matches_expr, validate

UTC = timezone.utc

# 2024-01-01 is a Monday; 2024-01-07 a Sunday; 2024-09-13 a Friday.
MONDAY = datetime(2024, 1, 1)
SUNDAY = datetime(2024, 1, 7)


def at(minute: int = 0, hour: int = 0, day: int = 1, month: int = 1, year: int = 2024) -> datetime:
    return datetime(year, month, day, hour, minute)


# --- the examples of the spec ---------------------------------------------------


def test_star_matches_every_minute():
    every = Schedule.parse("* * * * *")
    assert every.minutes == frozenset(range(60))
    assert every.hours == frozenset(range(24))
    assert every.days == frozenset(range(1, 32))
    assert every.months == frozenset(range(1, 13))
    assert every.weekdays == frozenset(range(7))
    assert not every.dom_restricted and not every.dow_restricted
    assert every.matches(at(37, 13, 29, 2))


def test_single_value_matches_only_that_value():
    assert Schedule.parse("5 * * * *").minutes == {5}
    assert matches_expr("5 * * * *", at(5, 10))
    assert not matches_expr("5 * * * *", at(6, 10))


def test_list_matches_each_listed_value():
    assert Schedule.parse("1,15,30 * * * *").minutes == {1, 15, 30}


def test_range_includes_both_ends():
    assert Schedule.parse("* 9-18 * * *").hours == frozenset(range(9, 19))


def test_star_with_step_counts_from_zero_in_minutes():
    assert Schedule.parse("*/10 * * * *").minutes == {0, 10, 20, 30, 40, 50}


def test_range_with_step_counts_from_the_range_start():
    assert Schedule.parse("1-20/3 * * * *").minutes == {1, 4, 7, 10, 13, 16, 19}


def test_step_counts_from_range_start_in_day_of_month():
    assert Schedule.parse("* * */2 * *").days == frozenset(range(1, 32, 2))
    assert Schedule.parse("0 2 */7 * *").days == {1, 8, 15, 22, 29}


def test_step_counts_from_one_in_month():
    assert Schedule.parse("* * * */3 *").months == {1, 4, 7, 10}


def test_reverse_range_wraps_around_midnight_in_hours():
    assert Schedule.parse("* 22-2 * * *").hours == {22, 23, 0, 1, 2}


def test_reverse_range_with_step_counts_along_the_wrapped_sequence():
    assert Schedule.parse("* 22-2/2 * * *").hours == {22, 0, 2}
    assert Schedule.parse("50-5/5 * * * *").minutes == {50, 55, 0, 5}
    assert Schedule.parse("* * 30-2/2 * *").days == {30, 1}  # 30 31 1 2
    assert Schedule.parse("* * * 11-2/2 *").months == {11, 1}  # 11 12 1 2


def test_single_value_with_step_runs_to_the_field_maximum():
    assert Schedule.parse("5/10 * * * *").minutes == {5, 15, 25, 35, 45, 55}
    assert Schedule.parse("* 20/2 * * *").hours == {20, 22}


def test_zero_step_never_matches_at_run_time():
    for expr in ("*/0 * * * *", "* * 1-5/0 * *", "* 5/0 * * *"):
        assert not matches_expr(expr, at(0, 0, 1))


def test_zero_step_is_rejected_by_validate():
    with pytest.raises(BadInput) as caught:
        validate("*/0 * * * *")
    assert caught.value.message == "minute: a step of 0 never matches"
    with pytest.raises(BadInput, match="^day of week: a step of 0 never matches$"):
        Schedule.parse("* * * * 1-5/00")


def test_invalid_expression_never_matches_at_run_time():
    for expr in ("", "* * * *", "60 * * * *", "junk", "* * * * MON", "* * * * * *"):
        assert matches_expr(expr, at()) is False


# --- day of month and day of week -------------------------------------------------


def test_zero_and_seven_are_both_sunday():
    assert Schedule.parse("* * * * 0").weekdays == {0}
    assert Schedule.parse("* * * * 7").weekdays == {0}
    for expr in ("0 0 * * 0", "0 0 * * 7"):
        assert matches_expr(expr, SUNDAY)
        assert not matches_expr(expr, SUNDAY - timedelta(days=1))


def test_range_up_to_seven_runs_friday_to_sunday():
    assert Schedule.parse("* * * * 5-7").weekdays == {5, 6, 0}
    friday = datetime(2024, 1, 5)
    for offset, expected in enumerate([True, True, True, False, False, False, False]):
        assert matches_expr("0 0 * * 5-7", friday + timedelta(days=offset)) is expected


def test_weekdays_use_cron_numbering_with_monday_as_one():
    assert matches_expr("0 0 * * 1", MONDAY)
    assert matches_expr("0 0 * * 1-5", MONDAY + timedelta(days=4))  # Friday
    assert not matches_expr("0 0 * * 1-5", MONDAY + timedelta(days=5))  # Saturday


def test_reverse_range_in_day_of_week_wraps_over_zero_to_seven():
    assert Schedule.parse("* * * * 5-1").weekdays == {5, 6, 0, 1}
    # 5 6 7 0 1 counted as written: every second is 5, 7, 1
    assert Schedule.parse("* * * * 5-1/2").weekdays == {5, 0, 1}


def test_day_matches_if_either_day_of_month_or_day_of_week_matches_when_both_restricted():
    thirteenth_friday = "0 0 13 * 5"
    assert matches_expr(thirteenth_friday, datetime(2024, 9, 13))  # Friday the 13th
    assert matches_expr(thirteenth_friday, datetime(2024, 9, 6))  # a Friday
    assert matches_expr(thirteenth_friday, datetime(2024, 2, 13))  # a Tuesday the 13th
    assert not matches_expr(thirteenth_friday, datetime(2024, 9, 12))  # a Thursday the 12th


def test_both_days_must_match_when_day_of_week_is_star():
    assert matches_expr("0 0 13 * *", datetime(2024, 2, 13))
    assert not matches_expr("0 0 13 * *", datetime(2024, 2, 14))


def test_both_days_must_match_when_day_of_month_is_star():
    assert matches_expr("0 0 * * 5", datetime(2024, 9, 6))
    assert not matches_expr("0 0 * * 5", datetime(2024, 9, 13 - 1))


def test_star_with_step_counts_as_restricted_for_the_day_rule():
    parsed = Schedule.parse("0 0 */1 * 1")
    assert parsed.dom_restricted and parsed.dow_restricted
    # any day matches day of month */1, so with the OR rule every day matches
    assert parsed.matches(datetime(2024, 1, 3))  # a Wednesday


def test_month_minute_and_hour_must_all_match():
    expr = "30 3 * 6 *"
    assert matches_expr(expr, at(30, 3, 10, 6))
    assert not matches_expr(expr, at(31, 3, 10, 6))
    assert not matches_expr(expr, at(30, 4, 10, 6))
    assert not matches_expr(expr, at(30, 3, 10, 7))


def test_seconds_do_not_matter():
    assert matches_expr("15 10 * * *", datetime(2024, 5, 5, 10, 15, 59, 999999))


# --- whitespace and normal form -----------------------------------------------------


def test_validate_joins_fields_with_single_spaces():
    assert validate("  */5\t*  *\t \t* 1-5 \n") == "*/5 * * * 1-5"
    assert validate("0 9-18 * * 1-5") == "0 9-18 * * 1-5"


def test_validate_accepts_all_the_forms_of_the_spec():
    for expr in (
        "* * * * *",
        "5 * * * *",
        "1,15,30 * * * *",
        "0 9-18 * * 1-5",
        "*/10 * * * *",
        "1-20/3 * * * *",
        "0 22-2 * * *",
        "5/10 * * * *",
        "0 0 13 * 5",
        "0 0 * * 7",
        "*,5 * * * *",
    ):
        assert validate(expr) == expr


# --- error messages -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("60 * * * *", "minute: 60 is out of range 0-59"),
        ("* 24 * * *", "hour: 24 is out of range 0-23"),
        ("* * 0 * *", "day of month: 0 is out of range 1-31"),
        ("* * 32 * *", "day of month: 32 is out of range 1-31"),
        ("* * * 13 *", "month: 13 is out of range 1-12"),
        ("* * * 0 *", "month: 0 is out of range 1-12"),
        ("* * * * 8", "day of week: 8 is out of range 0-7"),
        ("-5 * * * *", "minute: -5 is out of range 0-59"),
        ("* 5-25 * * *", "hour: 25 is out of range 0-23"),
        ("* * * JAN *", "month: names like 'JAN' are not accepted, write numbers"),
        ("* * * * MON", "day of week: names like 'MON' are not accepted, write numbers"),
        ("* * * * mon-fri", "day of week: names like 'mon' are not accepted, write numbers"),
        ("1,,2 * * * *", "minute: an empty item in the list (two commas, or a comma at an end)"),
        ("* 1, * * *", "hour: an empty item in the list (two commas, or a comma at an end)"),
        ("*/x * * * *", "minute: step 'x' is not a number"),
        ("/5 * * * *", "minute: '/5' has nothing before '/' (write */5)"),
        ("5/ * * * *", "minute: '5/' has no step after '/'"),
        ("* 1- * * *", "hour: range '1-' has no end"),
        ("* * x-3 * *", "day of month: 'x' is not a number"),
        ("* * * 1-2-3 *", "month: '1-2-3' is not a range (one '-' between two numbers)"),
        ("5a * * * *", "minute: '5a' is not a number"),
        ("*/90 * * * *", "minute: step 90 is larger than the range 0-59"),
        ("* * * * 99999999999999999999", "day of week: 99999999999999999999 is out of range 0-7"),
    ],
)
def test_errors_name_the_field_and_the_reason(expr, message):
    with pytest.raises(BadInput) as caught:
        validate(expr)
    assert caught.value.message == message
    assert matches_expr(expr, at()) is False


@pytest.mark.parametrize(
    ("expr", "count"),
    [("* * * *", 4), ("* * * * * *", 6), ("", 0), ("   \t ", 0), ("*/5", 1)],
)
def test_wrong_number_of_fields_is_rejected_with_the_count(expr, count):
    with pytest.raises(BadInput) as caught:
        validate(expr)
    assert caught.value.message == (
        f"a schedule has five fields (minute hour day-of-month month day-of-week), got {count}"
    )


def test_non_ascii_digits_are_not_numbers():
    with pytest.raises(BadInput, match="^minute: '５' is not a number$"):
        validate("５ * * * *")


def test_long_junk_is_shortened_in_the_message():
    with pytest.raises(BadInput) as caught:
        validate("x" * 500 + "1 * * * *")
    assert len(caught.value.message) < 80
    assert caught.value.message.startswith("minute: ")


# --- time zones ---------------------------------------------------------------------


def test_nine_in_moscow_is_six_utc():
    six_utc = datetime(2024, 3, 4, 6, 0, tzinfo=UTC)
    assert matches_expr("0 9 * * *", six_utc, "Europe/Moscow")
    assert not matches_expr("0 9 * * *", six_utc, "UTC")
    assert matches_expr("0 6 * * *", six_utc)


def test_naive_moment_is_taken_as_utc():
    assert matches_expr("0 9 * * *", datetime(2024, 3, 4, 6, 0), "Europe/Moscow")
    assert not matches_expr("0 6 * * *", datetime(2024, 3, 4, 6, 0), "Europe/Moscow")


def test_aware_moment_in_another_zone_is_converted():
    nine_moscow = datetime(2024, 3, 4, 9, 0, tzinfo=ZoneInfo("Europe/Moscow"))
    assert matches_expr("0 7 * * *", nine_moscow, "Europe/Berlin")  # UTC+1 in winter
    summer = datetime(2024, 7, 4, 9, 0, tzinfo=ZoneInfo("Europe/Moscow"))
    assert matches_expr("0 8 * * *", summer, "Europe/Berlin")  # UTC+2 in summer


def test_zone_conversion_can_change_the_day_and_weekday():
    # Sunday 23:30 UTC is Monday 02:30 in Moscow
    late_sunday = datetime(2024, 1, 7, 23, 30, tzinfo=UTC)
    assert matches_expr("30 2 8 * 1", late_sunday, "Europe/Moscow")
    assert not matches_expr("30 2 8 * 1", late_sunday, "UTC")


def test_unknown_zone_never_matches_and_does_not_raise():
    for zone in ("Nowhere/Atlantis", "", "../etc/passwd", "Europe", "a\x00b"):
        assert matches_expr("* * * * *", datetime(2024, 1, 1), zone) is False


def test_parsed_expressions_are_cached():
    expr = "17 4 * * 3"
    matches_expr(expr, at())
    hits = schedule_module._cached_parse.cache_info().hits
    matches_expr(expr, at(1))
    assert schedule_module._cached_parse.cache_info().hits == hits + 1


# --- properties against a brute-force reference -------------------------------------

FIELDS = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]


def reference_item_has(item: str, value: int, low: int, high: int) -> bool:
    """Whether ``value`` is in ``item``, from the rules read one at a time."""
    base, slash, step_text = item.partition("/")
    step = int(step_text) if slash else 1
    if base == "*":
        position = value - low
    elif "-" in base:
        start, end = (int(part) for part in base.split("-"))
        if start <= end:
            if not start <= value <= end:
                return False
            position = value - start
        elif value >= start:  # the part before wrapping: start..high
            position = value - start
        elif value <= end:  # after wrapping: low..end, following high-start+1 values
            position = (high - start + 1) + (value - low)
        else:
            return False
    else:
        start = int(base)
        if not slash:
            return value == start
        if value < start:
            return False
        position = value - start
    return position % step == 0


@cache  # only for speed: the property tests ask for the same fields many times
def reference_field(text: str, low: int, high: int) -> set[int]:
    return {
        value
        for value in range(low, high + 1)
        if any(reference_item_has(item, value, low, high) for item in text.split(","))
    }


def reference_matches(expr: str, moment: datetime) -> bool:
    fields = expr.split()
    minutes, hours, days, months, weekdays = (
        reference_field(text, low, high) for text, (low, high) in zip(fields, FIELDS, strict=True)
    )
    sundays_as_zero = {day % 7 for day in weekdays}
    day_ok = moment.day in days
    weekday_ok = moment.isoweekday() % 7 in sundays_as_zero  # ISO: Monday 1 .. Sunday 7
    if fields[2] != "*" and fields[4] != "*":
        day_matches = day_ok or weekday_ok
    else:
        day_matches = day_ok and weekday_ok
    return (
        moment.minute in minutes and moment.hour in hours and moment.month in months and day_matches
    )


@st.composite
def items(draw, low: int, high: int) -> str:
    value = st.integers(low, high)
    step = st.integers(1, high - low + 1)
    kind = draw(st.sampled_from(["*", "*/s", "v", "v/s", "a-b", "a-b/s"]))
    if kind == "*":
        return "*"
    if kind == "*/s":
        return f"*/{draw(step)}"
    if kind == "v":
        return str(draw(value))
    if kind == "v/s":
        return f"{draw(value)}/{draw(step)}"
    text = f"{draw(value)}-{draw(value)}"  # reverse ranges included
    return text if kind == "a-b" else f"{text}/{draw(step)}"


def fields(low: int, high: int) -> st.SearchStrategy[str]:
    listed = st.lists(items(low, high), min_size=1, max_size=4).map(",".join)
    return st.one_of(st.just("*"), listed)


@st.composite
def expressions(draw) -> str:
    parts = [draw(fields(low, high)) for low, high in FIELDS]
    gaps = [draw(st.sampled_from([" ", "  ", "\t", " \t "])) for _ in range(4)]
    edges = st.sampled_from(["", " ", "\t", "\n"])
    text = draw(edges) + parts[0]
    for gap, part in zip(gaps, parts[1:], strict=True):
        text += gap + part
    return text + draw(edges)


moments = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2100, 12, 31))


@settings(max_examples=200, deadline=None)
@given(expressions())
def test_parsed_sets_equal_the_reference(expr):
    parsed = Schedule.parse(expr)
    text = expr.split()
    assert parsed.minutes == reference_field(text[0], 0, 59)
    assert parsed.hours == reference_field(text[1], 0, 23)
    assert parsed.days == reference_field(text[2], 1, 31)
    assert parsed.months == reference_field(text[3], 1, 12)
    assert parsed.weekdays == {day % 7 for day in reference_field(text[4], 0, 7)}


@settings(max_examples=200, deadline=None)
@given(expressions(), st.lists(moments, min_size=1, max_size=20))
def test_matches_agrees_with_the_reference(expr, when):
    parsed = Schedule.parse(expr)
    for moment in when:
        assert parsed.matches(moment) == reference_matches(expr, moment)
        assert matches_expr(expr, moment) == reference_matches(expr, moment)


@settings(max_examples=150, deadline=None)
@given(expressions(), st.integers(0, 365 * 24 * 60 - 1))
def test_matches_agrees_with_the_reference_on_eight_days_in_a_row(expr, offset):
    # walk a week of whole days from a random minute: each day hits the DOM/DOW rule
    parsed = Schedule.parse(expr)
    start = datetime(2024, 1, 1) + timedelta(minutes=offset)
    for day in range(8):
        moment = start + timedelta(days=day)
        assert parsed.matches(moment) == reference_matches(expr, moment)


@settings(max_examples=100, deadline=None)
@given(expressions())
def test_validate_returns_a_normal_form_with_the_same_meaning(expr):
    normal = validate(expr)
    assert normal == " ".join(expr.split())
    assert validate(normal) == normal
    assert Schedule.parse(normal) == Schedule.parse(expr)


cron_like_text = st.text(alphabet="0123456789*/-, \t\nMONxa", max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), cron_like_text))
def test_validate_raises_nothing_but_bad_input(text):
    try:
        normal = validate(text)
    except BadInput as error:
        assert error.message
        assert "\n" not in error.message
    else:
        assert len(normal.split(" ")) == 5


zones = st.one_of(
    st.sampled_from(["UTC", "Europe/Moscow", "America/St_Johns", "Nope/Zone", "", "Europe"]),
    st.text(max_size=20),
)
any_moments = st.one_of(st.datetimes(), st.datetimes(timezones=st.timezones()))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), cron_like_text, expressions()), any_moments, zones)
def test_matches_expr_never_raises(text, moment, zone):
    assert matches_expr(text, moment, zone) in (True, False)
