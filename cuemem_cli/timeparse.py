"""Dates and times: what a time in the input, or a date phrase in a turn or a question, means.

- Input times (`parse_time`) become one naive ISO 8601 form, `YYYY-MM-DDTHH:MM:SS`, so that times sort
  and compare as plain strings. This runs for every input line, so the formats we know (ISO 8601,
  LoCoMo, LongMemEval, common human dates, unix epochs) are matched by precompiled regexes;
  python-dateutil is only a strict fallback for the rest.
- Calendar periods a question names (`named_periods`), and times written for people (`format_human`).
- Relative phrases ("yesterday", "last weekend", "two weeks ago") resolved against the day they were
  said: the rules behind the extractor's date cues and the dates prompts show (`time_phrases`, `dated`).
- The dates a sentence states (`dates`), what a when-question's answer is read from.

Only the standard library (dateutil too, imported on first use for a time format the regexes do not
know): the answer step and the extractor share these rules without either importing the other, and
without a parser.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)
# month number by lowercase name and abbreviation ("may", "sep", "sept"): the one table for dates in
# input files, questions, sentences (here) and turns (cues/rules.py)
MONTH_NUMBERS: dict[str, int] = {}
for _number, _name in enumerate(MONTH_NAMES, 1):
    MONTH_NUMBERS[_name.lower()] = _number
    MONTH_NUMBERS[_name[:3].lower()] = _number
MONTH_NUMBERS["sept"] = 9

_TIME = r"(\d{1,2}):(\d{2})(?::(\d{2}))?"
_ISO = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2})(?::(\d{2})(?::(\d{2})(?:[.,]\d+)?)?)?"
    r" ?(Z|[+-]\d{2}(?::?\d{2})?)?)?",
    re.IGNORECASE,
)
_YEAR_MONTH = re.compile(r"(\d{4})-(\d{2})")
# LoCoMo: "1:56 pm on 8 May, 2023"
_LOCOMO = re.compile(
    r"(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([a-z]+)\.?,?\s+(\d{4})",
    re.IGNORECASE,
)
# LongMemEval: "2023/05/30 (Tue) 23:40"
_SLASH_YMD = re.compile(
    rf"(\d{{4}})/(\d{{1,2}})/(\d{{1,2}})(?:\s*\([a-z]{{2,9}}\.?\))?(?:,?\s+{_TIME})?",
    re.IGNORECASE,
)
# US order: "05/08/2023" is 8 May
_SLASH_MDY = re.compile(rf"(\d{{1,2}})/(\d{{1,2}})/(\d{{4}})(?:,?\s+{_TIME})?")
_MONTH_DAY_YEAR = re.compile(r"([a-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})", re.IGNORECASE)
_DAY_MONTH_YEAR = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?\s+([a-z]+)\.?,?\s+(\d{4})", re.IGNORECASE)
_MONTH_YEAR = re.compile(r"([a-z]+)\.?,?\s+(\d{4})", re.IGNORECASE)
_EPOCH = re.compile(r"\d{9,11}(?:\.\d+)?")
_DIGIT = re.compile(r"\d")

_MAX_FALLBACK_LENGTH = 80
# Two different defaults reveal which fields dateutil filled in rather than read.
_DEFAULTS = (datetime(1904, 1, 1), datetime(1908, 2, 2))


def parse_time(value: str | int | float) -> str:
    """Parse a time into naive ISO 8601 `YYYY-MM-DDTHH:MM:SS`; raise ValueError if we cannot.

    Missing parts become zero (a date alone gives midnight; "May 2023" gives the 1st).
    Fractional seconds are dropped. Times with a zone (`Z`, `+02:00`, a named zone
    dateutil knows) are converted to UTC and the zone is then dropped; times without
    one are kept as written. Unix epoch seconds (9-11 digits, as a number or a
    string) are read as UTC. "05/08/2023" is month/day (US order).
    """
    if isinstance(value, bool):
        raise ValueError(f"not a time: {value!r}")
    if isinstance(value, (int, float)):
        return _from_epoch(value)
    if not isinstance(value, str):
        raise ValueError(f"not a time: expected a string, got {type(value).__name__}")
    return _parse_text(value.strip())


_MONTH_RE = "|".join(sorted(MONTH_NUMBERS, key=len, reverse=True))
_NAMED_DAY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH_RE})\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_NAMED_DAY_US = re.compile(rf"\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_NAMED_MONTH = re.compile(rf"\b({_MONTH_RE})\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_NAMED_YEAR = re.compile(r"\b((?:19|20)\d\d)\b")


def named_periods(text: str) -> list[tuple[str, str]]:
    """The calendar periods a question names, as inclusive (first day, last day) ISO dates.

    "on 25 May, 2022" / "on May 25, 2022" → that day; "in April 2022" → the month; "in 2023" → the
    year. The most precise form found wins (a day's year is not also a year). Relative phrases
    ("last week") are not resolved here: they need the question's own date.
    """
    days = []
    for match, (d, m, y) in [(mt, (1, 2, 3)) for mt in _NAMED_DAY.finditer(text)] + \
                            [(mt, (2, 1, 3)) for mt in _NAMED_DAY_US.finditer(text)]:
        try:
            day = datetime(int(match[y]), MONTH_NUMBERS[match[m].lower()], int(match[d]))
        except ValueError:
            continue
        days.append((day, day))
    if not days:
        for match in _NAMED_MONTH.finditer(text):
            first = datetime(int(match[2]), MONTH_NUMBERS[match[1].lower()], 1)
            days.append((first, (first + timedelta(days=32)).replace(day=1) - timedelta(days=1)))
    if not days:
        for match in _NAMED_YEAR.finditer(text):
            days.append((datetime(int(match[1]), 1, 1), datetime(int(match[1]), 12, 31)))
    return [(a.date().isoformat(), b.date().isoformat()) for a, b in days]


def format_human(iso: str, with_time: bool = True) -> str:
    """Render a time for people and prompts: "8 May 2023, 1:56 pm", or "8 May 2023" at midnight."""
    moment = datetime.fromisoformat(parse_time(iso))
    date = day_text(moment)
    clock = _clock(moment) if with_time else ""
    return f"{date}, {clock}" if clock else date


@lru_cache(maxsize=4096)
def day_of(time: str | None) -> str:
    """The day a turn was said, as its header line shows it ("8 May 2023"), or "date unknown"."""
    return format_human(time, with_time=False) if time else "date unknown"


def format_clock(iso: str) -> str:
    """The time of day alone ("1:56 pm"), for lines under a day header; "" at midnight (a date only)."""
    return _clock(datetime.fromisoformat(parse_time(iso)))


def _clock(moment: datetime) -> str:
    if (moment.hour, moment.minute, moment.second) == (0, 0, 0):
        return ""
    return f"{moment.hour % 12 or 12}:{moment.minute:02d} {'am' if moment.hour < 12 else 'pm'}"


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> str:
    """Cached because turns of one session usually repeat the same time string."""
    if not text:
        raise ValueError("empty time")
    if match := _ISO.fullmatch(text):
        year, month, day, hour, minute, second, zone = match.groups()
        moment = _build(text, year, month, day, hour, minute, second)
        return _iso(_to_utc(text, moment, zone) if zone else moment)
    if match := _LOCOMO.fullmatch(text):
        hour, minute, half, day, month_name, year = match.groups()
        hour_12 = int(hour)
        if not 1 <= hour_12 <= 12:
            raise ValueError(f"hour out of range in {_show(text)}")
        hour_24 = hour_12 % 12 + (12 if half.lower() == "p" else 0)
        return _iso(_build(text, year, _month(text, month_name), day, hour_24, minute))
    if match := _SLASH_YMD.fullmatch(text):
        return _iso(_build(text, *match.groups()))
    if match := _SLASH_MDY.fullmatch(text):
        month, day, year, hour, minute, second = match.groups()
        return _iso(_build(text, year, month, day, hour, minute, second))
    if _EPOCH.fullmatch(text):
        return _from_epoch(float(text))
    if match := _MONTH_DAY_YEAR.fullmatch(text):
        month_name, day, year = match.groups()
        if month_name.lower() in MONTH_NUMBERS:
            return _iso(_build(text, year, _month(text, month_name), day))
    if match := _DAY_MONTH_YEAR.fullmatch(text):
        day, month_name, year = match.groups()
        if month_name.lower() in MONTH_NUMBERS:
            return _iso(_build(text, year, _month(text, month_name), day))
    if match := _MONTH_YEAR.fullmatch(text):
        month_name, year = match.groups()
        if month_name.lower() in MONTH_NUMBERS:
            return _iso(_build(text, year, _month(text, month_name), 1))
    if match := _YEAR_MONTH.fullmatch(text):
        return _iso(_build(text, match[1], match[2], 1))
    return _fallback(text)


def _fallback(text: str) -> str:
    """dateutil for formats we did not foresee, accepted only when it read a full date. Imported here, on
    first use: the formats above never need it, and the answer step and the extractor import this module."""
    if not _DIGIT.search(text) or len(text) > _MAX_FALLBACK_LENGTH:
        raise ValueError(f"unrecognised time {_show(text)}")
    from dateutil import parser as _dateutil

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first, second = (_dateutil.parse(text, default=default) for default in _DEFAULTS)
        complete = first.date() == second.date()
        if first.tzinfo is not None:
            first = first.astimezone(UTC).replace(tzinfo=None)
    except Exception:
        raise ValueError(f"unrecognised time {_show(text)}") from None
    if not complete:
        raise ValueError(f"incomplete date (need year, month and day): {_show(text)}")
    return _iso(first)


def _build(
    text: str,
    year: str | int,
    month: str | int,
    day: str | int,
    hour: str | int | None = None,
    minute: str | int | None = None,
    second: str | int | None = None,
) -> datetime:
    try:
        return datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0))
    except ValueError:
        raise ValueError(f"no such date or time: {_show(text)}") from None


def _month(text: str, name: str) -> int:
    try:
        return MONTH_NUMBERS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown month {name!r} in {_show(text)}") from None


def _to_utc(text: str, moment: datetime, zone: str) -> datetime:
    if zone in ("Z", "z"):
        return moment
    digits = zone[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 23 or minutes > 59:
        raise ValueError(f"bad time zone offset in {_show(text)}")
    offset = timedelta(hours=hours, minutes=minutes)
    try:
        return moment - offset if zone[0] == "+" else moment + offset
    except OverflowError:
        raise ValueError(f"time out of range: {_show(text)}") from None


def _from_epoch(seconds: int | float) -> str:
    if not (math.isfinite(seconds) and 1e8 <= seconds < 1e11):
        raise ValueError(f"not a unix time in seconds (9-11 digits): {seconds!r}")
    return _iso(datetime.fromtimestamp(int(seconds), UTC).replace(tzinfo=None))


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def _show(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


# Relative dates: what "yesterday", "last weekend" or "two weeks ago" means on the day it was said. The
# same rules make the date cues at ingest (cues/rules.py spots the phrases in spaCy's parse and calls the
# resolve_* functions) and the dates answers and prompts show (time_phrases reads the phrases from words
# alone, so answering needs no parser), so a cue and an answer never disagree on a date.

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


def said_on(time: str | None) -> date | None:
    """The day of a stored turn time (ISO), or None."""
    try:
        return datetime.fromisoformat(time).date() if time else None
    except ValueError:
        return None


def day_number(word: str) -> int | None:
    """A day of the month written as a word: "8", "8th", "31st" → 8, 8, 31; anything else → None."""
    digits = word[:-2] if word[-2:] in ("st", "nd", "rd", "th") else word
    return int(digits) if digits.isdigit() and 1 <= int(digits) <= 31 and len(digits) <= 2 else None


def is_relative_unit(word: str) -> bool:
    """Whether "last", "next" or "this" before `word` names a date: week, weekend, month, year, a part of
    the day, a season, a weekday or a month."""
    return word in ("week", "weekend", "month", "year") or word in PARTS_OF_DAY \
        or word in SEASONS or word in WEEKDAYS or word in MONTH_NUMBERS


def day_text(d: date) -> str:
    """A day as cues, prompts and answers write it: "8 May 2023"."""
    return f"{d.day} {MONTH_NAMES[d.month - 1]} {d.year}"


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
               + "|".join(SEASONS) + "|" + _MONTH_RE)
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
    evidence: reconstruct.shown_text)."""
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


# Dates a sentence states, resolved against the day it was said: what a when-question's answer is. A
# dialogue rarely writes a full date. "I start on June 1st", "the 15th of November, back on the 18th",
# "May 10 to May 20", "last weekend", "next month" all need the day they were said to become a date, and
# a plan ("I could fly in on December 15th and stay through the 19th") is a range, not the day it was
# mentioned. Read from words alone (regular expressions), so answering needs no parser:
# - a month and day without a year takes the year that puts it nearest the day it was said (said on 20
#   October 2024, "January 6th" is 6 January 2025); a day alone ("the 19th") takes the month of the date
#   before it in the sentence, else the nearest such day;
# - relative phrases ("yesterday", "last weekend", "two weeks ago") are resolved by time_phrases, the
#   extractor's own rules, so answers and date cues agree;
# - two dates joined by "to", "until", "through", "-" or "… back on" are one range.
# Which of a sentence's dates answers a question is the answer's choice (answer_spans.best_date).

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
_TEXT_MONTH_DAY = re.compile(rf"\b(?P<month>{_MONTH_RE})\.?\s+(?P<day>[0-3]?\d){_ORD}?\b{_AND_YEAR}", re.I)
# 6 May 2023, the 15th of November, 15 to 22 September (a range when `to` is there)
_TEXT_DAY_MONTH = re.compile(rf"\b(?:the\s+)?(?:(?P<from>[0-3]?\d){_ORD}?\s*(?:-|–|to|until|through)\s*(?:the\s+)?)?"
                             rf"{_DAY_NUM}\s+(?:of\s+)?(?P<month>{_MONTH_RE})\b\.?{_AND_YEAR}", re.I)
# the 19th, on the 28th, to 16th: a day whose month comes from the sentence or the day said
_TEXT_DAY = re.compile(rf"\b(?:the\s+)?(?P<day>[0-3]?\d){_ORD}\b(?!\s+(?:of\s+)?(?:{_MONTH_RE})\b)", re.I)
# in April, mid-April, for December, in September 2024 (the month alone)
_TEXT_MONTH = re.compile(rf"\b(?:(?:in|for|since|until|by|of|to|mid|early|late)[\s-]+)(?P<month>{_MONTH_RE})\b"
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
