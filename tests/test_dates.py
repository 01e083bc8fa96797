"""Dates said in words resolve against the day they were said: relative phrases
(`cuemem_cli.cues.relative_dates`), as date cues and prompts show them, and the dates a sentence states
(`cuemem_cli.answer.stated_dates`), what a when-question's offline answer is read from."""

from __future__ import annotations

from datetime import date

import pytest

from cuemem_cli.answer.stated_dates import dates
from cuemem_cli.cues.relative_dates import dated, time_phrases


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
