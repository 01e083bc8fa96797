"""Statement cues: each sentence of a turn as a natural-language cue, beside the extracted triples.

The paper allows cues as "natural language statements or structured relational records". Triples
alone lose the context that made a fact findable ("His name, be, Biscuit" no longer says *beagle*):
measured here on LoCoMo, triples alone put all gold evidence in a 2,000-token context for 0.557 of
questions, sentence cues for 0.693. So every turn also gets one statement cue per sentence, prefixed
with its speaker; the triples keep the precise, atomic matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .records import Triple

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n+")
MIN_WORDS = 3  # "Nice." or "Oh no!" locate nothing
MAX_CHARS = 400  # the embedder reads 128 WordPiece tokens; longer sentences are cut into pieces


def sentences(text: str) -> list[str]:
    """Sentences of a turn, long ones cut at word boundaries so each fits the embedder."""
    out: list[str] = []
    for part in _SENTENCE_END.split(text):
        part = part.strip()
        while len(part) > MAX_CHARS:
            cut = part.rfind(" ", 0, MAX_CHARS)
            cut = cut if cut > 0 else MAX_CHARS
            out.append(part[:cut])
            part = part[cut:].strip()
        if part:
            out.append(part)
    return out


def pieces(text: str, limit: int) -> list[str]:
    """`text` as consecutive slices of at most `limit` characters that join back to it, each ending at a
    sentence end where one falls inside the limit, else at a space: how a turn too long to parse in one
    go (extract.PARSE_CHARS) is parsed, so that no part of it goes without cues."""
    out: list[str] = []
    start = 0
    while len(text) - start > limit:
        end = start + limit
        ends = [m.end() for m in _SENTENCE_END.finditer(text, start + 1, end)]
        cut = ends[-1] if ends else text.rfind(" ", start + 1, end) + 1
        cut = cut if cut > start else end
        out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return out


def statement_cues(speaker: str | None, text: str) -> list[Triple]:
    """One `statement` cue per sentence of at least MIN_WORDS words: (speaker, "said", sentence)."""
    who = speaker or "someone"
    return [Triple(who, "said", s, kind="statement") for s in sentences(text) if len(s.split()) >= MIN_WORDS]


def without_names(text: str, names: Iterable[str]) -> str:
    """`text` with each name (and its possessive) removed, whitespace tidied."""
    for name in names:
        if name:
            text = re.sub(rf"\b{re.escape(name)}(?:'s|’s)?\b", " ", text, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", text).strip(" ,")


def cue_text(cue: Triple, speaker: str | None) -> str:
    """What gets embedded for a cue: its text without the speaker's own name.

    Nearly every cue of a turn carries its speaker's name (first-person pronouns resolve to it), and a
    question naming a person then matches every short cue of that person before the one that answers
    it (measured: the "research adoption agencies" statement ranked 731st of 2,181 cues for "What did
    Caroline research?"). So names are left out of the vectors on both sides (see reconstruct.py),
    and who said what is scored separately.
    """
    text = cue.object if cue.kind == "statement" else cue.text()
    stripped = without_names(text, [speaker] if speaker else [])
    return stripped or text
