"""The dates a sentence states, resolved against the day it was said: what a when-question's answer is.

A dialogue rarely writes a full date. "I start on June 1st", "the 15th of November, back on the 18th",
"May 10 to May 20", "last weekend", "next month" all need the day they were said to become a date, and a
plan ("I could fly in on December 15th and stay through the 19th") is a range, not the day it was
mentioned. Read from words alone (regular expressions), so answering needs no parser:
- a month and day without a year takes the year that puts it nearest the day it was said (said on 20
  October 2024, "January 6th" is 6 January 2025); a day alone ("the 19th") takes the month of the date
  before it in the sentence, else the nearest such day;
- relative phrases ("yesterday", "last weekend", "two weeks ago") are resolved by
  `cuemem_cli.cues.relative_dates.time_phrases`, the extractor's own rules, so answers and date cues agree;
- two dates joined by "to", "until", "through", "-" or "… back on" are one range.

Which of a sentence's dates answers a question is the answer's choice (`cuemem_cli.answer.spans.best_date`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from ..cues.relative_dates import time_phrases
from ..timeparse import MONTH_NAMES, MONTH_NUMBERS, MONTH_PATTERN, day_text

DAY, WEEK, MONTH, YEAR = 3, 2, 1, 0  # precision: a finer date answers better


@dataclass(frozen=True)
class When:
    """A date or range a sentence states: `text` as the answer says it, written at sentence[at:end]."""

    first: date
    last: date
    precision: int
    text: str
    at: int
    end: int
    written: bool = True  # written out, not relative ("last Saturday") as time_phrases reads it


_ORD = r"(?:st|nd|rd|th)"
_DAY_NUM = rf"(?P<day>[0-3]?\d){_ORD}?"
_AND_YEAR = r"(?:,?\s+(?P<year>(?:19|20)\d\d)\b)?"
# May 10, June 1st, December 15th, 2023 (the month first); "May" before a digit is the month
_TEXT_MONTH_DAY = re.compile(rf"\b(?P<month>{MONTH_PATTERN})\.?\s+(?P<day>[0-3]?\d){_ORD}?\b{_AND_YEAR}", re.I)
# 6 May 2023, the 15th of November, 15 to 22 September (a range when `to` is there)
_TEXT_DAY_MONTH = re.compile(rf"\b(?:the\s+)?(?:(?P<from>[0-3]?\d){_ORD}?\s*(?:-|–|to|until|through)\s*(?:the\s+)?)?"
                             rf"{_DAY_NUM}\s+(?:of\s+)?(?P<month>{MONTH_PATTERN})\b\.?{_AND_YEAR}", re.I)
# the 19th, on the 28th, to 16th: a day whose month comes from the sentence or the day said
_TEXT_DAY = re.compile(rf"\b(?:the\s+)?(?P<day>[0-3]?\d){_ORD}\b(?!\s+(?:of\s+)?(?:{MONTH_PATTERN})\b)", re.I)
# in April, mid-April, for December, in September 2024 (the month alone)
_TEXT_MONTH = re.compile(rf"\b(?:(?:in|for|since|until|by|of|to|mid|early|late)[\s-]+)(?P<month>{MONTH_PATTERN})\b"
                         rf"(?!\.?\s+[0-3]?\d){_AND_YEAR}", re.I)
_TEXT_YEAR = re.compile(r"\b(?:in|since|until|by|of)\s+(?P<year>(?:19|20)\d\d)\b")
# between two dates of one range
_RANGE_JOIN = re.compile(r"^\s*(?:-|–|—|to|until|till|through|thru)\s*$|"
                         r"^[\s,]*(?:and\s+)?(?:\w+\s+){0,3}(?:to|until|till|through|thru|back|home)\b(?:\s+\w+){0,2}\s*$",
                         re.I)
_NOT_A_RANGE = re.compile(r"\b(?:but|so|now|instead|or)\b", re.I)
_MAX_RANGE_DAYS = 92


def _nearest(month: int, day: int, said: date, year: str | None) -> date | None:
    """The date with this month and day nearest `said` (a year given wins)."""
    years = [int(year)] if year else [said.year - 1, said.year, said.year + 1]
    found = []
    for y in years:
        try:
            found.append(date(y, month, day))
        except ValueError:
            continue
    return min(found, key=lambda d: abs((d - said).days)) if found else None


def _month_span(month: int, said: date, year: str | None) -> tuple[date, date]:
    """The month named (in `year`, else the one whose middle is nearest `said`: "in March" said on 31
    August 2024 is March 2024, whose middle is 169 days before, not March 2025, whose first day is 182
    days after)."""
    first = (_nearest(month, 15, said, year) or date(said.year, month, 15)).replace(day=1)
    last = (first.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
    return first, last


def range_text(first: date, last: date) -> str:
    """"15 to 19 December 2023", "30 April to 2 May 2024", or both dates in full across a year."""
    if first == last:
        return day_text(first)
    if first.year != last.year:
        return f"{day_text(first)} to {day_text(last)}"
    if first.month != last.month:
        return f"{first.day} {MONTH_NAMES[first.month - 1]} to {day_text(last)}"
    return f"{first.day} to {day_text(last)}"


def _written_dates(sentence: str, said: date) -> list[When]:
    """Days, months and years written out, in the order they appear (overlaps: the longest wins)."""
    found: list[When] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    def add(match: re.Match[str], when: When | None) -> None:
        if when is not None and free(match.start(), match.end()):
            taken.append((match.start(), match.end()))
            found.append(when)

    for match in _TEXT_DAY_MONTH.finditer(sentence):
        month = MONTH_NUMBERS[match["month"].lower()]
        last = _nearest(month, int(match["day"]), said, match["year"])
        first = _nearest(month, int(match["from"]), said, match["year"]) if match["from"] else last
        if first and last and first <= last:
            add(match, When(first, last, DAY, range_text(first, last), match.start(), match.end()))
    for match in _TEXT_MONTH_DAY.finditer(sentence):
        d = _nearest(MONTH_NUMBERS[match["month"].lower()], int(match["day"]), said, match["year"])
        if d:
            add(match, When(d, d, DAY, day_text(d), match.start(), match.end()))
    for match in _TEXT_MONTH.finditer(sentence):
        first, last = _month_span(MONTH_NUMBERS[match["month"].lower()], said, match["year"])
        add(match, When(first, last, MONTH, f"{MONTH_NAMES[first.month - 1]} {first.year}", match.start("month"),
                             match.end()))
    for match in _TEXT_YEAR.finditer(sentence):
        y = int(match["year"])
        add(match, When(date(y, 1, 1), date(y, 12, 31), YEAR, str(y), match.start("year"), match.end()))
    for match in _TEXT_DAY.finditer(sentence):
        day = int(match["day"])
        before = [w for w in found if w.at < match.start() and w.precision >= MONTH]
        if before:
            ref = max(before, key=lambda w: w.at).last
            d = _nearest(ref.month, day, ref, str(ref.year))
            if d is not None and d < ref:  # "the 28th" after "December 30th" is the next month's
                d = _nearest(ref.month % 12 + 1, day, ref, None)
        else:
            d = _nearest_day(day, said)
        if d:
            add(match, When(d, d, DAY, day_text(d), match.start(), match.end()))
    return sorted(found, key=lambda w: w.at)


def _nearest_day(day: int, said: date) -> date | None:
    options = []
    for shift in (-1, 0, 1):
        month, year = said.month + shift, said.year
        if month < 1:
            month, year = 12, year - 1
        elif month > 12:
            month, year = 1, year + 1
        try:
            options.append(date(year, month, day))
        except ValueError:
            continue
    return min(options, key=lambda d: abs((d - said).days)) if options else None


def _relative_dates(sentence: str, said: date, past: bool) -> list[When]:
    """Relative phrases as time_phrases resolves them, their precision read from the result."""
    out = []
    for phrase, anchored, resolved in time_phrases(sentence, said, past):
        at = sentence.find(phrase)
        end = at + len(phrase)
        text = resolved or anchored
        if re.fullmatch(r"\d{1,2} [A-Z][a-z]+ \d{4}", text):
            d = _parse_day(text)
            out.append(When(d, d, DAY, text, at, end, False))
        elif text.startswith(("week of", "weekend of")):
            d = _parse_day(text.split(" of ", 1)[1])
            span = 1 if text.startswith("weekend") else 6
            out.append(When(d, d + timedelta(days=span), WEEK, text, at, end, False))
        elif re.fullmatch(r"[A-Z][a-z]+ \d{4}", text):
            first, last = _month_span(MONTH_NUMBERS[text.split()[0].lower()], said, text.split()[1])
            out.append(When(first, last, MONTH, text, at, end, False))
        elif re.fullmatch(r"\d{4}", text):
            y = int(text)
            out.append(When(date(y, 1, 1), date(y, 12, 31), YEAR, text, at, end, False))
    return out


def _parse_day(text: str) -> date:
    day, month, year = text.split()
    return date(int(year), MONTH_NUMBERS[month.lower()], int(day))


def dates(sentence: str, said: date | None, past: bool = True) -> list[When]:
    """Every date `sentence` states, said on `said`, in order; two joined as a range become one.

    `past` is the tense of the question, for phrases whose direction only the tense gives ("this
    Friday"). Without the day it was said, nothing in a sentence can be placed in time."""
    if said is None:
        return []
    found = sorted(_written_dates(sentence, said) + _relative_dates(sentence, said, past), key=lambda w: w.at)
    merged: list[When] = []
    for when in found:
        if merged:
            prev = merged[-1]
            joined = (prev.precision == DAY == when.precision and prev.last < when.first
                      and (when.first - prev.last).days <= _MAX_RANGE_DAYS
                      and not _NOT_A_RANGE.search(sentence[prev.at:when.at])
                      and _RANGE_JOIN.search(sentence[prev.end:when.at]))
            if joined:
                merged[-1] = When(prev.first, when.last, DAY, range_text(prev.first, when.last), prev.at, when.end)
                continue
        merged.append(when)
    return merged
