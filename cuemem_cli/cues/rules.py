"""Cue extraction: turn each dialogue turn into short (subject, relation, object) cues.

Cues are what retrieval embeds and matches, so they must name who did what ("Caroline go to LGBTQ
support group"), and carry absolute dates, since questions ask "when" long after "yesterday" was said.
The default extractor is offline and deterministic: spaCy's dependency parse plus a few rules. Date
phrases are spotted here, in the parse; what one means on the day the turn was said is relative_dates.py's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import date
from typing import Any, Protocol

from ..records import Triple
from ..timeparse import MONTH_NAMES, MONTH_NUMBERS, said_on
from .parser import BE, MODEL, Parser
from .relative_dates import (
    DIRECTIONS,
    NUMBER_WORDS,
    PARTS_OF_DAY,
    UNITS,
    VAGUE_COUNTS,
    WEEKDAYS,
    bare_month_year,
    day_number,
    is_relative_unit,
    resolve_ago,
    resolve_day_word,
    resolve_relative,
    resolve_weekday,
    stated_day,
)
from .statements import pieces, prose_spans, reads_as_latin

# A turn longer than this is parsed in pieces of at most this many characters, cut at sentence ends
# (`cuemem_cli.cues.statements.pieces`), and all its pieces give cues: spaCy's parser memory grows with the
# characters of a document, so a multi-megabyte turn parsed whole would not fit in memory (and spaCy refuses over 1M
# characters; bench/design-notes.md, "Measured choices elsewhere in the code"). No dialogue turn is this
# long, so their extraction is unchanged.
PARSE_CHARS = 10_000
PARSE_BATCH_CHARS = 50_000  # characters parsed at once, which bounds spaCy's memory; LoCoMo batches stay 256 turns


class TurnLike(Protocol):
    @property
    def text(self) -> str: ...
    @property
    def speaker(self) -> str | None: ...
    @property
    def time(self) -> str | None: ...


class Extractor(Protocol):
    """What an extractor registered in cuemem_cli.registry returns. A database records the registry name
    it was built with and refuses cues from another unless mixing is asked for (registry.bind_extractor);
    `name` names the extractor and the version of its rules or prompt."""

    name: str

    def extract(self, turns: Sequence[TurnLike]) -> list[list[Triple]]:
        """One list of cues per input turn, in input order (empty lists allowed)."""
        ...


class SpacyExtractor:
    """Rule-based extraction over spaCy's small English parser (`cuemem_cli.cues.parser.Parser`).

    Dates are found by token rules instead of NER, POS comes from the fine-grained tags, and verbs are
    lemmatised on demand with the lemmatizer's own tables (the parser's `lemma`).
    """

    name = "spacy-rules-v1"

    def __init__(self, model: str = MODEL, batch_size: int = 256):
        self.model = model
        self.batch_size = batch_size
        self.parser = Parser(model)

    def extract(self, turns: Sequence[TurnLike]) -> list[list[Triple]]:
        nlp = self.parser.pipeline()
        owners: list[int] = []
        texts: list[str] = []
        for number, turn in enumerate(turns):
            text = turn.text or ""
            for start, end in prose_spans(text):  # code blocks and tables are not parsed (cues/statements.py)
                if not reads_as_latin(text[start:end]):
                    continue  # Chinese, Korean, Russian…: the English parser only makes junk of it
                for _, piece in pieces(text[start:end], PARSE_CHARS, start):
                    owners.append(number)
                    texts.append(piece)
        states = [_Turn(self, turn.speaker or None, said_on(turn.time)) for turn in turns]
        for group in _groups(texts):  # each parse is read as it comes and let go: memory stays that of a group
            for number, doc in zip(owners[group], nlp.pipe(texts[group], batch_size=self.batch_size), strict=True):
                states[number].read(doc)
        return [state.cues() for state in states]


def _groups(texts: list[str]) -> Iterator[slice]:
    """Consecutive runs of `texts` of at most PARSE_BATCH_CHARS characters together (one text at least)."""
    start, size = 0, 0
    for end, text in enumerate(texts):
        if end > start and size + len(text) > PARSE_BATCH_CHARS:
            yield slice(start, end)
            start, size = end, 0
        size += len(text)
    if start < len(texts):
        yield slice(start, len(texts))


_FIRST = {"i", "me", "myself", "we", "us", "ourselves"}
_FIRST_POSS = {"my", "our", "mine", "ours"}
_PERSONS = _FIRST | _FIRST_POSS | {"you", "your", "yours", "yourself"}
_PLACES = {"home", "back", "abroad", "away", "outside", "downtown", "overseas"}
_GONNA = {"gon", "wan", "gotta", "got"}
_VACUOUS = {"it", "that", "this", "there", "what", "which", "who", "whom", "something", "anything",
            "everything", "nothing", "those", "these", "they", "them", "he", "him", "she", "her", "one",
            "itself", "thing", "stuff", "lot", "all", "so", "here", "much", "some"}
_CLAUSE_DEPS = {"ROOT", "conj", "ccomp", "advcl", "relcl", "parataxis", "xcomp", "acl"}
_NP_SKIP = {"relcl", "acl", "advcl", "parataxis", "ccomp", "punct"}
_NP_LEFT = {"compound", "amod", "poss", "nummod", "case"}
_INTENSIFIERS = {"so", "very", "really", "pretty", "super", "too", "quite", "such", "totally", "just"}


def _is_clause(tok: Any) -> bool:
    """Verbs heading a clause; an xcomp of a verb is folded into its head ("want to adopt")."""
    if tok.dep_ == "ROOT" and any(c.dep_ == "dobj" for c in tok.children):
        return True
    if not tok.tag_.startswith("VB") or tok.dep_ not in _CLAUSE_DEPS:
        return False
    return not (tok.dep_ == "xcomp" and tok.head.tag_.startswith("VB"))


def _leading_noise(tok: Any) -> bool:
    """Words that start a phrase but add nothing to a cue: "a", "the", "this", "so", "really"."""
    if tok.tag_ in ("DT", "PDT", "WDT"):
        return tok.lower_ not in ("no", "both")
    return tok.lower_ in _INTENSIFIERS or tok.dep_ in ("punct", "cc")


def _root(tok: Any) -> Any:
    while tok.head.i != tok.i:
        tok = tok.head
    return tok


def _after(tok: Any) -> str:
    """The text of the turn after a token: where a speaker writes the day a weekday falls on."""
    return tok.doc.text[tok.idx + len(tok.text):tok.idx + len(tok.text) + 40]


def _is_past(tok: Any) -> bool:
    for _ in range(6):
        if tok.tag_.startswith("VB"):
            return tok.tag_ in ("VBD", "VBN") or any(c.tag_ == "VBD" for c in tok.children if c.dep_ == "aux")
        if tok.head.i == tok.i:
            break
        tok = tok.head
    return False


class _Turn:
    """Extraction state for one turn: who "I" is and which day "yesterday" is relative to."""

    def __init__(self, ex: SpacyExtractor, speaker: str | None, today: date | None):
        self.ex = ex
        self.speaker = speaker
        self.today = today
        self.dates: set[int] = set()
        self.strong: list[Triple] = []
        self.weak: list[Triple] = []
        self.dated: list[Triple | None] = []

    def read(self, doc: Any) -> None:
        """Take the cues of one parse of the turn (its prose, or the next piece of a long one)."""
        self.dates.clear()  # token indices are per document
        for sent in doc.sents:
            found = self.find_dates(sent)
            clauses = {tok.i: self.clause(tok) for tok in sent if _is_clause(tok)}
            self.strong += self.possessions(sent)
            for triple in clauses.values():
                if triple is None:
                    continue
                subj, obj = self.quality(triple.subject), self.quality(triple.object)
                if (subj >= 1 and obj == 2) or (subj == 2 and obj >= 1):
                    self.strong.append(triple)
                elif max(subj, obj) == 2:
                    self.weak.append(triple)
            for anchor, when in found:
                self.dated.append(self.date_cue(anchor, when, clauses))

    def cues(self) -> list[Triple]:
        cues = self.strong or self.weak
        return list(dict.fromkeys(cues + [t for t in self.dated if t is not None]))

    @staticmethod
    def quality(text: str) -> int:
        """2: names something; 1: a person pronoun ("you", unresolved "I"); 0: empty or vacuous."""
        words = text.lower().replace("'s", "").split()
        if any(w not in _VACUOUS and w not in _PERSONS for w in words):
            return 2
        return 1 if any(w in _PERSONS for w in words) else 0

    def date_cue(self, anchor: Any, when: str, clauses: dict[int, Triple | None]) -> Triple | None:
        """Attach a date to the clause it modifies, so the cue says what happened then."""
        tok = anchor
        while tok.i not in clauses and tok.head.i != tok.i:
            tok = tok.head
        triple = clauses.get(tok.i)
        if triple is None:
            return Triple(self.speaker, "mention", when, kind="date") if self.speaker else None
        subject = triple.subject or self.speaker or ""
        relation = f"{triple.relation} {triple.object}".strip()
        return Triple(subject, relation, when, kind="date")

    def clause(self, verb: Any) -> Triple | None:
        subj = self.subject(verb)
        neg = any(c.dep_ == "neg" for c in verb.children)
        if verb.lower_ not in BE and any(c.dep_ in ("nsubjpass", "auxpass") for c in verb.children):
            rel = [f"be {verb.lower_}"]
        else:
            rel = [self.ex.parser.lemma(verb)]
        chain = [verb]
        for _ in range(3):
            rel += [c.lower_ for c in chain[-1].children if c.dep_ == "prt"]
            nxt = next((c for c in chain[-1].children if c.dep_ == "xcomp" and c.tag_.startswith("VB")), None)
            if nxt is None:
                break
            neg = neg or any(c.dep_ == "neg" for c in nxt.children)
            if any(c.lower_ == "to" for c in nxt.children if c.dep_ == "aux"):
                rel += ["to", self.ex.parser.lemma(nxt)]
            else:
                rel.append(nxt.lower_ if nxt.tag_ == "VBG" else self.ex.parser.lemma(nxt))
            chain.append(nxt)
        rel_text, obj = self.complement(chain[::-1], " ".join(rel))
        own_subject = any(c.dep_ == "nsubj" and c.tag_ not in ("WDT", "WP") for c in verb.children)
        if not obj and verb.dep_ == "relcl" and own_subject:
            rel_text += "".join(f" {c.lower_}" for c in verb.children if c.dep_ == "prep" and not list(c.children))
            obj = self.phrase(verb.head)
        if not obj:
            obj = next((c.lower_ for c in verb.children if c.dep_ == "advmod" and c.lower_ in _PLACES), "")
        if not subj and self.speaker and (verb.tag_ in ("VBD", "VBN", "VBG") or _root(verb).lower_ in _GONNA):
            subj = self.speaker
        if neg:
            rel_text = "not " + rel_text
        if not subj and not obj:
            return None
        return Triple(subj, rel_text, obj)

    def subject(self, verb: Any) -> str:
        tok = verb
        for _ in range(4):
            for c in tok.children:
                if c.dep_ in ("nsubj", "nsubjpass", "expl") and c.i not in self.dates:
                    if tok.dep_ == "relcl" and c.tag_ in ("WDT", "WP"):
                        return self.phrase(tok.head)
                    return self.phrase(c)
            if tok.dep_ not in ("conj", "xcomp", "advcl") or tok.head.i == tok.i:
                return ""
            tok = tok.head
        return ""

    def complement(self, preds: list[Any], rel: str) -> tuple[str, str]:
        """Find the clause's object: direct object, attribute, prepositional object, then adjective.

        `preds` is the xcomp chain, innermost first: "went camping with Sarah" puts "with" on "went".
        """
        kids = [c for pred in preds for c in pred.children if c.i not in self.dates]
        dobj = next((c for c in kids if c.dep_ in ("dobj", "attr", "oprd")), None)
        preps = [c for c in kids if c.dep_ in ("prep", "agent") and self.pobj(c) is not None]
        if dobj is not None:
            obj = self.phrase(dobj)
            dative = next((c for c in kids if c.dep_ == "dative"), None)
            if dative is not None and self.quality(self.phrase(dative)):
                obj += " to " + self.phrase(dative)
            if preps and len(obj.split()) < 6:
                obj += f" {preps[0].lower_} {self.phrase(self.pobj(preps[0]))}"
            return rel, obj
        adj = next((c for c in kids if c.dep_ == "acomp"), None)
        if adj is not None:
            preps += [c for c in adj.children if c.dep_ == "prep" and self.pobj(c) is not None]
            if preps:
                return f"{rel} {adj.lower_} {preps[-1].lower_}", self.phrase(self.pobj(preps[-1]))
            return rel, self.phrase(adj)
        if preps:
            return f"{rel} {preps[0].lower_}", self.phrase(self.pobj(preps[0]))
        return rel, ""

    def pobj(self, prep: Any) -> Any:
        return next((c for c in prep.children if c.dep_ in ("pobj", "pcomp") and c.i not in self.dates), None)

    def possessions(self, sent: Any) -> list[Triple]:
        """"my son Max" / "Caroline's friend Sam": (owner, have son, Max)."""
        out = []
        for tok in sent:
            poss = next((c for c in tok.children if c.dep_ == "poss"), None)
            if poss is None:
                continue
            if poss.lower_ in _FIRST_POSS:
                owner = self.speaker
            elif poss.tag_ in ("NNP", "NN") and poss.text[:1].isupper():
                owner = poss.text
            else:
                owner = None
            if not owner:
                continue
            name = next((c for c in tok.children if c.dep_ in ("appos", "compound") and c.tag_ == "NNP"
                         and c.i > tok.i), None)
            if name is not None and tok.tag_ in ("NN", "NNS"):
                out.append(Triple(owner, f"have {tok.lower_}", self.phrase(name)))
            kind = next((c for c in tok.children if c.dep_ == "compound" and c.tag_ in ("NN", "NNS")), None)
            if kind is not None and tok.tag_ == "NNP":
                out.append(Triple(owner, f"have {kind.lower_}", tok.text))
        return out

    def phrase(self, head: Any) -> str:
        """The noun phrase under `head`, without leading determiners, clauses or date words."""
        toks = self._collect(head, 4, None)
        if len(toks) > 10:
            toks = self._collect(head, 2, _NP_LEFT)
        toks.sort(key=lambda t: t.i)
        while len(toks) > 1 and toks[0].i != head.i and _leading_noise(toks[0]):
            toks = toks[1:]
        while len(toks) > 1 and toks[-1].dep_ in ("punct", "cc"):
            toks = toks[:-1]
        out = []
        for k, tok in enumerate(toks):
            word = tok.text
            if self.speaker and tok.lower_ in _FIRST:
                word = self.speaker
            elif self.speaker and tok.lower_ in _FIRST_POSS:
                word = f"{self.speaker}'s"
            out.append(word)
            if k + 1 < len(toks):
                out.append(tok.whitespace_ if toks[k + 1].i == tok.i + 1 else " ")
        return "".join(out).strip()

    def _collect(self, tok: Any, depth: int, deps: set[str] | None) -> list[Any]:
        out = [tok]
        for c in tok.children:
            if depth == 0 or c.i in self.dates or (c.dep_ in _NP_SKIP and c.text not in ("-", "&", "/")):
                continue
            if c.dep_ == "prep" and self.pobj(c) is None:
                continue
            if deps is None or c.dep_ in deps:
                out += self._collect(c, depth - 1, deps)
        return out

    def find_dates(self, sent: Any) -> list[tuple[Any, str]]:
        """Spot date expressions by token rules and resolve them against the turn's date (relative_dates.py's rules).

        Returns (anchor token, absolute date text); date tokens are remembered so noun phrases skip them.
        """
        toks = list(sent)
        lows = [t.lower_ for t in toks]
        out: list[tuple[Any, str]] = []
        i = 0
        while i < len(toks):
            span, when = self._date_at(toks, lows, i)
            if span:
                self.dates.update(t.i for t in toks[i:i + span])
                if when:
                    out.append((toks[i + span - 1], when))
                i += span
            else:
                i += 1
        return out

    def _date_at(self, toks: list[Any], lows: list[str], i: int) -> tuple[int, str | None]:
        """(tokens consumed, resolved date or None) for a date expression starting at token i."""
        w = lows[i]
        nxt = lows[i + 1] if i + 1 < len(lows) else ""
        today = self.today
        if w in ("yesterday", "today", "tonight", "tomorrow"):
            span = 2 if nxt in PARTS_OF_DAY else 1
            return span, resolve_day_word(w, today) if today is not None else None
        if w in ("last", "next", "this", "past") and nxt:
            span, word = 2, nxt
            if nxt == "past" and i + 2 < len(lows):
                span, word, w = 3, lows[i + 2], "last"
            if not is_relative_unit(word):
                return 0, None
            if today is None:
                return span, None
            return span, resolve_relative(word, DIRECTIONS.get(w, 0), today, stated_day(_after(toks[i + span - 1])))
        if w == "ago" and i > 1 and lows[i - 1] in UNITS:
            k = i - 3 if lows[i - 2] == "of" else i - 2  # "a couple of days ago"
            count: int | None
            if k < 0:
                return 0, None
            if lows[k] in VAGUE_COUNTS:
                count, k = None, k - 1 if k and lows[k - 1] in ("a", "an") else k
            elif lows[k].isdigit() or lows[k] in NUMBER_WORDS:
                count = int(lows[k]) if lows[k].isdigit() else NUMBER_WORDS[lows[k]]
            else:
                return 0, None
            self.dates.update(t.i for t in toks[k:i])
            if today is None:
                return 1, None
            return 1, resolve_ago(count, UNITS[lows[i - 1]], " ".join(lows[k:i]), today)
        month = MONTH_NUMBERS.get(w)
        if month and (toks[i].tag_ == "NNP" or (toks[i].tag_ == "NN" and w not in ("may", "march"))):
            return self._absolute(toks, lows, i, month)
        if w.isdigit() and len(w) == 4 and 1900 <= int(w) <= 2100 and toks[i].dep_ not in ("nummod", "quantmod"):
            return 1, w
        if w in WEEKDAYS and toks[i].tag_ == "NNP":
            if today is None:
                return 1, None
            return 1, resolve_weekday(w, -1 if _is_past(toks[i]) else 1, today, stated_day(_after(toks[i])))
        return 0, None

    def _absolute(self, toks: list[Any], lows: list[str], i: int, month: int) -> tuple[int, str | None]:
        """"8 May 2023", "May 8th", "May 2023", or a bare month placed in the turn's year."""
        day = year = None
        start, end = i, i + 1
        if i > 0 and day_number(lows[i - 1]):
            day, start = day_number(lows[i - 1]), i - 1
        elif end < len(lows) and day_number(lows[end]):
            day, end = day_number(lows[end]), end + 1
        if end < len(lows) and lows[end] == ",":
            end += 1 if end + 1 < len(lows) and lows[end + 1].isdigit() else 0
        if end < len(lows) and lows[end].isdigit() and len(lows[end]) == 4:
            year, end = int(lows[end]), end + 1
        if year is None and self.today is not None:
            year = bare_month_year(month, self.today, _is_past(toks[i]))
        name = MONTH_NAMES[month - 1]
        self.dates.update(t.i for t in toks[start:end])
        text = f"{day} {name}" if day else name
        return end - i, f"{text} {year}" if year else text
