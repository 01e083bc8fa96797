"""A turn as one line of the evidence block: `speaker: text` with its relative dates resolved, and what
that line costs (ceil(characters / 4), the unit of every budget)."""

from __future__ import annotations

import math
from functools import lru_cache

from ..records import Turn
from ..cues.relative_dates import dated
from ..timeparse import said_on


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def evidence_line(speaker: str | None, text: str) -> str:
    """How a turn is shown to the answer model, and what the budget counts: `speaker: text`.

    Its day is on a header line above it (`header_line`), once per run of turns said the same day in the
    same conversation: questions ask on which day, and a date repeated on every line costs tokens that
    buy more evidence (bench/RESULTS.md, "Quality: LoCoMo evidence in a 2,000-token context", its table
    "How the method got here").
    Its turn id is not shown: the model is not asked to cite, and an id tells it nothing but where the
    turn sits, which a "…" line between turns not said one after the other tells for one token per gap
    (`dialogue_lines`). Ids cost tokens on every line ("[D14:23] ", "[h:3f9a0c2e71b4d586] "): without
    them more LoCoMo questions have all their evidence at 2,000 tokens (bench/quality_notes.md, "Evidence
    lines without turn ids"). People see the ids in `ask`'s evidence table.
    """
    return f"{speaker or 'unknown'}: {text}"


def shown_text(text: str, time: str | None) -> str:
    """A turn's text as the answer prompt shows it: each relative date ("yesterday", "last week", "next
    month") followed by the day it means, resolved against the day the turn was said, by the rules the
    date cues and the offline answer use (`cuemem_cli.cues.relative_dates.dated`): "yesterday [7 May 2023]".
    The local-model run missed temporal questions over an unresolved "yesterday" (issue 34); the budget pays
    for the notes."""
    return dated(text, said_on(time), brief=True)


def turn_cost(turn: Turn) -> int:
    return line_cost(turn.speaker or turn.role, turn.text, turn.time)


def line_cost(speaker: str | None, text: str, time: str | None) -> int:
    return shown_cost(speaker, text, time)[0]


@lru_cache(maxsize=65536)
def shown_cost(speaker: str | None, text: str, time: str | None) -> tuple[int, bool]:
    """A line's cost, and whether the prompt shows its text with resolved dates added (shown_text). Every
    question re-ranks the same turns of a memory: both are worth keeping."""
    shown = shown_text(text, time)
    return estimate_tokens(evidence_line(speaker, shown)), shown != text
