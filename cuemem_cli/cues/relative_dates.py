"""Relative time phrases: what "yesterday", "last weekend" or "two weeks ago" means on the day it was said.

The same rules make the date cues at ingest (`cuemem_cli.cues.rules` spots the phrases in spaCy's parse and
calls the resolve_* functions) and the dates answers and prompts show (`time_phrases` reads the phrases from
words alone, so answering needs no parser), so a cue and an answer never disagree on a date. Only the
standard library: the answer step and the evidence lines use these rules without loading spaCy.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from ..timeparse import MONTH_NAMES, MONTH_NUMBERS, MONTH_PATTERN, day_text

WEEKDAYS = {d: i for i, d in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday",
                                         "saturday", "sunday"))}
SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}  # the month each begins
PARTS_OF_DAY = {"morning", "afternoon", "evening", "night", "tonight"}
NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
VAGUE_COUNTS = {"few", "couple", "several"}
UNITS = {"day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month",
         "months": "month", "year": "year", "years": "year"}
DIRECTIONS = {"last": -1, "past": -1, "next": 1}  # "this" points nowhere: 0


def day_number(word: str) -> int | None:
    """A day of the month written as a word: "8", "8th", "31st" → 8, 8, 31; anything else → None."""
    digits = word[:-2] if word[-2:] in ("st", "nd", "rd", "th") else word
    return int(digits) if digits.isdigit() and 1 <= int(digits) <= 31 and len(digits) <= 2 else None


def is_relative_unit(word: str) -> bool:
    """Whether "last", "next" or "this" before `word` names a date: week, weekend, month, year, a part of
    the day, a season, a weekday or a month."""
    return word in ("week", "weekend", "month", "year") or word in PARTS_OF_DAY \
        or word in SEASONS or word in WEEKDAYS or word in MONTH_NUMBERS


def _month_text(year: int, month: int) -> str:
    while month < 1:
        year, month = year - 1, month + 12
    while month > 12:
        year, month = year + 1, month - 12
    return f"{MONTH_NAMES[month - 1]} {year}"


def _week_text(d: date) -> str:
    return f"week of {day_text(d - timedelta(days=d.weekday()))}"


def _season_text(name: str, year: int) -> str:
    return f"winter {year}/{str(year + 1)[-2:]}" if name == "winter" else f"{name} {year}"


def resolve_day_word(word: str, today: date) -> str:
    """"yesterday", "today", "tonight" or "tomorrow" said on `today`, as a day."""
    return day_text(today + timedelta(days={"yesterday": -1, "tomorrow": 1}.get(word, 0)))


def resolve_relative(word: str, direction: int, today: date, stated: int | None = None) -> str:
    """"last"/"this"/"next" (`direction` -1, 0, 1) `word` (is_relative_unit) said on `today`: "last week"
    → "week of 1 May 2023", "next month" → "June 2023", "last night" → the day before, "last summer"
    → the latest summer already over. `stated`: the day of the month the speaker wrote beside a weekday
    (`stated_day`)."""
    d = today
    if word in PARTS_OF_DAY:
        return day_text(d - timedelta(days=1) if direction < 0 and word == "night" else d)
    if word == "week":
        return _week_text(d + timedelta(weeks=direction))
    if word == "weekend":
        saturday = d + timedelta(days=5 - d.weekday())
        if direction < 0:
            saturday -= timedelta(days=7)
        elif direction > 0 and d.weekday() >= 5:
            saturday += timedelta(days=7)
        return f"weekend of {day_text(saturday)}"
    if word == "month":
        return _month_text(d.year, d.month + direction)
    if word == "year":
        return str(d.year + direction)
    if word in WEEKDAYS:
        return resolve_weekday(word, direction, d, stated)
    if word in SEASONS:
        start = SEASONS[word]
        year = d.year - (1 if start == 12 and d.month < 3 else 0)
        end = (year + 1, 2) if start == 12 else (year, start + 2)
        if direction < 0 and end >= (d.year, d.month):
            year -= 1
        elif direction > 0 and (year, start) <= (d.year, d.month):
            year += 1
        return _season_text(word, year)
    month = MONTH_NUMBERS[word]
    year = d.year + direction if direction else d.year
    if (direction < 0 and month < d.month) or (direction > 0 and month > d.month):
        year = d.year
    return _month_text(year, month)


def resolve_weekday(word: str, direction: int, today: date, stated: int | None = None) -> str:
    """A weekday said on `today`: the one before it (`direction` < 0), after it (> 0, also when it is
    today), or the next one from today on (0); or, when the speaker wrote its day of the month beside it
    (`stated`: "last Saturday, the 6th", said on Sunday 14 May), the one a week or two further that falls
    on that day: "last Saturday" said the day after is often the Saturday of the week before, and the
    speaker's own number is the surer word."""
    delta = (WEEKDAYS[word] - today.weekday()) % 7
    if direction < 0:
        delta = delta - 7 if delta else -7
    elif direction > 0 and delta == 0:
        delta = 7
    day = today + timedelta(days=delta)
    further = -7 if direction < 0 else 7
    for candidate in (day + timedelta(days=further * weeks) for weeks in (0, 1, 2)):
        if candidate.day == stated:
            return day_text(candidate)
    return day_text(day)


_STATED_DAY = re.compile(r"\s*(?:,|\()?\s*(?:on\s+)?the\s+(\d{1,2}(?:st|nd|rd|th))\b", re.IGNORECASE)


def stated_day(after: str) -> int | None:
    """The day of the month written right after a weekday, as in "last Saturday, the 6th" or "on Friday
    (the 12th)": the text that follows the weekday → 6, 12; None where none is written."""
    match = _STATED_DAY.match(after)
    return day_number(match.group(1).lower()) if match else None


def resolve_ago(count: int | None, unit: str, words: str, today: date) -> str:
    """`count` `unit`s (day, week, month, year) before `today`; a vague count ("a few days", written as
    `words`) stays words: "a few days before 8 May 2023"."""
    if count is None:
        return f"{words} before {day_text(today)}"
    if unit == "day":
        return day_text(today - timedelta(days=count))
    if unit == "week":
        return _week_text(today - timedelta(weeks=count))
    if unit == "month":
        return _month_text(today.year, today.month - count)
    return str(today.year - count)


def bare_month_year(month: int, today: date, past: bool) -> int:
    """The year of a month named without one, said on `today`: today's year, unless that puts it on the
    wrong side of today for the tense (`past`: "we went in December", said in May, is last year's)."""
    if past and month > today.month:
        return today.year - 1
    if not past and month < today.month:
        return today.year + 1
    return today.year


_UNIT_WORDS = ("weekend|week|month|year|morning|afternoon|evening|night|" + "|".join(WEEKDAYS) + "|"
               + "|".join(SEASONS) + "|" + MONTH_PATTERN)
_COUNT_WORDS = "|".join(["\\d+", "a few", "a couple of", "a couple", "few", "several", *NUMBER_WORDS])
_DAY_OR_NAMED = rf"(yesterday|today|tonight|tomorrow)|(last|next|this|past)\s+({_UNIT_WORDS})"
_TIME_PHRASE = re.compile(rf"\b(?:{_DAY_OR_NAMED}|({_COUNT_WORDS})\s+(days?|weeks?|months?|years?)\s+ago)\b",
                          re.IGNORECASE)
# The same without its "… ago" branch, which tries every "a" and "one" of a text: what a text without
# "ago" is read with (the matches are the same), many times faster on long turns.
_TIME_PHRASE_NOT_AGO = re.compile(rf"\b(?:{_DAY_OR_NAMED})\b", re.IGNORECASE)
_AGO = re.compile(r"\bago\b", re.IGNORECASE)


def time_phrases(text: str, said: date | None, past: bool = True) -> list[tuple[str, str, str]]:
    """Relative time phrases of `text` resolved against `said`, the day they were said, by the rules
    that make the date cues at ingest, read from words alone so the answer step needs no parser:
    (phrase as written, as anchored on `said`, resolved).

    "last weekend" said on 14 May 2023 → ("last weekend", "the weekend before 14 May 2023", "weekend of
    6 May 2023"). `past` is the tense of the question asking ("When did…"): it decides nothing here
    but which way a bare "this Friday" points.
    """
    if said is None:
        return []
    anchor = day_text(said)
    out = []
    for match in (_TIME_PHRASE if _AGO.search(text) else _TIME_PHRASE_NOT_AGO).finditer(text):
        phrase = match.group(0)
        if match.group(1):
            resolved = resolve_day_word(match.group(1).lower(), said)
            out.append((phrase, resolved, resolved))
        elif match.group(2):
            which, unit = match.group(2).lower(), match.group(3).lower()
            direction = DIRECTIONS.get(which, 0)
            if direction == 0 and unit in WEEKDAYS:
                direction = -1 if past else 1
            resolved = resolve_relative(unit, direction, said, stated_day(text[match.end():]))
            named = unit in ("month", "year") or unit in SEASONS or unit in MONTH_NUMBERS  # "2022" says it all
            called = unit.capitalize() if unit in WEEKDAYS else unit
            where = None if named else {-1: f"the {called} before {anchor}",
                                        1: f"the {called} after {anchor}"}.get(direction)
            out.append((phrase, where or resolved, resolved))
        else:
            count_word, unit = match.group(4).lower(), UNITS[match.group(5).lower()]
            count = int(count_word) if count_word.isdigit() else NUMBER_WORDS.get(count_word)
            resolved = resolve_ago(count, unit, f"{count_word} {unit}s", said)
            out.append((phrase, f"{count_word} {match.group(5).lower()} before {anchor}", resolved))
    return out


def dated(text: str, said: date | None, past: bool = True, brief: bool = False) -> str:
    """`text` with each relative time phrase followed by what it means on the day it was said: "last
    weekend" → "last weekend [the weekend before 14 May 2023: weekend of 6 May 2023]" (the offline
    answer's sources), or `brief`ly "last weekend [weekend of 6 May 2023]" (the answer prompt's
    evidence: `cuemem_cli.recall.lines.shown_text`)."""
    out, end = [], 0
    for phrase, anchored, resolved in time_phrases(text, said, past):
        at = text.find(phrase, end)
        if at < 0:
            continue
        if brief:
            note = resolved or anchored
        else:
            note = anchored if anchored == resolved or not resolved else f"{anchored}: {resolved}"
        out += [text[end:at + len(phrase)], f" [{note}]"]
        end = at + len(phrase)
    return "".join(out) + text[end:]
