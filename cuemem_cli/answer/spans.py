"""What span of a sentence answers each kind of question part (`cuemem_cli.answer.question_parts.Part`).

A sentence answers a part only when it holds a span of that kind that the question does not already
say: "I adopted a dog last weekend!" holds no breed, so it cannot answer "What breed is the dog Maya
adopted?" however close its words are. Places and names are read with regular expressions (a
capitalised name after in/at/to/from/into/on/along is a place; a name another sentence of the
evidence puts after such a word is a place wherever it stands, as "Portland" in "I'd miss Portland");
noun phrases for what-questions come from the extractor's spaCy parser (`cuemem_cli.cues.parser`), loaded
only when such a question is answered offline. The dates a sentence states are
`cuemem_cli.answer.stated_dates`'s; which of them answers the question is chosen here (`best_date`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from datetime import date
from typing import Any

import numpy as np

from ..cues.parser import english_parser
from ..recall.question import fts_query
from ..timeparse import MONTH_NAMES
from .question_parts import Focus
from .stated_dates import When

_STEM = 5


@functools.lru_cache(maxsize=1 << 16)  # every sentence of every answer's evidence is read for its stems
def stem(word: str) -> str:
    """A crude stem, enough to tell that two words are one: lower-cased, a plural or verb ending and a
    final e dropped, cut to five letters ("moving" and "move" → "mov", "paints" and "painting" → "paint")."""
    word = word.lower()
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            word = word[:-len(suffix)]
            break
    return word.removesuffix("e")[:_STEM] if len(word) > 3 else word


def stems(text: str) -> set[str]:
    """The stems of the words of `text`, for "does the question say this?"."""
    return {stem(w) for w in re.findall(r"[A-Za-z0-9]{2,}", re.sub(r"['’]s\b", "", text))}


def content_stems(question: str) -> set[str]:
    """The stems of a question's content words, as the lexical search reads them (no question word,
    auxiliary, pronoun or preposition): "in" before a place says nothing about the question."""
    return stems(fts_query(question).replace('"', " ").replace(" OR ", " "))


# ------------------------------------------------------------------------------------------ dates
_NEGATED = re.compile(r"\b(?:not|instead\s+of|rather\s+than|no\s+longer)\s+(?:on\s+|in\s+|the\s+)?$", re.I)
_CHANGED = re.compile(r"\b(?:now|instead|moved\s+(?:it\s+)?to|changed\s+(?:it\s+)?to|new\s+date)\b", re.I)


def best_date(found: list[When], sentence: str, asked: set[str], question: str,
              plan_from: date | None = None) -> When | None:
    """The date of `sentence` that answers a question whose content words have the stems `asked`: not
    one the question names itself ("tickets for May") or one denied ("on April 10th, not March 10th"),
    nor, for a plan (`plan_from`, the day it was said), one already past; first one after "now" or
    "instead" (a plan that changed in one breath), then one after a word of the question ("moving on
    August 19th and starting on the 28th" answers "when did she move?"), then the most precise, then
    one written out over a relative one ("last Saturday, the 6th"), then the first."""
    q = question.lower()
    kept = [w for w in found if sentence[w.at:w.end].lower() not in q
            and not _NEGATED.search(sentence[max(0, w.at - 24):w.at])
            and (plan_from is None or w.last >= plan_from)]

    def rank(w: When) -> tuple[bool, bool, int, bool, int]:
        before = sentence[max(0, w.at - 40):w.at]
        return (bool(_CHANGED.search(before)), bool(stems(" ".join(before.split()[-5:])) & asked), w.precision,
                w.written, -w.at)

    return max(kept, key=rank) if kept else None


# ------------------------------------------------------------------------------------------ places
_LOCATIVE = r"(?i:in|at|to|from|into|on|along|inside|outside|across)"
_PARTICLE = r"(?:de|van|von|der|den|da|di|du|la|le|del|della|dos|das|ten|ter|bin|al|el|of|the|and|&)"
_CAP = r"[A-Z][\w'’.-]*[\w]"
NAME = rf"{_CAP}(?:\s+(?:{_PARTICLE}\s+)*{_CAP})*"
_PLACE = re.compile(rf"\b{_LOCATIVE}\s+(?:the\s+)?({NAME})")
_CONTRAST = re.compile(r"(?:\b(?:after|instead\s+of|than|rather\s+than|other\s+than|not|except|besides|leaving|left)"
                       r"\s+(?:the\s+)?)$", re.I)
_NOT_NAMES = {*(m.lower() for m in MONTH_NAMES), "monday", "tuesday", "wednesday", "thursday", "friday",
              "saturday", "sunday", "christmas", "easter", "halloween", "thanksgiving", "i", "i'm", "i've",
              "i'd", "i'll", "ok", "okay", "yes", "no", "oh", "hey", "hi", "thanks", "congrats",
              "congratulations", "wow", "ha", "haha", "lol", "omg", "btw", "plus", "also", "so"}


def _clean(name: str) -> str:
    """A name without the trailing particles and punctuation a greedy match took ("Denver and" → "Denver")."""
    words = name.rstrip(".,;:!?’'").split()
    while words and re.fullmatch(_PARTICLE, words[-1]):
        words.pop()
    return " ".join(words)


def _is_name(name: str) -> bool:
    return bool(name) and name.split()[0].lower().rstrip(".") not in _NOT_NAMES


def known_places(texts: Iterable[str], speakers: frozenset[str] = frozenset()) -> frozenset[str]:
    """Names the evidence puts after a locative word somewhere: places wherever else they stand."""
    found = set()
    for text in texts:
        for match in _PLACE.finditer(text):
            name = _clean(match[1])
            if _is_name(name) and name not in speakers:
                found.add(name)
    return frozenset(found)


def places(sentence: str, known: frozenset[str] = frozenset(), speakers: frozenset[str] = frozenset(),
           asked: set[str] | None = None) -> list[tuple[str, int, bool]]:
    """(place, where it starts, after a locative word) for each place `sentence` names, in order.

    Days, months, holidays and the speakers are not places; a place after "instead of", "after" or
    "than" is the one not meant ("staying in Porto instead of Lisbon"); one whose last word the question
    says is the question's own ("Where did Maya move to Denver from?" is not answered by Denver)."""
    out: dict[int, tuple[str, int, bool]] = {}
    for match in _PLACE.finditer(sentence):
        name = _clean(match[1])
        if _is_name(name) and name not in speakers:
            out[match.start(1)] = (name, match.start(1), True)
    for name in known:
        for match in re.finditer(rf"(?<![\w-]){re.escape(name)}(?![\w-])", sentence):
            if not any(start <= match.start() < start + len(n) for n, start, _ in out.values()):
                out[match.start()] = (name, match.start(), False)
    kept = []
    for name, start, locative in sorted(out.values(), key=lambda p: p[1]):
        if _CONTRAST.search(sentence[max(0, start - 16):start]):
            continue
        if asked is not None and stem(name.split()[-1]) in asked:
            continue
        kept.append((name, start, locative))
    return kept


_MOVED = {stem(w) for w in ("move", "moving", "moved", "relocate", "relocating", "relocated")}


def best_place(sentence: str, found: list[tuple[str, int, bool]], asked: set[str]) -> tuple[str, int] | None:
    """(place, strength) of the place that answers: one right after a word of the question ("job at
    Fernwood Robotics") or after a move ("I moved to Denver": where someone is now), strength 2, else
    the last one after a locative word (1), else the last one named (0)."""
    if not found:
        return None
    for name, start, _ in found:
        if stems(" ".join(sentence[:start].split()[-4:])) & (asked | _MOVED):
            return name, 2
    located = [p for p in found if p[2]]
    return (located[-1][0], 1) if located else (found[-1][0], 0)


def reply_place(sentence: str, asked_before: str, speakers: frozenset[str] = frozenset()) -> str | None:
    """The name opening the first sentence of a reply to a where- or which-question ("So where did you
    end up going?" — "Lisbon, and we stayed a week"): a place with no preposition before it. Only
    after such a question: measured on LoCoMo, names opening any sentence are as often "Plus" or "Oops"."""
    if not re.search(r"\b(?:where|which)\b[^?]*\?\s*$", asked_before, re.I):
        return None
    opening = re.match(rf"(?:[Tt]he\s+)?({NAME})", sentence)
    name = _clean(opening[1]) if opening else ""
    return name if name and name[0].isupper() and _is_name(name) and name not in speakers else None


# ------------------------------------------------------------------------------------------ people
_TITLE = (r"(?:Dr|Prof|Mr|Mrs|Ms|Mx|Professor|Doctor|Aunt|Auntie|Uncle|Grandma|Grandpa|Coach|Captain|Dean|Judge|"
          r"Sir|Dame)")
_PERSON = re.compile(rf"(?:\b{_TITLE}\.?\s+(?:{_PARTICLE}\s+)*)?\b{NAME}")
_KIN = re.compile(r"\b(?:my|his|her|their|our|your)\s+((?:[a-z]+\s+)?(?:mother|father|mom|mum|dad|parents?|sister|"
                  r"brother|wife|husband|partner|girlfriend|boyfriend|fianc[ée]e?|son|daughter|aunt|uncle|cousin|grandmother|"
                  r"grandfather|grandma|grandpa|niece|nephew|friend|boss|manager|supervisor|teacher|coach|doctor|"
                  r"therapist|colleague|coworker|co-worker|roommate|flatmate|neighbou?r)s?)\b")


def known_names(texts: Iterable[str]) -> frozenset[str]:
    """Capitalised words the evidence uses inside a sentence: names, also where a sentence starts with them."""
    found: set[str] = set()
    for text in texts:
        for match in re.finditer(rf"(?<=[a-z,;:]\s){NAME}", text):
            found.update(w for w in match[0].split() if w[0].isupper())
    return frozenset(found)


def people(sentence: str, asked: set[str], not_people: frozenset[str], names: frozenset[str]) -> list[tuple[str, int]]:
    """(person, strength) for who a sentence names and the question does not: a name with its title
    ("Professor de Vries"), the one right after a word of the question first and strongest ("my
    supervisor, Professor de Vries", "my sister Lena"); a relative ("my mother") when no name is there."""
    found = []
    for match in _PERSON.finditer(sentence):
        name = _clean(match[0])
        words = name.split()
        starts = match.start() == 0 or re.search(r"[.!?:\"]\s*$", sentence[:match.start()])
        if starts and not re.match(_TITLE, name) and words[0] not in names:
            words = words[1:]  # a sentence's first word is capitalised anyway
            name = " ".join(words)
        if not name or not _is_name(name) or name in not_people or any(stem(w) in asked for w in words):
            continue
        found.append((name, match.start()))
    for name, start in found:
        if stems(" ".join(sentence[:start].split()[-3:])) & asked:
            return [(name, 1)]
    if found:
        return [(name, 0) for name, _ in found]
    return [(m[0], 0) for m in _KIN.finditer(sentence) if not stems(m[1]) <= asked]


# ------------------------------------------------------------------------------------------ numbers
_NUMBER_WORDS = ("one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
                 "sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|hundred|thousand|dozen|a few|"
                 "a couple|several")
_AMOUNT = re.compile(rf"[$€£]\s?\d(?:[\d,]*\d)?(?:\.\d+)?(?:\s?(?:k|million|billion)\b)?|\b\d(?:[\d,]*\d)?(?:\.\d+)?%?|"
                     rf"\b(?:{_NUMBER_WORDS})(?:[- ](?:{_NUMBER_WORDS}))?\b", re.I)
_TAIL = re.compile(r"(?:\s+(?:[a-z][a-z'-]*))", re.I)
_TAIL_STOP = {"a", "an", "the", "of", "out", "is", "are", "was", "were", "to", "for", "in", "on", "at", "and", "or",
              "but", "so", "that", "this", "it", "if", "as", "by", "with", "from", "be", "been", "i", "we", "you",
              "he", "she", "they", "not", "per", "than", "more", "less", "now", "then", "here", "there", "each",
              "every", "about", "ago"}
_VAGUE = re.compile(r"(?:a few|a couple|several)\b", re.I)  # "a few days ahead" counts nothing exactly
_MONEY = re.compile(r"[$€£]|\b(?:dollars?|euros?|pounds?|bucks)\b", re.I)
_DURATION = re.compile(r"\b(?:minutes?|hours?|days?|weeks?|months?|years?|nights?)\b", re.I)
_DISTANCE = re.compile(r"\b(?:miles?|km|kilomet(?:er|re)s?|met(?:er|re)s?|feet|foot|yards?|laps?|blocks?)\b", re.I)
_AGE = re.compile(r"\b(?:years?|months?) old\b", re.I)


# "How long has Nate had his turtles?" asks a duration: "two turtles" counts what it names, and is no answer.
_MEASURE = re.compile(r"\bhow (?:long|old|often|far)\b")


def amounts(sentence: str, asked: set[str], question: str, taken: list[tuple[int, int]]) -> list[tuple[str, int]]:
    """(number with what it counts, strength) for each number of `sentence` ("two flatmates", "$350",
    "One full day"), not one inside a date (`taken`) or that the question says itself; strength 1 when
    it counts what the question asks about ("How many flatmates …" → "two flatmates"; not for how long,
    old, often or far, which ask a measure), money for "how much", a duration for "how long", an age for
    "how old", a distance for "how far". Measured with the measure rule and the age: ShareGPT's answer
    line 0.614 -> 0.624, REALTALK category 2 0.305 -> 0.311, LoCoMo single-hop + temporal 0.429 -> 0.431;
    LoCoMo's lone wrong lines ("two dogs playing" for how often) 27 -> 26."""
    q = question.lower()
    found = []
    for match in _AMOUNT.finditer(sentence):
        if any(a <= match.start() < b for a, b in taken) or stem(match[0].split()[0]) in asked:
            continue
        tail: list[re.Match[str]] = []
        for word in _TAIL.finditer(sentence, match.end()):
            if word.start() != (tail[-1].end() if tail else match.end()) or word[0].strip().lower() in _TAIL_STOP:
                break
            tail.append(word)
            if len(tail) == 2:
                break
        text = match[0] + "".join(w[0] for w in tail)
        counted = bool(stems(" ".join(w[0] for w in tail)) & asked) and not _VAGUE.match(match[0])
        fits = (counted and not _MEASURE.search(q)) or any(
            re.search(rf"\bhow {word}\b", q) and bool(unit.search(text))
            for word, unit in (("much", _MONEY), ("long", _DURATION), ("far", _DISTANCE), ("old", _AGE)))
        found.append((text, int(fits)))
    return sorted(found, key=lambda f: -f[1])


# ------------------------------------------------------------------------------------------ phrases
_GENERIC = {"thing", "things", "stuff", "lot", "lots", "way", "time", "times", "bit", "kind", "sort", "one", "ones",
            "day", "days", "week", "weeks", "weekend", "today", "tonight", "yesterday", "tomorrow", "everything",
            "something", "anything", "nothing", "idea", "news", "question", "part", "point",
            # a pronoun or question word names nothing: "what" in "what is considered art" is no kind of art
            "what", "which", "who", "whom", "whose", "whatever", "it", "this", "that", "these", "those", "i",
            "me", "you", "he", "him", "she", "her", "we", "us", "they", "them"}
_CHUNK_LEFT = {"compound", "amod", "nummod", "nmod", "npadvmod", "quantmod", "advmod", "hmod"}
_OBJECTS = {"dobj", "oprd", "attr", "acomp", "xcomp", "pobj", "ccomp"}


def _phrase(doc: Any, tok: Any) -> str:
    """The noun phrase `tok` heads: its compounds and modifiers to the left, no determiner or possessive."""
    left = tok
    while left.i > 0 and doc[left.i - 1].dep_ in _CHUNK_LEFT and doc[left.i - 1].head.i in range(left.i, tok.i + 1):
        left = doc[left.i - 1]
    while left.i < tok.i and (left.tag_ in ("DT", "PRP$", "POS", "RB", "CC", "HYPH") or left.is_punct):
        left = doc[left.i + 1]
    return doc[left.i:tok.i + 1].text.strip()


def _copula(sentence: str, noun: str) -> list[str]:
    """What a sentence equates with the focus noun: "The shojin ryori lunch … was the best meal" and
    "His name is Biscuit" answer "What was the best meal …" and "What is the name of …"."""
    out = []
    word = rf"{re.escape(noun)}s?"
    be = r"(?:is|was|are|were|'s)"
    before = rf"(?:^|[:;,.!]\s+)(?P<x>[^,;:.!?]+?)\s+{be}\s+(?:\w+\s+){{0,3}}?{word}\b"
    for match in re.finditer(before, sentence, re.I):
        out.append(match["x"])
    for match in re.finditer(rf"\b{word}\s+{be}\s+(?P<y>[^,;:.!?]+)", sentence, re.I):
        out.append(match["y"])
    lead = r"^(?:(?:and|but|or|so)\s+)?(?:(?:the|a|an|my|his|her|our|their|your)\s+)?"  # ", and that is …"
    return [re.sub(lead, "", x.strip(), flags=re.I) for x in out]


def what_phrases(sentence: str, want: Focus, asked: set[str], names: frozenset[str],
                 taken: list[tuple[int, int]]) -> list[tuple[str, int]]:
    """(phrase, strength) for each noun phrase of `sentence` that says something the question does not:
    strength 2 for what the sentence equates with the focus noun and for the focus noun with a modifier
    the question lacks ("my left knee" for "Which knee …?", "a secondhand road bike"), 1 for an object
    of the question's verb ("He ate an entire sock") and a name given in apposition ("a half marathon,
    the Lakefront Half"), 0 for any other phrase. Not a date (`taken`), a speaker, or a generic word."""
    def new(phrase: str) -> bool:
        return phrase not in names and any(stem(w) not in asked and w.lower() not in _GENERIC
                                           for w in re.findall(r"[\w$€£'-]+", phrase))

    strong = [p for p in _copula(sentence, want.noun) if new(p)] if want.noun else []
    middle: list[str] = []
    weak: list[str] = []
    doc = _parsed(sentence)
    for tok in doc:
        if any(a <= tok.idx < b for a, b in taken) or tok.lower_ in _GENERIC:
            continue
        noun = tok.tag_.startswith("NN") and tok.dep_ != "compound"
        adjective = tok.tag_ == "JJ" and tok.dep_ in ("acomp", "oprd") and tok.head.tag_.startswith("VB")
        gerund = tok.tag_ == "VBG" and tok.dep_ in ("xcomp", "dobj", "pcomp")
        if not (noun or adjective or gerund):
            continue
        appos = [c for c in tok.children if c.dep_ == "appos" and c.tag_.startswith("NNP")]
        phrase = _phrase(doc, appos[0] if appos else tok)
        if not new(phrase):
            continue
        same_noun = want.noun is not None and stem(tok.text) == stem(want.noun) and phrase.lower() != tok.lower_
        object_of = want.verb is not None and tok.dep_ in _OBJECTS and tok.head.tag_.startswith("VB") and \
            english_parser().lemma(tok.head) == want.verb
        if same_noun:
            strong.append(phrase)
        elif object_of or appos:
            middle.append(phrase)
        else:
            weak.append(phrase)
    ranked = [(p, 2) for p in dict.fromkeys(strong)] + [(p, 1) for p in dict.fromkeys(middle) if p not in strong]
    return ranked + [(p, 0) for p in dict.fromkeys(weak) if p not in strong and p not in middle]


@functools.lru_cache(maxsize=2048)
def _parsed(sentence: str) -> Any:
    """A sentence's parse, kept: a session of questions about one chat reads the same evidence sentences."""
    return english_parser()(sentence)


def closest(phrases: list[str], to: str, embedder) -> str:
    """The phrase whose vector is nearest the vector of `to` (MiniLM, as the rest of the answer)."""
    if len(phrases) == 1:
        return phrases[0]
    vectors = embedder.embed([to, *phrases])
    scores = np.asarray(vectors[1:]) @ np.asarray(vectors[0])
    return phrases[int(np.argmax(scores))]
