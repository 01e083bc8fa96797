"""Who is who: the names people go by in a chat, learned from the chat itself.

Real people's chats rarely call someone by the label their messages carry: REALTALK's "Emi" is "Kate" in
one chat ("Haha, totally forgot to introduce myself, I'm Kate", then "Hey Kate!" forty times) and
"Bella" in another, and questions ask about Kate. A name is learned for a person from two things people
do: they introduce themselves ("I'm Kate", "my name is Emilia", "call me Liz"), and they address the
one they talk to ("Hey Kate!", "Thanks, Kate", "What about you Kate?"). In a chat of two people the one
addressed is the other one; a chat of more people learns names from introductions only.

A name is taken only where the chat uses it that way most of the time (`learn`): "Paris" at the end of
"…Rome, Paris!" once, among ten other mentions of Paris, names nobody. `spelled_like` matches a name a
question spells differently ("Elisa" for "Elise"), for names the chat never mentions at all.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence

from ..records import Turn

NAME = r"[A-Z][a-z]+(?:-[A-Z][a-z]+)?"  # one capitalised word: "Kate", "Mary-Ann"
_GREETING = (r"(?:hey|hi|hii+|hello|hiya|heya|yo|thanks|thank you|thx|ty|bye|goodbye|good ?night|good morning|"
             r"morning|night|congrats|congratulations|welcome|sorry|cheers|love you|miss you|dear|wow|omg|aw+|"
             r"oh|yes|yeah|ok|okay|haha|lol)")
# Where a word is how the writer addresses the one they talk to (`addressed`): after a greeting, thanks or
# an interjection ("Hey Kate!", "Thank you so much Kate", "Wow Kate,"), alone in the turn, or at the end of
# a sentence after a word in lower case (`_CLOSING`): "That's so kind, Kate!", "Those look amazing Kate!",
# "Do you enjoy smoothies Kate?", and with a full stop only in a sentence that speaks to "you". Not
# "Houston, Texas." (a capitalised word before it) nor "Have you been to Paris?" (`_ABOUT`).
_GREETED = re.compile(rf"(?i:\b{_GREETING}(?:\s+(?:there|so|very|much|again|too|a lot))*),?\s+(?-i:({NAME}))\b"
                      rf"(?!\s+(?:and|&)\b)(?![-'’])")
_ALONE = re.compile(rf"^\s*({NAME})\s*[!?.]*\s*$")
_CLOSING = re.compile(rf"([^.!?\n]*?)\b([A-Za-z']+)\s*(,?)\s+({NAME})\s*([!?.]+|$)")
_YOU = re.compile(r"\b(?:you|your|u)\b", re.IGNORECASE)
# Words after which a name is what the sentence is about, not who it speaks to.
_ABOUT = frozenset(
    "to in at from of for with about near by on into like love miss visit visited visiting see saw seen meet met "
    "know knew call ask asked tell told text texted remember invite invited and or than as is was are were be been "
    "called named".split()
)
# How a writer names themselves: "my name is Kate", "call me Kate", "I'm Kate." (then a sentence's end: not
# "I'm Italian, so…").
_INTRODUCED = [
    re.compile(rf"\b(?i:my name is|my name's|call me)\s+({NAME})\b"),
    re.compile(rf"\b(?i:i'm|i’m|i am|im|it's|it’s)\s+({NAME})\s*(?:[!.]|$)"),
]
_NOT_NAMES = frozenset(
    "I Im Ive Id Ill Oh Ok Okay Yes Yeah Yep No Nope Nah Wow Haha Lol Omg Aw Aww Hey Hi Hello Thanks Thank Sorry "
    "Good Great Nice Cool Sure Well So And But Or Also Just Really Absolutely Definitely Totally Exactly Same Me You "
    "Guys Girl Girls Man Dude Bro Sis Babe Baby Honey Sweetie Love Dear Friend Buddy Everyone All There Here Today "
    "Tomorrow Tonight Yesterday Morning Night Monday Tuesday Wednesday Thursday Friday Saturday Sunday January "
    "February March April May June July August September October November December Christmas God Lord Certainly "
    "Plus Anyway Anyways Honestly Indeed Btw Alright Welcome Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec Mon "
    "Tue Tues Wed Thu Thurs Fri Sat Sun What When Where Which Who Whom Whose Why How Did Does Do Is Are Was Were Has "
    "Have Had Can Could Would Should Will Shall Might May In On At For From Of The A An If Since After Before During "
    "Between Besides Both Name List Tell Give Describe Explain Please".split()
)


def not_a_name(word: str) -> bool:
    """A capitalised word that names nobody: a question word, a month, an interjection…"""
    return word in _NOT_NAMES


_SENTENCE_BREAK = re.compile(r"[.!?\n]")  # what _CLOSING's `before` cannot cross


def _closings(text: str) -> Iterator[re.Match[str]]:
    """The matches of _CLOSING in `text`, as its finditer gives them, in linear time. finditer tries a match
    at every position, and each try that fails reads on to the end of its sentence: quadratic in a long
    sentence (a real ChatGPT answer of 13,000 characters took 1.8 s, the 500-chat export's turns 160 s). A
    try can only succeed where one from earlier in the same sentence did not, so trying where the search
    resumes and right after each sentence break finds the same matches."""
    at = 0
    while at < len(text):
        match = _CLOSING.match(text, at)
        if match is not None:
            yield match
            at = match.end()
            continue
        found = _SENTENCE_BREAK.search(text, at)
        if found is None:
            return
        at = found.end()


def addressed(text: str, closing: bool = False) -> list[str]:
    """The names `text` addresses its reader by, each once: after a greeting or alone (_GREETED, _ALONE), and
    with `closing` at the end of a sentence too (_CLOSING), a weaker sign ("What made you learn Spanish?")."""
    return _names(_greeted(text) + (_closing(text) if closing else []))


def _greeted(text: str) -> list[str]:
    """Every name _GREETED finds, then the one _ALONE finds (its `^` matches only at the start: one try)."""
    alone = _ALONE.match(text)
    return [m.group(1) for m in _GREETED.finditer(text)] + ([alone.group(1)] if alone else [])


def _closing(text: str) -> list[str]:
    """Every name _CLOSING finds where it addresses the reader (see `addressed`)."""
    found = []
    for m in _closings(text):
        before, word, comma, name, end = m.groups()
        if word[0].isupper() or word.lower() in _ABOUT:
            continue
        if comma or "!" in end or "?" in end or _YOU.search(f"{before} {word}"):
            found.append(name)
    return found


def _names(found: list[str]) -> list[str]:
    return [name for name in dict.fromkeys(found) if name not in _NOT_NAMES]


def introduced(text: str) -> list[str]:
    """The names the writer of `text` gives as their own (see _INTRODUCED), each once."""
    return _names([m.group(1) for pattern in _INTRODUCED for m in pattern.finditer(text)])


# How a turn names someone (`signs`)
INTRODUCED = 1  # its writer's own name
GREETED = 2  # the one it greets or says alone (`addressed`)
CLOSING = 3  # the one it addresses only at the end of a sentence (`addressed` with `closing` alone)


def signs(text: str) -> list[tuple[str, int]]:
    """(name, how) for each way `text` names someone, a name once per way: all `learn` reads of a turn
    besides who wrote it, so that ingest keeps them per turn and a chat's names are learned again from
    them (ingest/names.py) without reading its turns."""
    greeted = _greeted(text)
    plain = _names(greeted)
    return [*((name, INTRODUCED) for name in introduced(text)), *((name, GREETED) for name in plain),
            *((name, CLOSING) for name in _names(greeted + _closing(text)) if name not in plain)]


def learn(turns: Sequence[Turn], people: dict[str, frozenset[str]], wanted: Iterable[str] | None = None
          ) -> dict[tuple[str, str], str]:
    """(conversation, name) → the speaker that name means there, learned from `turns` (each conversation's
    people in `people`): `learned_from` their `signs`, counting the turns that mention a name among them."""
    texts: dict[str, list[str]] = {}
    for turn in turns:
        texts.setdefault(turn.conversation, []).append(turn.text)
    found = [(turn.conversation, turn.id, turn.speaker or turn.role, name, how)
             for turn in turns for name, how in signs(turn.text)]
    return learned_from(found, people, lambda conversation, name: mentions(texts.get(conversation, ()), name),
                        wanted)


def mentions(texts: Iterable[str], name: str) -> int:
    """How many of `texts` mention `name` (as a word, in its case)."""
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    return sum(1 for text in texts if pattern.search(text))


Sign = tuple[str, int, "str | None", str, int]  # (conversation, turn id, its writer, name, how: INTRODUCED…)


def learned_from(found: Iterable[Sign], people: dict[str, frozenset[str]],
                 mentioned: Callable[[str, str], int], wanted: Iterable[str] | None = None
                 ) -> dict[tuple[str, str], str]:
    """(conversation, name) → the speaker that name means there, from the `signs` of a conversation's turns
    (each conversation's people in `people`; `mentioned(conversation, name)`: how many of its turns mention
    the name). A name counts for a speaker when someone greets them by it (in a chat of two: the one who
    did not write the turn) or they introduce themselves by it (twice the weight); it is learned when it
    counts at least twice, for one speaker more than for any other, and when at least half of the turns
    that mention it address someone by it (at the end of a sentence too) or introduce someone. A person's
    own label is never learned as a name of someone else. `wanted`: only these names (a question's), else
    every name found. A turn without a writer counts for nothing."""
    only = set(wanted) if wanted is not None else None
    votes: dict[tuple[str, str], Counter[str]] = {}
    using: dict[tuple[str, str], set[int]] = {}  # turns that address someone by the name or introduce by it
    for conversation, turn, writer, name, how in found:
        if writer is None:
            continue
        using.setdefault((conversation, name), set()).add(turn)
        members = people.get(conversation, frozenset())
        if (only is not None and name not in only) or name in members:
            continue
        others = members - {writer}
        who = writer if how == INTRODUCED else next(iter(others)) if how == GREETED and len(others) == 1 else None
        if who is not None:
            votes.setdefault((conversation, name), Counter())[who] += 2 if how == INTRODUCED else 1
    learned: dict[tuple[str, str], str] = {}
    for key, counts in votes.items():
        (who, best), (_, second) = [*counts.most_common(2), ("", 0)][:2]
        if best >= 2 and best > second and len(using[key]) * 2 >= mentioned(*key):
            learned[key] = who
    return learned


def spelled_like(name: str, known: Iterable[str]) -> str | None:
    """The one name of `known` that `name` is a spelling of ("Elisa", "Eliza" → "Elise"): the same first
    two letters and at most one letter changed, added or dropped (two for names of five letters or more);
    None when no name or several are that close."""
    close = {other for other in known
             if other[:2].lower() == name[:2].lower() and other.lower() != name.lower()
             and _distance(name.lower(), other.lower()) <= (2 if min(len(name), len(other)) >= 5 else 1)}
    return next(iter(close)) if len(close) == 1 else None


def _distance(a: str, b: str) -> int:
    """Levenshtein distance: letters changed, added or dropped."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]
