"""parse_time turns every time format we meet into naive ISO 8601, and fails only with ValueError; relative
phrases and the dates a sentence states resolve against the day they were said."""

from __future__ import annotations

import re
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemem_cli.timeparse import dated, dates, format_clock, format_human, parse_time, time_phrases

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


SUNDAY = date(2023, 5, 14)


@pytest.mark.parametrize(("phrase", "resolved"), [
    ("yesterday", "13 May 2023"),
    ("last night", "13 May 2023"),
    ("last weekend", "weekend of 6 May 2023"),
    ("next week", "week of 15 May 2023"),
    ("last month", "April 2023"),
    ("next year", "2024"),
    ("last summer", "summer 2022"),  # summer 2023 has not begun on 14 May
    ("this winter", "winter 2023/24"),
    ("last Friday", "12 May 2023"),
    ("two weeks ago", "week of 24 April 2023"),
    ("3 days ago", "11 May 2023"),
    ("a few months ago", "a few months before 14 May 2023"),  # a vague count stays words
    ("last May", "May 2022"),
    ("next March", "March 2024"),
])
def test_relative_phrases_resolve_against_the_day_they_were_said(phrase, resolved):
    [(written, _, got)] = time_phrases(f"I saw it {phrase}.", SUNDAY)
    assert (written, got) == (phrase, resolved)


def test_a_bare_weekday_points_the_way_the_question_asks():
    assert time_phrases("this Friday", SUNDAY, past=True)[0][2] == "12 May 2023"
    assert time_phrases("this Friday", SUNDAY, past=False)[0][2] == "19 May 2023"
    assert time_phrases("yesterday", None) == []  # no day said, nothing to resolve against


@pytest.mark.parametrize(("text", "resolved"), [
    ("last Saturday, the 6th", "6 May 2023"),  # said on Sunday 14 May: the Saturday of the week before
    ("last Saturday, the 13th", "13 May 2023"),
    ("last Saturday (the 13th)", "13 May 2023"),
    ("last Saturday, the 20th", "13 May 2023"),  # no Saturday before falls on it: the rule's day
    ("next Friday, on the 26th", "26 May 2023"),
    ("last Saturday. The 6th was", "13 May 2023"),  # another sentence's number is not the weekday's
])
def test_a_weekday_takes_the_day_of_the_month_written_beside_it(text, resolved):
    assert time_phrases(text, SUNDAY)[0][2] == resolved


def test_dated_notes_each_phrase_with_its_day():
    text = "We went camping last weekend and yesterday."
    assert dated(text, SUNDAY) == ("We went camping last weekend [the weekend before 14 May 2023: weekend of 6 May "
                                   "2023] and yesterday [13 May 2023].")
    assert dated(text, SUNDAY, brief=True) == ("We went camping last weekend [weekend of 6 May 2023] and yesterday "
                                               "[13 May 2023].")
    assert dated(text, None) == text


def test_dates_a_sentence_states():
    said = date(2024, 10, 20)
    [plan] = dates("I could fly in on December 15th and stay through the 19th.", said)
    assert (plan.first, plan.last, plan.text) == (date(2024, 12, 15), date(2024, 12, 19), "15 to 19 December 2024")
    [january] = dates("I start on January 6th.", said)  # the nearest 6 January is next year's
    assert (january.first, january.written) == (date(2025, 1, 6), True)
    [weekend] = dates("We hiked last weekend.", said)
    assert (weekend.first, weekend.last, weekend.written) == (date(2024, 10, 12), date(2024, 10, 13), False)
    assert dates("on May 5th", None) == []


def test_a_month_without_a_year_is_the_one_nearest_the_day_it_was_said():
    """By the month's middle: "in March" on 31 August 2024 is March 2024 (its first day is further back
    than March 2025's is ahead, which once made it next year's)."""
    assert [w.text for w in dates("We moved in March.", date(2024, 8, 31))] == ["March 2024"]
    assert [w.text for w in dates("We moved in March.", date(2024, 9, 30))] == ["March 2025"]
    [june] = dates("The wedding is in June.", date(2024, 2, 10))
    assert (june.first, june.last) == (date(2024, 6, 1), date(2024, 6, 30))
