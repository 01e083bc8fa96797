"""Statement cues: each sentence of a turn as a natural-language cue, beside the extracted triples.

The paper allows cues as "natural language statements or structured relational records". Triples
alone lose the context that made a fact findable ("His name, be, Biscuit" no longer says *beagle*):
measured on LoCoMo, sentence cues put all gold evidence in a 2,000-token context for far more questions
than triples alone (bench/design-notes.md, "Measured choices elsewhere in the code"). So every turn also
gets one statement cue per sentence, prefixed with its speaker; the triples keep the precise, atomic
matches.
"""

from __future__ import annotations

import re

from ..records import Triple
from ..text import SENTENCE_END, sentence_spans, without_names

MIN_WORDS = 3  # "Nice." or "Oh no!" locate nothing
MIN_CJK = 6  # the same for Chinese or Japanese, written without spaces: characters, not words
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# What is not prose: a fenced code block (an unclosed fence runs to the end of the turn) and a run of
# markdown table rows. Kept whole in the turn and its full-text index, but no cue is made from it (see
# `prose_spans`).
_NOT_PROSE = re.compile(r"^[ \t]*(```|~~~).*?(?:^[ \t]*\1[^\n]*$|\Z)|(?:^[ \t]*\|.*\|[ \t]*$\n?)+",
                        re.S | re.M)
# A turn that only asks for more ("Continue", "continue writing please", "go on"): nothing in it to find.
_PADDING = re.compile(
    r"(?:please\s+)?(?:continue|go on|keep going|more|next|finish|elaborate|expand)"
    r"(?:\s+(?:please|writing|generating|it|the (?:story|code|text|list|answer)|your (?:answer|last response)"
    r"|from where you (?:left off|stopped)|from the last line))*(?:\s+please)?",
    re.I)


def prose_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of the parts of `text` that are prose: all of it but fenced code blocks and markdown
    tables. Code parsed as English gives junk cues (`const`, `= event`, (`div class="lyrics`, rush in,
    `<`)): a good part of the cues of real ChatGPT chats, at the cost of parsing, embedding and storing
    them (bench/RESULTS.md, "A real chat history"). The code stays in the turn, its vector and the full-text
    index, so a search for an identifier still finds it."""
    out, at = [], 0
    for match in _NOT_PROSE.finditer(text):
        if match.start() > at:
            out.append((at, match.start()))
        at = match.end()
    if at < len(text):
        out.append((at, len(text)))
    return out


def is_padding(text: str) -> bool:
    """A turn that only asks for more ("Continue", "continue writing please", "go on", "more"): it gets
    no cues (there is nothing in it to find), though it stays in the conversation."""
    return len(text) < 80 and _PADDING.fullmatch(re.sub(r"[^\w\s]", " ", text).strip()) is not None


def reads_as_latin(text: str) -> bool:
    """Whether most letters of `text` are Latin (English, Spanish, Vietnamese…), or it has none: what the
    English parser can read at all. Chinese, Korean, Russian… get statement cues only."""
    letters = [c for c in text if c.isalpha()]
    return not letters or sum(c < "\u0250" for c in letters) * 2 >= len(letters)


def long_enough(sentence: str) -> bool:
    """A sentence that can locate something: MIN_WORDS words, or MIN_CJK Chinese or Japanese characters."""
    return len(sentence.split()) >= MIN_WORDS or len(_CJK.findall(sentence)) >= MIN_CJK


def pieces(text: str, limit: int, at: int = 0) -> list[tuple[int, str]]:
    """`text` as consecutive slices of at most `limit` characters that join back to it, each ending at a
    sentence end where one falls inside the limit, else at a space: how a turn too long to parse in one
    go (`cuemem_cli.cues.rules.PARSE_CHARS`) is parsed, so that no part of it goes without cues. Each slice
    comes with where it starts, counted from `at` (where `text` starts in its turn)."""
    out: list[tuple[int, str]] = []
    start = 0
    while len(text) - start > limit:
        end = start + limit
        ends = [m.end() for m in SENTENCE_END.finditer(text, start + 1, end)]
        cut = ends[-1] if ends else text.rfind(" ", start + 1, end) + 1
        cut = cut if cut > start else end
        out.append((at + start, text[start:cut]))
        start = cut
    out.append((at + start, text[start:]))
    return out


def statement_cues(speaker: str | None, text: str) -> list[Triple]:
    """One `statement` cue per sentence of the turn's prose that can locate something (`long_enough`):
    (speaker, "said", sentence)."""
    who = speaker or "someone"
    return [Triple(who, "said", text[a:b], kind="statement")
            for start, end in prose_spans(text) for a, b in sentence_spans(text, start, end)
            if long_enough(text[a:b])]


def cue_text(cue: Triple, speaker: str | None) -> str:
    """What gets embedded for a cue: its text without the speaker's own name.

    Nearly every cue of a turn carries its speaker's name (first-person pronouns resolve to it), and a
    question naming a person then matches every short cue of that person before the one that answers
    it (the "research adoption agencies" statement ranked far down a conversation's cues for "What did
    Caroline research?": bench/design-notes.md, "Measured choices elsewhere in the code"). So names are
    left out of the vectors on both sides (see recall/reconstruct.py), and who said what is scored separately.
    """
    text = cue.object if cue.kind == "statement" else cue.text()
    stripped = without_names(text, [speaker] if speaker else [])
    return stripped or text
