"""parse_time turns every time format we meet into naive ISO 8601, and fails only with ValueError; times are
written for people; a question's named periods are read. (Relative phrases and the dates a sentence states:
test_dates.py.)"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemem_cli.timeparse import format_clock, format_human, parse_time

ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # ISO 8601
        ("2023-05-08", "2023-05-08T00:00:00"),
        ("2023-05-08T13:56", "2023-05-08T13:56:00"),
        ("2023-05-08T13:56:12", "2023-05-08T13:56:12"),
        ("2023-05-08 13:56", "2023-05-08T13:56:00"),
        ("2023-05-08T13:56:12.123456", "2023-05-08T13:56:12"),
        ("2023-05-08T13:56:12,5", "2023-05-08T13:56:12"),
        ("2023-05-08T13:56:12Z", "2023-05-08T13:56:12"),
        ("2023-05-08T13:56:12.5Z", "2023-05-08T13:56:12"),
        ("2023-05-08T13:56:12+02:00", "2023-05-08T11:56:12"),
        ("2023-05-08T13:56:12+0200", "2023-05-08T11:56:12"),
        ("2023-05-08T01:00:00-05:30", "2023-05-08T06:30:00"),
        ("2023-05-08T23:30:00-02:00", "2023-05-09T01:30:00"),
        ("  2023-05-08T13:56:00  ", "2023-05-08T13:56:00"),
        # LoCoMo
        ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00"),
        ("10:37 am on 27 June, 2023", "2023-06-27T10:37:00"),
        ("12:05 am on 1 January, 2023", "2023-01-01T00:05:00"),
        ("12:05 pm on 1 January, 2023", "2023-01-01T12:05:00"),
        # LongMemEval
        ("2023/05/30 (Tue) 23:40", "2023-05-30T23:40:00"),
        ("2023/05/30", "2023-05-30T00:00:00"),
        # human formats
        ("May 8, 2023", "2023-05-08T00:00:00"),
        ("May 8 2023", "2023-05-08T00:00:00"),
        ("Sept 3, 2023", "2023-09-03T00:00:00"),
        ("8 May 2023", "2023-05-08T00:00:00"),
        ("8 May, 2023", "2023-05-08T00:00:00"),
        ("8th May 2023", "2023-05-08T00:00:00"),
        ("May 2023", "2023-05-01T00:00:00"),
        ("2023-05", "2023-05-01T00:00:00"),
        ("05/08/2023", "2023-05-08T00:00:00"),
        ("5/8/2023 13:56", "2023-05-08T13:56:00"),
        # unix epoch seconds (UTC)
        ("1683554160", "2023-05-08T13:56:00"),
        (1683554160, "2023-05-08T13:56:00"),
        ("1683554160.75", "2023-05-08T13:56:00"),
        # dateutil fallback
        ("May 8 2023 1:56pm", "2023-05-08T13:56:00"),
        ("Monday, May 8, 2023 1:56 PM", "2023-05-08T13:56:00"),
        ("8th of May 2023", "2023-05-08T00:00:00"),
        ("May 8 2023 1:56pm +0200", "2023-05-08T11:56:00"),
    ],
)
def test_accepted_formats(value: str | int, expected: str) -> None:
    assert parse_time(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        "yesterday",
        "next month",
        "hello world",
        "2023-02-30",
        "2023-13-01",
        "2023-05-08T25:00",
        "13/45/2023",
        "1:56 pm on 8 Mai, 2023",
        "13:56 pm on 8 May, 2023",
        "May",
        "5/8",
        "10:30",
        "2023 at 5",
        "12345",
        "99999999999999999999",
        "2023-05-08T13:56:00+25:00",
        "x" * 500 + "1",
    ],
)
def test_rejected_strings(value: str) -> None:
    with pytest.raises(ValueError):
        parse_time(value)


@pytest.mark.parametrize("value", [None, True, 12, 1e20, float("nan"), ["2023-05-08"]])
def test_rejected_non_strings(value: object) -> None:
    with pytest.raises(ValueError):
        parse_time(value)  # type: ignore[arg-type]


def test_error_message_is_short_and_names_the_input() -> None:
    with pytest.raises(ValueError) as info:
        parse_time("the day after the party")
    message = str(info.value)
    assert "the day after" in message
    assert len(message) < 100


@pytest.mark.parametrize(
    ("iso", "expected"),
    [
        ("2023-05-08T13:56:00", "8 May 2023, 1:56 pm"),
        ("2023-05-08T00:00:00", "8 May 2023"),
        ("2023-05-08", "8 May 2023"),
        ("2023-05-08T00:30:00", "8 May 2023, 12:30 am"),
        ("2023-05-08T12:00:00", "8 May 2023, 12:00 pm"),
        ("2023-12-31T09:05:59", "31 December 2023, 9:05 am"),
    ],
)
def test_format_human(iso: str, expected: str) -> None:
    assert format_human(iso) == expected
    day, _, clock = expected.partition(", ")
    assert format_human(iso, with_time=False) == day
    assert format_clock(iso) == clock  # the time of day alone, under a day header


def test_format_human_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        format_human("not a time")


def _check(value: str) -> None:
    try:
        result = parse_time(value)
    except ValueError:
        return
    assert ISO.fullmatch(result), result
    assert parse_time(result) == result


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_parses_or_raises_value_error(value: str) -> None:
    _check(value)


_date_like = st.lists(
    st.one_of(
        st.integers(min_value=0, max_value=100_000_000_000).map(str),
        st.sampled_from(
            ["May", "sept", "Tue", "(Mon)", "am", "pm", "on", "of", "at", "Z", "T", "UTC", "PST", "+02:00", "-0530"]
        ),
        st.sampled_from([" ", "-", "/", ":", ",", ".", "T"]),
    ),
    max_size=12,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(_date_like)
def test_date_like_text_parses_or_raises_value_error(value: str) -> None:
    _check(value)


@pytest.mark.parametrize("question, periods", [
    ("What did Nate do for Joanna on 25 May, 2022?", [("2022-05-25", "2022-05-25")]),
    ("What happened on May 25th, 2022?", [("2022-05-25", "2022-05-25")]),
    ("What did James adopt in April 2022?", [("2022-04-01", "2022-04-30")]),
    ("Where was she in Sept 2021?", [("2021-09-01", "2021-09-30")]),
    ("What health problems did Evan have in 2023?", [("2023-01-01", "2023-12-31")]),
    ("What did he do in December 2022?", [("2022-12-01", "2022-12-31")]),
    ("May I ask what you like?", []),
    ("What did she say last week?", []),
])
def test_named_periods(question, periods):
    from cuemem_cli.timeparse import named_periods

    assert named_periods(question) == periods
