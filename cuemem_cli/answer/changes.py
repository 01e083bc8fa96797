"""The answer line for a fact that changed (issue 57): the latest value with the day it was said and the earlier
one ("Denver (said 22 July 2023; before: Portland, said 14 May 2023)"), or, when the later turn contradicts the
earlier rather than updating it, both, said as a contradiction.

It reads the changes the evidence carries (each evidence turn's `supersedes` / `superseded_by`, recorded at ingest
by cues/changes.py and kept together by recall/changes.py) and takes the one the question is about: both turns in
the evidence, the question naming a word of its relation or values (or asking about now and naming its subject),
the newest such change of the chain. A question about a period or about before ("Where did Maya live in March
2023?", "Where did Leo work before?") is left to the reader, as is one whose kind the values cannot answer (a
where-question and a number).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..records import ChangeLink, Context, Evidence
from ..recall.changes import asks_now
from ..text import sentences
from ..timeparse import format_human, said_on
from .question_parts import Part
from .spans import stem, stems
from .stated_dates import dates


_BEFORE = re.compile(r"\b(?:before|first|originally|original|initially|used to|previous(?:ly)?|former(?:ly)?|"
                     r"earlier|old|at first|in the beginning)\b", re.I)
_PLACE_RELATIONS = {"live in", "work at"}
# A question about how or why, not for a value ("How does Audrey describe the new beds?"): no value answers it.
_MANNER = re.compile(r"^\s*(?:why\b|how\b(?!\s+(?:many|much|long|old|often|far)\b))", re.I)
_NUMBER = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|hundred)\b", re.I)
_MONTH = re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December"
                    r"|\d{1,2}(?:st|nd|rd|th)?)\b", re.I)


@dataclass(frozen=True)
class Changed:
    """A change the evidence holds both turns of: the older and newer evidence indexes, and the change."""

    older: int
    newer: int
    link: ChangeLink  # as the newer turn names the older one


def _said(ev: Evidence) -> str:
    return f"said {format_human(ev.time, with_time=False)}" if ev.time else "said"


def _same(a: str, b: str) -> bool:
    x, y = a.lower().strip(), b.lower().strip()
    return x in y or y in x


def _phrase(relation: str, value: str, contradiction: bool) -> str:
    """A value as the line shows it; a contradiction's with its relation ("not go to high school")."""
    if not contradiction or relation == "change":
        return value
    negated = value.startswith("not ")
    return ("not " if negated else "") + f"{relation} {value.removeprefix('not ')}"


def held_changes(evidence: tuple[Evidence, ...]) -> list[Changed]:
    """The changes both of whose turns the evidence holds, oldest newer turn first."""
    at = {(ev.conversation, ev.source_id): i for i, ev in enumerate(evidence)}
    out = []
    for i, ev in enumerate(evidence):
        for link in ev.supersedes:
            j = at.get((ev.conversation, link.source_id))
            if j is not None:
                out.append(Changed(j, i, link))
    return out


def _fits(part: Part, link: ChangeLink) -> bool:
    """Whether the values can answer the kind of question asked."""
    values = f"{link.older_value} {link.newer_value}"
    if part.kind == "how-many":
        return bool(_NUMBER.search(values))
    if part.kind == "when":
        return bool(_MONTH.search(values)) or link.relation == "change"
    if part.kind == "where":
        return link.relation in _PLACE_RELATIONS or link.newer_value[:1].isupper()
    return True


def _relevance(question: str, changed: Changed, evidence: tuple[Evidence, ...], read_at: int | None,
               read_span: str | None = None) -> int:
    """How surely the question is about a change (0: not): it names a word of its relation or values (2), names
    its subject (2; with "now", "these days"… that alone is enough), the reader read one of its values in one
    of its turns (2), a content word of the newer turn (1)."""
    link = changed.link
    asked = stems(question)
    subject = stems(link.subject) - _TRIVIAL
    named = bool(subject) and subject <= asked
    speakers = {s for ev in evidence if ev.speaker for s in stems(ev.speaker)}
    if subject and subject <= speakers and not named and asked & speakers:
        return 0  # about one person, asked about another
    verb = stems(link.relation) - _TRIVIAL
    if link.kind == "contradiction" or (link.relation not in _ASKED_FOR and link.relation != "change"
                                         and not asked & verb):
        # a contradiction answers a question about what it contradicts, its verb; so does a change of a relation
        # that is no family's ("clone the fork" is no answer to "What is the latest version of vexchords?")
        relation = verb
    else:
        relation = stems(f"{link.relation} {link.older_value} {link.newer_value}") - _TRIVIAL
    if not _asks_for(question, link):
        return 0
    # the reader read one of the values in one of its turns ("mid-April" in the plan the trip was moved from)
    read = read_at in (changed.older, changed.newer) and read_span is not None \
        and any(_same(read_span, value) for value in (link.older_value, link.newer_value))
    shared = asked & (stems(evidence[changed.newer].text) - subject - _TRIVIAL)
    if not (asked & relation or (read and link.kind != "contradiction") or (named and asks_now(question))):
        return 0
    return 2 * bool(asked & relation) + 2 * named + 2 * read + bool(shared)


# What a question about each family of relations (cues/changes.FAMILY) asks for: "Which city …", "What company …".
_ASKED_FOR = {
    "live in": {"live", "city", "town", "place", "where", "home", "move", "based", "stay", "country", "state"},
    "work at": {"work", "company", "employer", "job", "firm", "where", "employ", "office", "business"},
    "major in": {"major", "study", "degree", "subject", "field"},
    "be called": {"call", "name", "title", "named"},
}
_FOCUS = re.compile(r"^\s*(?:which|what)\s+(?:kind of\s+|type of\s+|sort of\s+)?(?P<noun>[a-z]+)\b", re.I)
_AUXILIARIES = {"is", "are", "was", "were", "do", "does", "did", "has", "have", "had", "will", "would", "can",
                "could", "should", "'s"}


def _asks_for(question: str, link: ChangeLink) -> bool:
    """Whether a question can be asking for the value of a family's relation: it says one of the family's
    words ("live", "city", "company"…), and the thing a which- or what-question names is one of them ("What
    position does Maya hold?" asks for no city)."""
    vocabulary = _ASKED_FOR.get(link.relation)
    if vocabulary is None:
        return True
    asked = stems(question)
    words = {stem(w) for w in vocabulary} | (stems(f"{link.older_value} {link.newer_value}") - _TRIVIAL)
    focus = _FOCUS.match(question)
    if focus and focus["noun"].lower() not in _AUXILIARIES and stem(focus["noun"]) not in words:
        return False
    return bool(asked & words)


_TRIVIAL = {"be", "not", "chang", "you", "user", "have", "do", "get", "go", "make"}


def _latest(part: Part, link: ChangeLink, newer: Evidence) -> str:
    """The latest value as the line gives it: for a when-question the most precise date the newer turn states
    within the new value ("May" → "10 to 20 May 2024"), else the value recorded."""
    if part.kind != "when":
        return link.newer_value
    said = said_on(newer.time)
    found = [w for sentence in sentences(newer.text) for w in dates(sentence, said, part.past)]
    month = _MONTH_NAME.search(link.newer_value)
    if month:
        found = [w for w in found if month[0].lower() in w.text.lower()]
    return max(found, key=lambda w: (w.precision, w.last - w.first)).text if found else link.newer_value


_MONTH_NAME = re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October|November"
                         r"|December)\b", re.I)


def change_line(context: Context, part: Part, read_at: int | None = None, read_span: str | None = None,
                sure: bool = False) -> tuple[str, list[int]] | None:
    """(the answer line, the evidence turns it was read in: newer, then older) for a question about a fact
    that changed, or None when the question is about no change the evidence holds. `read_at`, `read_span`:
    where the reader read its answer (answer/extractive.py) and what; a change holding that turn is one the
    question is about, and when the reader is `sure` of a span the newer turn gives that is not the change's
    value ("Ribeira" where the change is Lisbon → Porto), the question asks something else of that turn and
    the reader's line stands."""
    question = context.question
    if part.periods or _BEFORE.search(question) or _MANNER.match(question):
        return None
    past = part.past and not part.current and not asks_now(question)  # what happened then: the reader reads it
    ev = context.evidence
    scored = [(score, c) for c in held_changes(ev) if _fits(part, c.link)
              and (not past or c.link.kind == "contradiction")  # …but "Did he …?" over two answers says both
              and (score := _relevance(question, c, ev, read_at, read_span))]
    if not scored:
        return None
    _, best = max(scored, key=lambda sc: (sc[0], ev[sc[1].newer].time or "", ev[sc[1].newer].position))
    link, newer, older = best.link, ev[best.newer], ev[best.older]
    if sure and read_span is not None and read_at == best.newer and not _same(read_span, link.newer_value):
        return None
    contradiction = link.kind == "contradiction"
    now = _phrase(link.relation, _latest(part, link, newer), contradiction)
    was = _phrase(link.relation, link.older_value, contradiction)
    if contradiction:
        line = f"contradiction: {was} ({_said(older)}), then {now} ({_said(newer)})"
    else:
        line = f"{now} ({_said(newer)}; before: {was}, {_said(older)})"
    return line, [best.newer, best.older]
