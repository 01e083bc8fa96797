"""Kinds of things: which kinds a turn names ("a fun game of basketball" → sport, game; "back from Chicago" →
city), and which kind a question asks for ("What sports did Kevin do?" → sport; "What are Emi's hobbies?" →
the pastimes: sport, game, art, …).

Most questions that gather facts ask for a kind, and the turns that answer name an instance of it: MiniLM puts
"What sports does Kevin play?" nearer turns that say "sports" than "getting ready for a fun game of
basketball". The kinds come from a lexicon shipped in the package (data/kinds.txt, built by
scripts/build_kinds.py from WordNet 3.0 and a few hand-kept lists; nothing is fetched at run time), read over
the turn's words: no parser, so tagging costs a fraction of a millisecond a turn and works whatever the
extractor. A quoted title ("I loved reading \"Charlotte's Web\"") is a `title`, which questions about books,
films, shows, songs and games ask for too. Speakers' names are never tagged ("Jordan" is a country too).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources

TITLE = "title"
MAX_WORDS = 3  # the longest lexicon entry, in words ("New York City")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-'’][A-Za-z0-9]+)*")
_QUOTED = re.compile(r"""(?:^|(?<=[\s(\[]))["“‘']([A-Z0-9][^"”’\n]{0,80}?)["”’'](?=[\s.,!?;:)\]]|$)""")
_SEEN = 200_000
_PLURALS = (("ies", "y"), ("ches", "ch"), ("shes", "sh"), ("sses", "ss"), ("xes", "x"), ("men", "man"), ("s", ""))


@dataclass(frozen=True)
class Mention:
    """Words of a text that name a thing of some kinds: "basketball" at [23, 33) → sport, game."""

    text: str
    start: int
    end: int
    kinds: frozenset[str]


def _asks(text: str) -> dict[str, tuple[str, ...]]:
    """The "ask" lines of data/kinds.txt (they come first): a question's word → the kinds it asks for."""
    head = text[:text.find("\ntag\t")] if "\ntag\t" in text else text
    return {word: tuple(kinds.split(",")) for _, word, kinds in
            (line.split("\t") for line in head.splitlines() if line.startswith("ask\t"))}


class Lexicon:
    """data/kinds.txt read: the words that name an instance of each kind (`exact` as written for words with a
    capital letter, `lower` in any case), and a question's words with the kinds they ask for (`asks`)."""

    def __init__(self, text: str):
        self.version = hashlib.sha256(text.encode()).hexdigest()[:12]  # what a memory's tags were built with
        self.asks = _asks(text)
        self.exact: dict[str, frozenset[str]] = {}
        self.lower: dict[str, frozenset[str]] = {}
        for line in text.splitlines():
            if line.startswith("tag\t"):
                _, kinds, words = line.split("\t")
                found = frozenset(kinds.split(","))
                for word in words.split("|"):
                    (self.lower if word.islower() else self.exact)[word] = found
        self.kinds = frozenset({*(k for ks in self.lower.values() for k in ks),
                                *(k for ks in self.exact.values() for k in ks), TITLE})
        # the first word of each entry of several words: a text's other words start none
        self._starts = frozenset(w.split(" ", 1)[0].lower() for w in (*self.lower, *self.exact) if " " in w)
        self._seen: dict[str, frozenset[str] | None] = {}  # a word's lookup, kept: chat words repeat

    def word(self, token: str) -> frozenset[str] | None:
        """`lookup` of one word, remembered (at most _SEEN words)."""
        if token not in self._seen:
            if len(self._seen) >= _SEEN:
                self._seen.clear()
            self._seen[token] = self.lookup(token)
        return self._seen[token]

    def lookup(self, words: str) -> frozenset[str] | None:
        """The kinds `words` name, as written or (for a lower-case entry) in any case, or as a plural."""
        if words in self.exact:
            return self.exact[words]
        low = words.lower()
        if low in self.lower:
            return self.lower[low]
        for suffix, singular in _PLURALS if low[-1:] in "sn" else ():
            if low.endswith(suffix) and len(low) > len(suffix) + 2:
                found = self.lower.get(low[:-len(suffix)] + singular)
                if found is not None:
                    return found
        return None


@functools.lru_cache(maxsize=1)
def _text() -> str:
    return resources.files("cuemem_cli").joinpath("data", "kinds.txt").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The shipped lexicon, read once per process (about 0.3 MB, a quarter of a second): to tag turns."""
    return Lexicon(_text())


@functools.lru_cache(maxsize=1)
def question_words() -> dict[str, tuple[str, ...]]:
    """The lexicon's question words alone, read in a millisecond: all a question needs of it."""
    return _asks(_text())


def mentions(text: str, names: Iterable[str] = ()) -> list[Mention]:
    """What `text` names that the lexicon knows, longest first at each place ("ice cream" over "ice"), and its
    quoted titles; never one of `names` (the chat's speakers)."""
    lex = lexicon()
    skip = {name for name in names if name}
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    found: list[Mention] = []
    i = 0
    while i < len(words):
        start, end = words[i]
        token = text[start:end]
        step = 1
        if token not in skip:
            longest = MAX_WORDS if token.lower() in lex._starts else 1
            for n in range(min(longest, len(words) - i), 0, -1):
                last = words[i + n - 1][1]
                if text[last - 2:last] in ("'s", "’s"):  # "Kenya's": the name is Kenya
                    last -= 2
                if n == 1:
                    phrase = text[start:last]
                    kinds = lex.word(phrase)
                else:
                    phrase = " ".join([*(text[a:b] for a, b in words[i:i + n - 1]), text[words[i + n - 1][0]:last]])
                    kinds = lex.lookup(phrase)
                if kinds is None and "-" in phrase:
                    kinds = lex.lookup(phrase.replace("-", " "))
                if kinds and phrase[0].isupper() and _part_of_a_name(text, words, i + n):
                    kinds = None  # "Washington Park", "Columbia Boulevard": a longer name, not Washington
                if kinds:
                    found.append(Mention(text[start:last], start, last, kinds))
                    step = n
                    break
        i += step
    for match in _QUOTED.finditer(text):
        if 1 <= len(match[1].split()) <= 10:
            found.append(Mention(match[1], match.start(1), match.end(1), frozenset({TITLE})))
    return sorted(found, key=lambda m: m.start)


def _part_of_a_name(text: str, words: list[tuple[int, int]], after: int) -> bool:
    """Whether the word after a capitalised match (index `after` of `words`) continues a longer name: it is
    capitalised and follows the match across one space, with no sentence end between."""
    if after >= len(words):
        return False
    start = words[after][0]
    return text[start].isupper() and text[words[after - 1][1]:start] == " "


def kinds_of(text: str, names: Iterable[str] = ()) -> frozenset[str]:
    """Every kind `text` names a thing of."""
    return frozenset(kind for mention in mentions(text, names) for kind in mention.kinds)


_AUX = frozenset("do does did is are was were has have had can could will would should may might".split())
_COPULA = frozenset("is are was were".split())
_SORTS = frozenset("kind kinds type types sort sorts genre genres style styles".split())
_BEFORE_NOUN = frozenset("the a an some any my his her their our your favorite favourite best main usual kind kinds "
                         "type types sort sorts of".split())
_QUESTION_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")


def question_kinds(question: str) -> tuple[str, ...]:
    """The kinds a question asks for, from the noun its question word asks about: "What sports …", "Which
    cities …", "What kind of car …", "In what countries …", "What are Emi's hobbies?", "names of Audrey's
    dogs", "How many books …"; () when it asks for no kind."""
    return asked_kind(question).kinds


@dataclass(frozen=True)
class AskedKind:
    """What a question asks for, if a kind: its kinds, the word that says so, and whether it is plural
    ("What sports …": several things gathered; "Which city …": one)."""

    kinds: tuple[str, ...] = ()
    word: str = ""
    plural: bool = False
    sort: bool = False  # "What kind of books …", "What type of movies …": a sort of it, not a thing of it


def asked_kind(question: str) -> AskedKind:
    """`question_kinds`, with the word that asks and its number."""
    asks = question_words()
    tokens = [t.lower().replace("’", "'") for t in _QUESTION_WORD.findall(question)]
    owner = [t.endswith("'s") or t.endswith("s'") for t in tokens]
    tokens = [t[:-2] if own else t for t, own in zip(tokens, owner, strict=True)]

    def asked(i: int) -> AskedKind | None:
        for n in (2, 1):
            words = " ".join(tokens[i:i + n])
            for form in (words, *(words[:-len(s)] + r for s, r in _PLURALS
                                  if words.endswith(s) and len(words) > len(s) + 2)):
                if form in asks:
                    sort = i >= 2 and tokens[i - 1] == "of" and tokens[i - 2] in _SORTS
                    return AskedKind(asks[form], words, form != words, sort)
        return None

    starts = [i + 1 for i, t in enumerate(tokens) if t in ("what", "which")]
    starts += [i + 2 for i, t in enumerate(tokens[:-1]) if t == "names" and tokens[i + 1] == "of"]
    starts += [i + 1 for i, t in enumerate(tokens[1:], 1) if t == "many" and tokens[i - 1] == "how"]
    for at in sorted(starts):
        if at < len(tokens) and tokens[at] in _COPULA:  # "What are Kate's hobbies?": the noun after whose
            at += 1
            while at < len(tokens) and (tokens[at] in _BEFORE_NOUN or owner[at]):
                at += 1
            if at < len(tokens) and (found := asked(at)):
                return found
            continue
        for i in range(at, min(at + 4, len(tokens))):  # "Which US cities …", "What famous places …"
            if tokens[i] in _AUX:
                break
            if found := asked(i):
                return found
    return AskedKind()
