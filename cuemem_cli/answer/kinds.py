"""The kind a question asks for, in the answer line: "What sports did Kevin play?" is answered by the sports
the evidence names, each with who said it and when ("Kevin: basketball (3 January 2024), volleyball (9
January 2024)"), and "Which city did Maya move to?" by a city, not by another thing the sentence names.

The kinds are cues/kinds.py's: the question's (`asked_kind`) and those of the things each evidence sentence
names (`mentions`, read here: the evidence is a few dozen turns).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..cues.kinds import mentions
from ..records import Evidence
from ..timeparse import day_of
from .quotes import LINE_CHARS
from .spans import stem

LIST_SENTENCES = 30  # the best answering sentences whose instances are listed


@dataclass(frozen=True)
class Instance:
    """A thing of the kind asked, as a sentence of the evidence names it."""

    text: str
    index: int  # of the evidence turn
    sentence: str


def instances(evidence: Sequence[Evidence], ranked: Sequence[tuple[float, str, int]], kinds: Sequence[str],
              asked: set[str], who: str | None = None, limit: int = LIST_SENTENCES) -> list[Instance]:
    """The things of `kinds` the `limit` best sentences name (`ranked`: best first), each once (the best
    sentence's), said by `who` (None: anyone), not one the question says itself (stems `asked`)."""
    wanted = set(kinds)
    names = {ev.speaker for ev in evidence if ev.speaker}
    found: dict[str, Instance] = {}
    for _, sentence, i in ranked[:limit]:
        if who is not None and evidence[i].speaker != who:
            continue
        for mention in mentions(sentence, names):
            key = mention.text.lower()
            if mention.kinds & wanted and key not in found and not {stem(w) for w in key.split()} <= asked:
                found[key] = Instance(mention.text, i, sentence)
    return list(found.values())


def listed(found: Sequence[Instance], evidence: Sequence[Evidence]) -> str:
    """The instances as one answer line, each with the day it was said, the speaker before the first of theirs
    ("Kevin: basketball (3 January 2024), football (5 January 2024); Paola: tennis (…)"), within LINE_CHARS."""
    line, speaker = "", None
    for item in found:
        ev = evidence[item.index]
        who = ev.speaker or ev.role or "unknown"
        part = f"{item.text} ({day_of(ev.time)})"
        part = (f"; {who}: " if line else f"{who}: ") + part if who != speaker else ", " + part
        if len(line) + len(part) > LINE_CHARS:
            break
        line, speaker = line + part, who
    return line
