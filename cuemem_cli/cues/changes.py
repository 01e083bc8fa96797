"""Facts that change: a newer turn that states another value for what an older turn of the same conversation
stated, found at ingest from the turns' cues, and recorded as a pair (older → newer); nothing is rewritten.

CueMem has no UPDATE (the paper's §4): a new fact is a new cue on a newer turn, and the reader is told to prefer
what is recent. What this adds is knowing *which* turns say the old and the new value, so that recall keeps the
two together, the answer line gives the latest with the earlier beside it, and every view can say "later
changed". Two signals, both about one conversation's turns in the order they were said:

- the cue rules' triples (cues/rules.py): the same subject and relation with another value on a newer turn.
  The relation is read without its modal ("want to stay in" is "stay in") and by family where several verbs
  state one fact ("move to", "live in", "stay in" say where someone lives; "work at", "get job at", "join"
  whom they work for). A relation whose subject holds one value at a time (a family, or a numeric value of
  the same unit: "costs $40" → "costs $55") counts any other value; other relations ("go to the gym", "go to
  Boise") name many things at once and are left alone. The same value, negated on one side and not on the
  other ("I use GraphQL" … "don't use GraphQL"), is a contradiction.
- a sentence that says it changes something: "changed the term X to Y", "switched to Y", "renamed it Y",
  "Y instead of X", "moved the trip to May". The earlier turn is the latest one before it that names X (or,
  without an X, the thing changed); without an X the earlier value is read in that turn as the latest value's
  kind (a month for a month, a number of the same unit, a name for a name).

Measured on the change questions' tune half (bench/change_questions.json, bench/memory_notes.md, "Facts that
change"); what it cannot see (a value only implied: "How's Portland treating you?") stays to the reader.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..records import Triple
from ..text import sentences
from .statements import prose_spans

CHANGE, CONTRADICTION = "change", "contradiction"
KINDS = (CHANGE, CONTRADICTION)  # stored as their index (store/migrations.py)

# Relations stated by several verbs: each verb → the family it states (a subject has one value of it at a time).
_FAMILIES = {
    "live in": ("live in", "live at", "move to", "move into", "relocate to", "be based in", "settle in",
                "reside in", "stay in", "stay at", "be located in", "move back to"),
    "work at": ("work at", "work for", "join", "start at", "be hired by", "start working at", "start working for",
                "work as"),
    "major in": ("major in",),
    "be called": ("be called", "be named", "rename to", "be renamed to"),
}
FAMILY = {verb: family for family, verbs in _FAMILIES.items() for verb in verbs}
# A job, got or taken: "(Leo, get, job at Fernwood Robotics)" is where Leo works.
_JOB = re.compile(r"^(?:(?:a|an|the|new|my|his|her|their)\s+)*(?:job|position|role|internship|place)"
                  r"\s+(?:at|with|in)\s+(?P<where>.+)$", re.I)
_JOB_VERBS = {"get", "accept", "take", "land", "start", "begin", "find", "have", "be offered", "offer"}
_MODAL = re.compile(r"^(?:(?:want|plan|decide|need|hope|try|have|intend|like|love|choose|agree|expect|prefer|"
                    r"would like|be going|go|be about|mean|get|start|begin|continue|keep)\s+to\s+)+")
_VACUOUS = {"it", "that", "this", "there", "what", "which", "who", "something", "anything", "everything",
            "nothing", "they", "them", "he", "him", "she", "her", "one", "thing", "stuff", "all", "here",
            "i", "me", "we", "us", "someone"}
_ADDRESSED = {"", "you", "your", "yours"}  # in a chat with an assistant: the user's project, whoever says it
_DETERMINERS = re.compile(r"^(?:(?:the|a|an|my|our|your|his|her|their|its|this|that|these|those|some)\s+)+", re.I)
_NUMBER = re.compile(r"(?<![\w.])(?:\$|€|£)?\d+(?:[.,:/-]\d+)*%?(?![\w])")
_NUMBER_WORDS = ("one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty "
                 "fifty hundred thousand").split()
_NUMBER_WORD = re.compile(rf"\b(?:{'|'.join(_NUMBER_WORDS)})\b", re.I)
_MONTH = re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October|November|"
                    r"December)\b")
_HOMES = re.compile(r"\b(?:apartment|flat|house|home|dorm|room|condo|studio|place of my own)\b", re.I)
# Relations whose negation says little: "I don't think so" contradicts no "I think it is fine".
_VAGUE_RELATIONS = {"be", "have", "think", "know", "get", "see", "say", "mean", "feel", "want", "like", "go", "do",
                    "make", "take", "need", "try", "look", "let", "give", "find", "tell", "hope", "guess", "care",
                    "mind", "remember", "understand", "believe", "worry", "wonder", "sound", "seem", "matter"}
MAX_CONTRADICTION_WORDS = 4
# A value naming someone by pronoun is a clause's leftover, not a value ("you for hike", "you and the dogs").
_PRONOUN = re.compile(r"\b(?:you|your|yours|i|me|my|we|us|our|he|him|his|she|her|they|them|their)\b", re.I)
_NO_VALUES = {"now", "then", "here", "there", "today", "tonight", "tomorrow", "yesterday", "again", "too", "anymore",
              "soon", "later", "before", "already", "yet", "well", "so", "more", "less", "way"}
MAX_VALUE_WORDS = 6  # a longer object is a description, not a value
KEPT_PER_KEY = 4  # the latest distinct values remembered per (subject, relation)

# "changed the term 'pay-to-play' to 'give-to-get'", "switched to Y", "renamed it Y", "moved the trip to May"
_CHANGE_TO = re.compile(
    r"\b(?:chang|switch|mov|updat|renam|upgrad|push|bump|postpon|reschedul)(?:e|ed|es|ing)?\b"
    r"(?P<thing>(?:\s+(?!to\b|from\b)[\w'’\"-]+){0,4}?)"
    r"(?:\s+from\s+(?P<old>[^.,;!?\n]{1,40}?))?"
    r"\s+(?:to|into|over to)\s+(?P<new>[^.,;!?\n()]{1,40})", re.I)
_RENAMED = re.compile(r"\brenam(?:e|ed|ing)\s+(?P<thing>(?:[\w'’-]+\s+){0,3}?)(?:to\s+)?"
                      r"[\"“'](?P<new>[^\"”'\n]{1,40})[\"”']", re.I)
_INSTEAD = re.compile(r"(?P<new>[^.,;!?\n]{1,40}?)\s*,?\s+instead of\s+(?:just\s+)?(?P<old>[^.,;!?\n]{1,40})", re.I)
_QUOTES = "\"'“”‘’`*"
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|we|we're|we've|my|our|us|let's)\b", re.I)
KEPT_TEXTS = 200  # earlier turns of a conversation searched for the value a change statement replaces


@dataclass(frozen=True)
class Fact:
    """A value a turn states: (subject, relation) is what it is a value of, read as keys (`subject_key`,
    `relation_key`); `value` as said; `negated` when the turn says it is not so."""

    turn: int
    subject: str
    relation: str
    value: str
    negated: bool = False


@dataclass(frozen=True)
class Found:
    """A change found between two turns of one conversation (turn ids), with what changed and how."""

    older_turn: int
    newer_turn: int
    subject: str
    relation: str
    older_value: str
    newer_value: str
    kind: str = CHANGE


@dataclass(frozen=True)
class Said:
    """A turn as the finder reads it: its id, its text, who said it in what role, its triples."""

    turn: int
    text: str
    speaker: str | None
    role: str | None
    triples: Sequence[Triple] = ()


def clean(value: str) -> str:
    """A value as shown: quotes and leading articles off, whitespace folded."""
    value = re.sub(r"\s+", " ", value).strip().strip(_QUOTES + " ").strip()
    return _DETERMINERS.sub("", value).strip(_QUOTES + " ")


def _norm(value: str) -> str:
    return re.sub(r"[^\w\s/.-]", "", clean(value).lower()).strip()


def subject_key(subject: str, role: str | None) -> str | None:
    """The subject as a key, or None when it names nothing a value could belong to ("it", "that"). In a chat
    with an assistant, "you" and an imperative's missing subject are the user's project (one key)."""
    s = _DETERMINERS.sub("", subject.lower().replace("’", "'")).strip()
    if role is not None and s in _ADDRESSED:
        return "you"
    if not s or s in _VACUOUS or s in _ADDRESSED:
        return None
    return s


def relation_key(relation: str) -> tuple[str, bool]:
    """(the relation read without its negation and modal, in its family's name; negated)."""
    r = relation.lower().strip()
    negated = r.startswith("not ")
    r = _MODAL.sub("", r.removeprefix("not ").strip())
    return FAMILY.get(r, r), negated


def _unit(value: str) -> str | None:
    """What a numeric value counts ("2-8 players" → "players"; "$40" → "$"), or None when it holds no number."""
    m = _NUMBER.search(value) or _NUMBER_WORD.search(value)
    if m is None:
        return None
    after = value[m.end():].split()
    if m.group().startswith(("$", "€", "£")):
        return m.group()[0]
    return after[0].lower().rstrip("s") if after else ""


def facts(said: Said) -> list[Fact]:
    """The values a turn states in its triples (`Triple.kind == "triple"`)."""
    out = []
    for t in said.triples:
        if t.kind != "triple" or not t.object:
            continue
        subject = subject_key(t.subject, said.role)
        if subject is None or (said.role == "assistant" and subject != "you"):
            continue  # an assistant's "I" and its general statements are no facts of the user's
        relation, negated = relation_key(t.relation)
        value = clean(t.object)
        job = _JOB.match(value)
        if job and relation in _JOB_VERBS:
            relation, value = "work at", clean(job["where"])
        value = _named_part(value)
        if not value or len(value.split()) > MAX_VALUE_WORDS or value.lower() in _VACUOUS | _NO_VALUES \
                or re.fullmatch(r"[\w-]+['’]s", value) or _PRONOUN.search(value):
            continue  # "work at my boyfriend's job for now" states no "now"; "Nebraas's" alone names nothing
        out.append(Fact(said.turn, subject, relation, value, negated))
    return out


def _named_part(value: str) -> str:
    """A value that opens with a name and trails on in lower case is the name ("Lisbon the whole time"); one
    that is names throughout stays whole ("NextJS and GraphQL")."""
    words = value.split()
    run = 0
    while run < len(words) and (words[run][:1].isupper() or (run and words[run].lower() in _NAME_JOINS)):
        run += 1
    while run and words[run - 1].lower() in _NAME_JOINS:
        run -= 1
    rest = words[run:]
    if run and rest and rest[0][:1].islower() and not any(w[:1].isupper() for w in rest) \
            and not _MONTH.fullmatch(" ".join(words[:run])):
        return " ".join(words[:run])
    return value


_NAME_JOINS = {"of", "de", "la", "and", "&", "the"}


def _same(a: str, b: str) -> bool:
    """Whether two values say the same ("Denver" and "Denver office"; "Porto" and "porto")."""
    x, y = _norm(a), _norm(b)
    return x == y or (bool(x) and bool(y) and (re.search(rf"\b{re.escape(x)}\b", y) is not None
                                               or re.search(rf"\b{re.escape(y)}\b", x) is not None))


def _fits(relation: str, value: str) -> bool:
    """Whether a value can be one of its relation's: where someone lives is a name or a home ("Porto", "a dorm"),
    not "a place where that's possible"."""
    if relation == "live in":
        return value[:1].isupper() or bool(_HOMES.search(value))
    return True


def _comparable(relation: str, old: str, new: str) -> bool:
    """Whether two values of one (subject, relation) can replace each other: any two of a family, two numbers
    of one unit (not two amounts of different things), nothing else."""
    if relation in _FAMILIES:
        return True
    unit_old, unit_new = _unit(old), _unit(new)
    return bool(unit_old) and unit_old == unit_new and len(old.split()) <= 3 and len(new.split()) <= 3


@dataclass
class ChangeFinder:
    """One conversation's facts so far, newest last, and the changes each new turn makes to them. Feed it the
    conversation's turns in the order they were said (`see`); `known` turns (stored before) only teach it."""

    recent: dict[tuple[str, str], list[Fact]] = field(default_factory=dict)
    texts: list[tuple[int, str, str]] = field(default_factory=list)  # (turn, prose, speaker lower-cased), oldest first

    def see(self, said: Said, known: bool = False) -> list[Found]:
        found: list[Found] = []
        new_facts = facts(said)
        if not known:
            found += self._from_facts(new_facts)
            if said.role != "assistant":  # a user's or a person's own words say what they change
                found += [f for f in self._from_statements(said)
                          if not any(f.newer_turn == g.newer_turn and _same(f.newer_value, g.newer_value)
                                     for g in found)]
        for fact in new_facts:
            kept = self.recent.setdefault((fact.subject, fact.relation), [])
            kept[:] = [f for f in kept if not (_same(f.value, fact.value) and f.negated == fact.negated)]
            kept.append(fact)
            del kept[:-KEPT_PER_KEY]
        prose = " ".join(said.text[a:b] for a, b in prose_spans(said.text))
        self.texts.append((said.turn, prose, (said.speaker or "").lower()))
        del self.texts[:-KEPT_TEXTS]
        return found

    def _from_facts(self, new_facts: list[Fact]) -> list[Found]:
        out: dict[tuple[int, str, str], Found] = {}
        for fact in new_facts:
            earlier = self.recent.get((fact.subject, fact.relation), [])
            if not _fits(fact.relation, fact.value):
                continue
            if not earlier and not fact.negated and fact.relation in _IMPLIED:
                implied = self._implied(fact)
                if implied is not None:
                    out[(implied.older_turn, fact.subject, fact.relation)] = implied
                continue
            for old in reversed(earlier):
                if old.turn == fact.turn:
                    continue
                if _same(old.value, fact.value):
                    if old.negated != fact.negated and fact.relation not in _VAGUE_RELATIONS \
                            and max(len(old.value.split()), len(fact.value.split())) <= MAX_CONTRADICTION_WORDS:
                        kind = CONTRADICTION
                    else:
                        break  # said again: the latest statement of it is this one
                elif fact.negated or old.negated or not _comparable(fact.relation, old.value, fact.value):
                    continue
                else:
                    kind = CHANGE
                key = (old.turn, fact.subject, fact.relation)
                if key not in out:
                    value = ("not " if fact.negated else "") + fact.value
                    was = ("not " if old.negated else "") + old.value
                    out[key] = Found(old.turn, fact.turn, fact.subject, fact.relation, was, value, kind)
                break
        # "don't use GraphQL, use server functions": what the turn says instead of what it retracts is the change
        for found in [f for f in out.values() if f.kind == CONTRADICTION and f.newer_value.startswith("not ")]:
            instead = [f for f in new_facts if (f.subject, f.relation) == (found.subject, found.relation)
                       and not f.negated and not _same(f.value, found.older_value)]
            for fact in instead[:1]:  # recorded as the change it is, in place of the contradiction
                out[(found.older_turn, fact.subject, fact.relation)] = Found(
                    found.older_turn, fact.turn, fact.subject, fact.relation, found.older_value, fact.value, CHANGE)
        return list(out.values())

    def _implied(self, fact: Fact) -> Found | None:
        """Where someone lived or worked before a move or a new job that no earlier cue states: the latest
        earlier turn of theirs that names another such place ("I'd miss Portland" before "I'm moving to
        Denver"; "Still at the bookstore" before "I got the job at Fernwood Robotics")."""
        pattern = _IMPLIED[fact.relation]
        for turn, text, speaker in reversed(self.texts):
            if speaker != fact.subject:
                continue
            values = [clean(m["value"]) for sentence in sentences(text) if not sentence.rstrip().endswith("?")
                      for m in pattern.finditer(sentence)]
            values = [v for v in values if v and not _same(v, fact.value) and not _MONTH.fullmatch(v)
                      and v.lower() not in _NOT_PLACES]
            if values:
                return Found(turn, fact.turn, fact.subject, fact.relation, values[-1], fact.value, CHANGE)
        return None

    def _from_statements(self, said: Said) -> list[Found]:
        """Changes a sentence says it makes ("changed the term X to Y", "Y instead of X")."""
        out: list[Found] = []
        seen: set[tuple[int, str]] = set()
        for start, end in prose_spans(said.text):
            for sentence in sentences(said.text[start:end]):
                for thing, old, new in _stated_changes(sentence):
                    older = self._older(old, thing, new, (said.speaker or "").lower())
                    if older is None:
                        continue
                    turn, was = older
                    if (turn, new.lower()) in seen or _same(was, new):
                        continue
                    seen.add((turn, new.lower()))
                    subject = subject_key(said.speaker or "", said.role) or (said.speaker or "").lower()
                    out.append(Found(turn, said.turn, thing or subject, "change", was, new, CHANGE))
        return out

    def _older(self, old: str | None, thing: str | None, new: str, speaker: str) -> tuple[int, str] | None:
        """The latest earlier turn that says the earlier value (`old`), or else names the thing changed, with the
        earlier value as it says it: the speaker's own turns first (what they said they would do), then any."""
        for own in (True, False):
            for turn, text, said_by in reversed(self.texts):
                if own and said_by != speaker:
                    continue
                if old and re.search(rf"(?<!\w){re.escape(old)}(?!\w)", text, re.I):
                    return turn, old
                if not old and thing and _names(text, thing):
                    was = _like(new, text, thing)
                    if was:
                        return turn, was
        return None


# Where someone lived or worked, said in passing: "here in Portland", "I'd miss Portland", "still at the bookstore".
_NAME = r"[A-Z][\w'&-]+(?:\s+[A-Z][\w'&-]+)*"
_IMPLIED = {
    "live in": re.compile(rf"\b(?:in|from|leave|leaving|left|miss|missing)\s+(?P<value>{_NAME})"),
    "work at": re.compile(rf"\b(?i:still|work|works|working|worked|job|jobs)\s+(?:at|for|with)\s+(?:the\s+)?"
                          rf"(?P<value>{_NAME}|[a-z]+)"),
}
_NOT_PLACES = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "english", "french",
               "spanish", "german", "christmas", "easter", "moment", "home", "work", "it"}


def _names(text: str, thing: str) -> bool:
    words = [w for w in re.findall(r"[\w'-]+", thing.lower()) if w not in _VACUOUS and len(w) > 2]
    return bool(words) and all(re.search(rf"\b{re.escape(w)}", text, re.I) for w in words)


def _like(new: str, text: str, thing: str) -> str | None:
    """In `text`, a value of the kind of `new` (a month for a month, a number of its unit, a capitalised name
    for one), the one nearest the thing changed; None when it has none."""
    at = min((m.start() for w in thing.split() if (m := re.search(rf"\b{re.escape(w)}", text, re.I))), default=0)
    if " " not in new and re.search(r"[/:.-]", new):  # a format or a version: the same shape ("DD/MM" for "MM/DD")
        spans = [(m.start(), m.group()) for m in re.finditer(r"[\w/:.-]+", text) if _shape(m.group()) == _shape(new)]
    elif _MONTH.search(new):
        spans = [(m.start(), m.group()) for m in _MONTH.finditer(text)]
    elif _unit(new) is not None:
        unit = _unit(new)
        spans = [(m.start(), m.group()) for m in _NUMBER.finditer(text)
                 if _unit(text[m.start():m.start() + 40]) == unit]
    elif new[:1].isupper():
        spans = [(m.start(), m.group()) for m in re.finditer(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*",
                                                            text)]
    else:
        return None
    spans = [(i, s) for i, s in spans if not _same(s, new)]
    return min(spans, key=lambda span: abs(span[0] - at))[1] if spans else None


def _shape(token: str) -> str:
    return re.sub(r"\d", "9", re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", token)))


def _stated_changes(sentence: str) -> Iterable[tuple[str | None, str | None, str]]:
    """(thing, old value or None, new value) for each change the sentence says it makes."""
    for m in _RENAMED.finditer(sentence):
        yield _thing(m["thing"]) or "name", None, clean(m["new"])
    for m in _CHANGE_TO.finditer(sentence):
        quoted_new = re.match(r"\s*[\"“'‘]([^\"”'’]{1,40})[\"”'’]", m["new"])
        new = quoted_new[1].strip() if quoted_new else clean(_first_value(m["new"]))  # a quoted value whole
        thing, old = m["thing"] or "", m["old"]
        quoted = re.search(r"[\"“'‘]([^\"”'’]{1,40})[\"”'’]", thing)
        if quoted and not old:  # "changed the term "pay-to-play" to …": the quoted term is the earlier value
            thing, old = thing[:quoted.start()], quoted[1]
        if new:
            yield _thing(thing), clean(old) if old else None, new
    for m in _INSTEAD.finditer(sentence if _FIRST_PERSON.search(sentence) else ""):
        new, old = clean(_last_value(m["new"])), clean(_first_value(m["old"]))
        if _unit(old) is not None:  # "two decks of cards for the game, instead of just one": the counted phrase
            counted = list(re.finditer(rf"(?:{_NUMBER.pattern}|{_NUMBER_WORD.pattern})\s+[a-z]+", m["new"], re.I))
            new = clean(counted[-1].group()) if counted else new
        if new and old:
            yield None, old, new


def _thing(words: str | None) -> str | None:
    thing = clean(words or "")
    thing = " ".join(w for w in thing.split() if w.lower() not in _VACUOUS)
    return thing or None


def _first_value(text: str) -> str:
    """A value at the start of a phrase: up to a conjunction or a clause ("May. The flights…" → "May")."""
    return re.split(r"\s+(?:and|but|so|because|since|which|as|for|with|when|if|then|now)\b", text.strip(),
                    maxsplit=1)[0]


def _last_value(text: str) -> str:
    """The value just before "instead of": the phrase after its verb ("we're staying in Porto" → "Porto")."""
    words = text.strip().split()
    for i in range(len(words) - 1, -1, -1):
        if words[i].lower() in ("in", "at", "to", "with", "using", "use", "be", "is", "are", "'re", "stay",
                                "staying", "of", "for", "on"):
            return " ".join(words[i + 1:]) or text
    return " ".join(words[-4:])
