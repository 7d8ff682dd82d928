"""Times in files: the quick reading of the canonical form (without re or
strptime) gives what the slow one gives, and refuses what it refused."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vykhukhol.errors import BadInput
from vykhukhol.timeutil import format_time, parse_duration, parse_time


@pytest.mark.parametrize("text", ["2026-12-01T00:53:25Z", "0001-01-01T00:00:00Z",
                                  "9999-12-31T23:59:59Z", "2024-02-29T12:00:00Z"])
def test_canonical_times_read_as_strptime_reads_them(text):
    got = parse_time(text)
    assert got == datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert got.tzinfo is timezone.utc and format_time(got) == text


@pytest.mark.parametrize("text", ["2026-12-01T00:53:2 Z", "2026-12-01T00:53:٣5Z", "+026-12-01T00:53:25Z",
                                  "2026-1_-01T00:53:25Z", "2026-13-01T00:00:00Z", "2026-12-01T00:53:25.5Z",
                                  "2026-12-01T00:53:25+00:00", "2026-12-01 00:53:25Z", "", "x" * 20,
                                  "2026-W48-1T00:53:25Z", "2025-02-29T00:00:00Z"])
def test_anything_else_is_refused(text):
    with pytest.raises(BadInput):
        parse_time(text)


def test_strptime_still_reads_the_lenient_forms_it_read():
    assert parse_time("2026-1-2T3:4:5Z") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert parse_time("-") is None


def test_durations():
    assert parse_duration(" 2d ") == 172800 and parse_duration("45s") == 45
    with pytest.raises(BadInput):
        parse_duration("2 weeks")


@given(st.datetimes(timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=5)),
                                                timezone(timedelta(hours=-11, minutes=-30))])))
def test_a_time_is_written_as_isoformat_writes_it_and_reads_back(moment):
    try:
        utc = moment.astimezone(timezone.utc)
    except OverflowError:
        return  # beyond the calendar's ends in UTC: never a time in a file
    assert format_time(moment) == utc.isoformat()[:19] + "Z"
    assert parse_time(format_time(moment)) == utc.replace(microsecond=0)
