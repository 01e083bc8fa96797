"""Times: what a time in the input means, and how times are written for people.

- Input times (`parse_time`) become one naive ISO 8601 form, `YYYY-MM-DDTHH:MM:SS`, so that times sort
  and compare as plain strings. This runs for every input line, so the formats we know (ISO 8601,
  LoCoMo, LongMemEval, common human dates, unix epochs) are matched by precompiled regexes;
  python-dateutil is only a strict fallback for the rest.
- Calendar periods a question names (`named_periods`), and times written for people (`format_human`,
  `day_of`, `day_text`).

What a date phrase in a turn means is elsewhere: relative phrases ("yesterday", "last weekend") in
`cuemem_cli.cues.relative_dates`, the dates a sentence states in `cuemem_cli.answer.stated_dates`. Both read
the month names here. Only the standard library (dateutil too, imported on first use for a time format the
regexes do not know), so every step can import it cheaply.
"""

from __future__ import annotations

import math
import re
import warnings
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)
# month number by lowercase name and abbreviation ("may", "sep", "sept"): the one table for dates in
# input files and questions (here), turns (cues/rules.py, cues/relative_dates.py) and sentences
# (answer/stated_dates.py)
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


# any month name or abbreviation, as a regular expression (the longest first), for the patterns that read dates
MONTH_PATTERN = "|".join(sorted(MONTH_NUMBERS, key=len, reverse=True))
_NAMED_DAY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({MONTH_PATTERN})\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_NAMED_DAY_US = re.compile(rf"\b({MONTH_PATTERN})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_NAMED_MONTH = re.compile(rf"\b({MONTH_PATTERN})\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
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


def day_text(d: date) -> str:
    """A day as cues, prompts and answers write it: "8 May 2023"."""
    return f"{d.day} {MONTH_NAMES[d.month - 1]} {d.year}"


def said_on(time: str | None) -> date | None:
    """The day of a stored turn time (ISO), or None."""
    try:
        return datetime.fromisoformat(time).date() if time else None
    except ValueError:
        return None


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
    first use: the formats above never need it, and every step imports this module."""
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
