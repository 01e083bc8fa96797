"""Small rules about text that input checks, messages, cues, recall and answers share: what is blank, how a
turn splits into sentences, a text without the names in it."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

# Characters that take no room on screen and are not whitespace to str.strip(): zero-width space, joiners,
# word joiner, byte order mark (all "Cf"), and the Hangul and Braille fillers that render as blanks.
_FILLERS = frozenset("\u115f\u1160\u2800\u3164\uffa0")
# Where a sentence ends: after . ! ? (and a closing quote or bracket) before a capital or digit, after a
# Chinese or Japanese full stop, or at a line break. Statement cues, the excerpt and the offline answer split
# turns alike by it, and `cuemem_cli.cues.statements.pieces` cuts a turn too long to parse at it.
SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|(?<=[。！？])\s*|\n+")
MAX_CHARS = 400  # the embedder reads 128 WordPiece tokens; longer sentences are cut into pieces


def is_blank(text: str) -> bool:
    """Whether a message's text shows nothing: only whitespace, control, format (U+200B, U+200C, U+200D,
    U+2060, U+FEFF …) or filler characters. Such a text is as empty as "" (ingest refuses it, converters
    skip it): it would be stored as a turn nobody can read, and match every question equally badly."""
    return all(ch.isspace() or ch in _FILLERS or unicodedata.category(ch) in ("Cc", "Cf", "Zs") for ch in text)


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """"1 turn", "2 turns", "0 turns"; `nouns` for an irregular plural ("1 batch", "3 batches")."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


def sentences(text: str) -> list[str]:
    """Sentences of a turn, long ones cut at word boundaries so each fits the embedder."""
    return [text[start:end] for start, end in sentence_spans(text)]


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) in `text` of each sentence of `text[start:end]`, stripped, long ones cut at word
    boundaries into pieces of at most MAX_CHARS: what `sentences` and the statement cues
    (`cuemem_cli.cues.statements.statement_cues`) read."""
    end = len(text) if end is None else end
    out: list[tuple[int, int]] = []
    bounds = [start, *(i for m in SENTENCE_END.finditer(text, start, end) for i in (m.start(), m.end())), end]
    for a, b in zip(bounds[::2], bounds[1::2], strict=True):
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        while b - a > MAX_CHARS:
            cut = text.rfind(" ", a, a + MAX_CHARS)
            cut = cut if cut > a else a + MAX_CHARS
            out.append((a, cut))
            a = cut
            while a < b and text[a].isspace():
                a += 1
        if a < b:
            out.append((a, b))
    return out


def without_names(text: str, names: Iterable[str]) -> str:
    """`text` with each name (and its possessive) removed, whitespace tidied."""
    for name in names:
        if name:
            text = re.sub(rf"\b{re.escape(name)}(?:'s|’s)?\b", " ", text, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", text).strip(" ,")
