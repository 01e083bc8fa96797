"""Small rules about text that input checks and messages share."""

from __future__ import annotations

import unicodedata

# Characters that take no room on screen and are not whitespace to str.strip(): zero-width space, joiners,
# word joiner, byte order mark (all "Cf"), and the Hangul and Braille fillers that render as blanks.
_FILLERS = frozenset("\u115f\u1160\u2800\u3164\uffa0")


def is_blank(text: str) -> bool:
    """Whether a message's text shows nothing: only whitespace, control, format (U+200B, U+200C, U+200D,
    U+2060, U+FEFF …) or filler characters. Such a text is as empty as "" (ingest refuses it, converters
    skip it): it would be stored as a turn nobody can read, and match every question equally badly."""
    return all(ch.isspace() or ch in _FILLERS or unicodedata.category(ch) in ("Cc", "Cf", "Zs") for ch in text)


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """"1 turn", "2 turns", "0 turns"; `nouns` for an irregular plural ("1 batch", "3 batches")."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"
