"""How the offline answer quotes what was said: a sentence as its answer line, and whole turns as its sources,
each with who said it and the day, relative dates resolved."""

from __future__ import annotations

from ..cues.relative_dates import dated
from ..records import Evidence
from ..timeparse import format_human, said_on
from .sentences import sentences

LINE_CHARS = 240  # the answer line a person reads (issue 49)


def _day(ev: Evidence) -> str:
    return format_human(ev.time, with_time=False) if ev.time else "undated"


def source(ev: Evidence) -> str:
    return f"{ev.speaker or 'unknown'}, {ev.source_id}, {_day(ev)}: \"{dated(ev.text, said_on(ev.time))}\""


def quote(ev: Evidence, sentence: str, around: str = "", lead: str = "") -> str:
    """The answer line when the reader is not sure: `sentence` quoted with who said it and the day, its
    relative dates resolved ("Maya, 14 May 2023: \"I adopted him last weekend [the weekend before 14 May
    2023: weekend of 6 May 2023]\""), with the sentences of its turn around it while they fit in
    LINE_CHARS ("Yes, the one by the river." says little alone); a sentence longer than that keeps the
    words around `around` (the span read in it), cut at word ends and marked with "…". `lead` opens the
    line ("No: " before the sentence that decides a yes/no question) and counts in its length."""
    said = sentences(ev.text)
    if sentence in said:
        first = last = said.index(sentence)
        while True:
            wider = [(a, b) for a, b in ((first, last + 1), (first - 1, last)) if a >= 0 and b < len(said)]
            grown = next(((a, b) for a, b in wider
                          if len(_quoted(ev, " ".join(said[a:b + 1]), lead=lead)) <= LINE_CHARS), None)
            if grown is None:
                break
            first, last = grown
        sentence = " ".join(said[first:last + 1])
    return _quoted(ev, sentence, around, lead)


def _quoted(ev: Evidence, sentence: str, around: str = "", lead: str = "") -> str:
    """`sentence` as `quote` writes it, cut to LINE_CHARS."""
    head = f"{lead}{ev.speaker or 'unknown'}, {_day(ev)}: "
    room = LINE_CHARS - len(head) - 2
    text = " ".join(dated(sentence, said_on(ev.time)).split())
    if len(text) > room:
        at = max(0, text.lower().find(around.lower())) if around else 0
        start = max(0, min(at - room // 3, len(text) - room + 2))
        if start:
            start = text.find(" ", start) + 1 or start
        end = text.rfind(" ", start, start + room - 2 * bool(start) - 1)
        end = end if end > start else start + room - 2
        text = ("…" if start else "") + text[start:end].rstrip(" ,;:") + "…"
    return f'{head}"{text}"'


def quote_several(said: list[tuple[Evidence, str]]) -> str:
    """One line for a question asking for several things ("Which cities did I visit?"): the first sentence
    quoted as `quote` does, then each further one, whole, with its speaker and day (the day alone when the
    speaker stays), while the line stays within LINE_CHARS."""
    line = quote(*said[0])
    last = (said[0][0].speaker or "unknown", _day(said[0][0]))
    for ev, sentence in said[1:]:
        who = (ev.speaker or "unknown", _day(ev))
        head = f"{who[1]}: " if who[0] == last[0] else f"{who[0]}, {who[1]}: "
        part = f'; {head}"{" ".join(dated(sentence, said_on(ev.time)).split())}"'
        if len(line) + len(part) <= LINE_CHARS:
            line, last = line + part, who
    return line
