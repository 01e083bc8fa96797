"""What a question asks for: its parts, each of one kind (a date, a place, a person, a number, a noun
phrase), with the tense and the periods that decide which statement answers it.

A question asks for one kind of thing (when → a date, where → a place, who → a person, how many → a
number, what/which → a noun phrase), sometimes two ("What breed is the dog Maya adopted, and when?").
For a what-question, `focus` says which noun or verb it asks about, read with the extractor's spaCy parser
(`cuemem_cli.cues.parser`), loaded only when such a question is answered offline. What the question's
words are for finding evidence (its search terms, the periods it names) is `cuemem_cli.recall.question`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..cues.parser import english_parser
from ..recall.question import question_periods

WH = r"(?:when|where|who(?:m|se)?|what|which|how\s+(?:many|much|long|old|often|far))"
_TWO_WH = re.compile(rf"^\s*({WH})\s+and\s+({WH})\s+(.*)$", re.I)  # Where and when did …?
_AND_WH = re.compile(rf"^(.*?\w)\s*,?\s+and\s+({WH})\b\s*(.*)$", re.I)  # …, and when (is it)?
_NOW = re.compile(r"\b(?:now|currently|current|these days|still|anymore|latest|at the moment|nowadays)\b", re.I)
_PAST = re.compile(r"\b(?:did|was|were|had|used to|ago|last|first|before|previous(?:ly)?|former(?:ly)?|originally)\b",
                   re.I)
_PRESENT = re.compile(rf"^\s*{WH}(?:\s+\w+){{0,3}}?\s+(?:is|are|am|does|do|will|'s|'re)\b", re.I)
_FUTURE = re.compile(r"\b(?:will|going to|plan(?:ning)?|next|upcoming)\b", re.I)


@dataclass(frozen=True)
class Part:
    """One thing a question asks for. `current`: about the present or a plan, so the newest statement
    about it wins; `now`: says so, so the newest of close answers wins too; `past`: the tense that
    decides which way "on Friday" points; `periods`: named in the question."""

    kind: str  # when | where | who | how-many | what
    text: str
    current: bool
    past: bool
    periods: tuple[tuple[str, str], ...]
    now: bool = False  # says so: "now", "currently", "still"


# "How does Dave feel … when they see it?": a when-clause inside a question another wh-word opens asks
# no date (a "when" that opens the question or follows "and"/"or"/a comma does). Measured: LoCoMo single-hop +
# temporal answer line 0.427 -> 0.429, its lone wrong lines 30 -> 27 (dates given for "how did … feel when");
# REALTALK's line 0.162 -> 0.165
_WHEN_CLAUSE = re.compile(r"^\W*(?:what|which|where|who|whom|whose|how|why)\b"
                          r".*?(?<!\band )(?<!\bor )(?<!,)(?<!, )\bwhen\b")


def question_kind(question: str) -> str:
    """when | where | who | how-many | what: the kind of span the question asks for."""
    q = question.lower()
    if re.search(r"\b(?:what (?:year|month|day|date|time)|which (?:year|month|day|date)|how long ago)\b", q) or (
            re.search(r"\bwhen\b", q) and not _WHEN_CLAUSE.match(q)):
        return "when"
    if re.search(r"\bhow (?:many|much|long|old|often|far)\b", q):
        return "how-many"
    if re.search(r"\bwhere\b", q):
        return "where"
    if re.search(r"\bwho(?:m|se)?\b", q):
        return "who"
    return "what"


_AUX = r"(?:do|does|did|are|were|is|was|has|have|had|can|could|will|would)"
_PLURAL = r"\w+[^su\W]s"  # "themes", "activities"; not "bus", "class", "status"
_SEVERAL = re.compile(rf"^\s*(?:(?:what|which)\s+(?:\w+\s+){{0,2}}?{_PLURAL}\s+{_AUX}\b"
                      rf"|what\s+(?:are|were)\s+(?:\w+(?:'s|’s)?\s+){{0,4}}?{_PLURAL}\s*\??\s*$)", re.I)


def asks_for_several(question: str) -> bool:
    """Whether a question asks for several things, gathered across what was said: a plural noun after
    what/which ("Which themes did I ask about?", "What activities does Melanie do?", "What are Kate's
    hobbies?")."""
    return bool(_SEVERAL.match(question))


def question_parts(question: str) -> list[Part]:
    """The parts of a question: one, or two for "Where and when did …?" and "…, and when (is it)?".

    A bare second part ("and when?") takes its verb and tense from the first: "What breed is the dog
    Maya adopted, and when?" asks when she adopted it."""
    texts = [question]
    if match := _TWO_WH.match(question):
        texts = [f"{match[1]} {match[3]}", f"{match[2]} {match[3]}"]
    elif (match := _AND_WH.match(question)) and re.match(WH, match[1].strip(), re.I):
        rest = match[3].strip(" ?")
        bare = not rest or re.fullmatch(r"(?:is|was|are|were|does|did|will)\s+(?:it|that|this|they|he|she)", rest, re.I)
        second = f"{match[2]} {rest}".strip() if not bare else f"{match[2]} {rest} {match[1]}".strip()
        texts = [match[1].strip() + "?", second + ("?" if not second.endswith("?") else "")]
    tense_of = " ".join(texts)
    return [_part(text, tense_of if i else text) for i, text in enumerate(texts)]


def _part(text: str, tense_of: str) -> Part:
    """A part's kind, tense and periods; a bare second part ("… adopted, and when?") is about the present
    or a plan only if the first part is not in the past."""
    periods = tuple(question_periods(text))
    past = bool(re.search(r"\b(?:did|was|were|had|ago|last)\b|\b\w{3,}ed\b", tense_of, re.I)) and not _FUTURE.search(
        tense_of)
    now = bool(_NOW.search(text))
    current = now or (bool(_PRESENT.search(text)) and not _PAST.search(text) and not periods
                      and (text == tense_of or not past))
    return Part(question_kind(text), text, current, past, periods, now)


@dataclass(frozen=True)
class Focus:
    """What a what-question asks about: a noun ("What breed …" → breed), else its verb ("What did
    Biscuit eat?" → eat), and the words to compare candidate phrases with."""

    noun: str | None
    verb: str | None
    text: str


def focus(part: Part, names: Iterable[str]) -> Focus:
    """The noun after what/which ("What breed …" → "breed"), or after "What is X's" ("diet"), or the
    question's own verb; the text compared with phrases is the noun, else the question without its
    question word and names."""
    text = part.text.strip(" ?")
    named = (re.match(r"^(?:what|which)\s+(?:kind|sort|type)\s+of\s+(\w+)", text, re.I)
             or re.match(r"^(?:what|which)\s+(?!(?:is|are|was|were|did|does|do|has|have|had|will)\b)(\w+)", text, re.I)
             or re.match(r"^(?:what|which)\s+(?:is|are|was|were)\s+(?:the\s+|a\s+|an\s+)?(?:\w+(?:'s|’s)\s+)?"
                         r"(?:(?:best|favou?rite|first|last|new|main|biggest|latest)\s+)?(\w+)", text, re.I))
    noun = named[1] if named else None
    rest = re.sub(rf"^{WH}\s+", "", text, flags=re.I)
    for name in names:
        rest = re.sub(rf"\b{re.escape(name)}(?:'s|’s)?\b", " ", rest)
    verb = None
    if noun is None:
        parser = english_parser()
        root = next((t for t in parser(text) if t.dep_ == "ROOT"), None)
        if root is not None and root.tag_.startswith("VB") and parser.lemma(root) not in ("be", "do", "have"):
            verb = parser.lemma(root)
    return Focus(noun, verb, noun or re.sub(r"\s+", " ", rest).strip() or text)
