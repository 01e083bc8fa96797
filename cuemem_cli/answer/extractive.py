"""The offline answer: the question's parts read off the evidence sentences nearest it, without a model,
and the answer line made of them: the span when the reader is sure, else a quote of the sentence that answers.

What the question asks for (its parts) is question_parts.py's; which sentences answer (and whether any does),
sentences.py's; how a sentence is quoted, quotes.py's; what span of a sentence answers each kind of part,
spans.py's (a date, stated_dates.py's); the answer model's prompt, prompt.py's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date

from ..cues.kinds import AskedKind, asked_kind, mentions
from ..cues.parser import preload_parser
from ..cues.relative_dates import time_phrases
from ..recall.question import said_in
from ..records import Answer, Context
from ..timeparse import MONTH_NAMES, format_human, named_periods, said_on
from .changes import change_line
from .choices import chosen, is_yes_no, options, verdict
from .kinds import instances, listed
from .quotes import quote, quote_several, source
from .sentences import Ranked, answering, matched, rank_sentences, sentences, someone_elses
from .question_parts import Focus, Part, asks_for_several, focus, question_parts
from .spans import (
    amounts,
    best_date,
    best_place,
    closest,
    content_stems,
    known_names,
    known_places,
    people,
    places,
    reply_place,
    stem,
    stems,
    what_phrases,
)
from .stated_dates import DAY, When, dates

EXTRACTIVE_SOURCES = 3
ANSWER_NEAR = 5  # see _quoted_sentence
SURE_NEAR = 20  # see sure
RECENT_MARGIN = 0.1  # now and plans: the newest candidate within this of the best one (_Reader.answer) …
CURRENT_MARGIN = 0.5  # … or within this, when it is as strong and about the same event and person
FOLLOW_DECAY = 0.15  # see _Reader._flow
STRENGTH_BONUS = 0.2  # see _Reader.answer
SUBJECT_BONUS = 0.1  # see _Reader._about
OTHER_PENALTY = 0.2
PHRASE_SENTENCES = 8  # what-questions parse only this many of the best sentences
KIND_STRENGTH = 3  # a what-span that is a thing of the kind the question asks for ("Which city …" → a city)
KIND_LIST = True  # a question asking for several things of a kind is answered by those the evidence names
# A what-question asking for one thing of a kind answered by a thing of that kind: off, it did not carry to the
# check half (LoCoMo single-hop line 0.392 -> 0.375; bench/quality_notes.md, "What transfers").
KIND_SPAN = False
KIND_SURE = True  # … the thing alone (else the sentence naming it is quoted)

_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|we|we're|we've|us|our)\b", re.I)


def _said_as(when: When, sentence: str, said: date | None, past: bool) -> str:
    """A date as the answer says it: a relative one by its anchor and what it resolves to ("last week" said
    on 9 June 2023 → "the week before 9 June 2023 (week of 29 May 2023)"): the day it was reckoned from
    shows how the answer was read."""
    if not when.written:
        for phrase, anchored, resolved in time_phrases(sentence, said, past):
            if sentence.find(phrase) == when.at and anchored != resolved:
                return f"{anchored} ({resolved})"
    return when.text


@dataclass(frozen=True)
class Reading:
    """What the reader found for one part of a question: the span, the evidence turn and sentence it was
    read in, and how surely it is of the kind asked (`_Found.strength`; -1: no span of that kind, a
    fallback)."""

    kind: str
    span: str
    index: int
    sentence: str
    strength: int
    newer: bool = False  # a newer statement replaced the best one (_Reader._current): the span says what holds now
    # a question about now read in the sentence nearest it of all ("Where is Sam working these days?" → the
    # new job's sentence), which the quote's ranking may put far down (`sure`)
    nearest: bool = False


@dataclass(frozen=True)
class _Found:
    score: float  # the sentence's score, or what it inherits from the sentence it follows (_Reader.flow)
    own: float  # the sentence's own score
    strength: int  # how surely the span is of the kind asked (spans.py: after a word of the question, …)
    span: str
    index: int  # of the evidence turn
    sentence: str


_QUANTITIES = {"budget", "price", "cost", "age", "salary", "rent", "distance", "temperature", "height", "weight",
               "number", "amount", "total", "score", "grade", "size", "population", "fee"}


class _Reader:
    """The evidence read for one question: who speaks, which names are places, how well each sentence
    follows the question, and the spans each kind of question part finds in it."""

    def __init__(self, context: Context, embedder, ranked: Ranked, wanted: AskedKind | None = None):
        self.context, self.embedder, self.ranked = context, embedder, ranked
        self.wanted = wanted or AskedKind()
        self.evidence = context.evidence
        texts = [ev.text for ev in self.evidence]
        self.speakers = frozenset(ev.speaker for ev in self.evidence if ev.speaker)
        self.places = known_places(texts, self.speakers)
        self.names = known_names(texts) | {w for s in self.speakers for w in s.split()}
        self.full_names = frozenset(name for text in texts for name, _ in people(text, set(), frozenset(), self.names))
        self.asked = content_stems(context.question)
        # what an event is called, without who and where: "visiting" in "When is Leo visiting Maya in Denver?"
        self.event = self.asked - stems(" ".join(self.speakers | self.places))
        named = [(context.question.find(s), s) for s in self.speakers if re.search(rf"\b{re.escape(s)}\b",
                                                                                  context.question)]
        self.subject = min(named)[1] if named else None  # "When is Leo visiting Maya?" is about Leo
        self.flow, self.window = self._flow()

    def _flow(self) -> tuple[dict[tuple[int, str], float], dict[tuple[int, str], set[str]]]:
        """Each sentence's score, or, when higher, FOLLOW_DECAY less than the best sentence before it in
        its turn, FOLLOW_DECAY less than the turn said just before it, twice that for the turn before
        that: an answer often comes a turn or two after the words that match the question ("I want to
        come visit." — "When?" — "I could fly in on December 15th"). With it, the word stems of that
        window (the sentence, those before it in its turn, the two turns before)."""
        own = {(i, sentence): score for score, sentence, i in self.ranked}
        best_turn: dict[int, float] = {}
        for (i, _), score in own.items():
            best_turn[i] = max(score, best_turn.get(i, score))
        ev = self.evidence
        flow, window = {}, {}
        for i in sorted(best_turn):
            before = [(j, hops) for j, hops in ((i - 1, 1), (i - 2, 2)) if j >= 0 and ev[j].session == ev[i].session
                      and ev[i].position - ev[j].position == hops]
            inherited = max((best_turn.get(j, -1.0) - FOLLOW_DECAY * hops for j, hops in before), default=-1.0)
            said = set().union(*(stems(ev[j].text) for j, _ in before))
            earlier = -1.0
            for sentence in sentences(ev[i].text):
                said |= stems(sentence)
                if (i, sentence) in own:
                    flow[(i, sentence)] = max(own[(i, sentence)], inherited, earlier - FOLLOW_DECAY)
                    window[(i, sentence)] = set(said)
                    earlier = max(earlier, own[(i, sentence)])
        return flow, window

    def span(self, kind: str, part: Part, want: Focus | None, sentence: str, i: int) -> tuple[str, int] | None:
        """(span, strength) of `sentence` for a part of this kind, or None when it holds none."""
        ev = self.evidence[i]
        if kind == "when":
            said = said_on(ev.time)
            plan = said if part.current and not part.past else None  # "When is …?" asks for what is to come
            when = best_date(dates(sentence, said, part.past), sentence, self.asked, part.text, plan)
            if when is None:
                return None
            topical = bool(stems(" ".join(sentence[:when.at].split()[-5:])) & self.event)  # "I start on June 1st"
            strength = 2 if topical else int(bool(self.event & self.window[(i, sentence)]))
            return _said_as(when, sentence, said, part.past), strength
        if kind == "where":
            found = best_place(sentence, places(sentence, self.places, self.speakers, self.asked), self.asked)
            return found or self._reply_place(sentence, i)
        if kind == "who":
            return next(iter(people(sentence, self.asked, self.places, self.names)), None)
        taken = [(w.at, w.end) for w in dates(sentence, said_on(ev.time))]  # a date is no number and no thing
        if kind == "how-many" or want is None:
            return next(iter(amounts(sentence, self.asked, part.text, taken)), None)
        if KIND_SPAN and self.wanted.kinds and not self.wanted.plural and not self.wanted.sort:
            kinded = [m.text for m in mentions(sentence, self.speakers) if m.kinds & set(self.wanted.kinds)
                      and not {stem(w) for w in m.text.lower().split()} <= self.asked]
            if kinded:
                return kinded[0], KIND_STRENGTH
        phrases = what_phrases(sentence, want, self.asked, self.speakers, taken)
        if not phrases:
            return None
        if phrases[0][1]:
            return phrases[0]
        return closest([p for p, _ in phrases], want.text, self.embedder), 0

    def _reply_place(self, sentence: str, i: int) -> tuple[str, int] | None:
        """A place opening the reply to a where-question (`cuemem_cli.answer.spans.reply_place`), strength 1."""
        ev = self.evidence
        if (i == 0 or ev[i - 1].session != ev[i].session or ev[i].position - ev[i - 1].position != 1
                or not ev[i].text.strip().startswith(sentence[:20])):
            return None
        name = reply_place(sentence, ev[i - 1].text, self.speakers)
        return (name, 1) if name else None

    def answer(self, part: Part) -> Reading:
        """The span that answers `part`, with the sentence and turn it was read in.

        The candidates are the sentences holding a span of the part's kind (for a what-question, of the
        PHRASE_SENTENCES best), scored by `_score`; for a question naming a period, those stating its
        day, else those said in it, come first. The best candidate wins, unless the question is about
        now or a plan (`_current`). A when-answer coarser than a day ("next month") takes a day inside
        it that the same turn or the speaker's next turns give (`_finer`); a short name the longest form
        the evidence gives it (`_full_name`). Without any candidate, `_fallback`."""
        want = focus(part, self.speakers) if part.kind == "what" else None
        if want is not None and want.noun and want.noun.lower() in _QUANTITIES:
            want = None  # "What is Sam's budget …?" asks for a number
        kind = part.kind if part.kind != "what" or want is not None else "how-many"
        look = self.ranked[:PHRASE_SENTENCES] if kind == "what" else self.ranked
        found = [_Found(self.flow[(i, sentence)], own, span[1], span[0], i, sentence) for own, sentence, i in look
                 if (span := self.span(kind, part, want, sentence, i))]
        if part.periods:
            stating = [f for f in found if self._states_period(f, part)]
            found = stating or [f for f in found if said_in(self.evidence[f.index].time, list(part.periods))] or found
        if not found:
            return self._fallback(part)
        best = first = max(found, key=self._score)
        if part.current:
            best = self._current(best, found, part, kind)
        newer = best.index != first.index
        if kind in ("where", "who"):
            best = replace(best, span=self._full_name(best.span))
        elif kind == "when":
            best = self._finer(best, part)
        top = self.ranked[0]
        nearest = part.now and (best.index, best.sentence) == (top[2], top[1])
        return Reading(part.kind, best.span, best.index, best.sentence, best.strength, newer, nearest)

    def _score(self, found: _Found) -> float:
        """How well a candidate answers: its sentence's flow, STRENGTH_BONUS per step of strength, and
        who said it (`_about`)."""
        return found.score + STRENGTH_BONUS * found.strength + self._about(found)

    def _current(self, best: _Found, found: list[_Found], part: Part, kind: str) -> _Found:
        """For a question about the present or a plan, the newest statement wins: among the candidates as
        strong as the best, with one of the question's event words nearby (`window`), said by the person
        asked about, whose own sentence scores within CURRENT_MARGIN of the best ("I'm going May 10 to May
        20 now" after "ten days in mid-April"), the newest. When the best is not that sure of its kind,
        only a question that says "now" takes the newest within RECENT_MARGIN. The newest statement of
        the chosen answer by the person asked about is then its source ("Greetings from Denver!" rather
        than the "I'm moving to Denver next month!" before it)."""
        top = self._score(best)
        found = [f for f in found if self.evidence[f.index].speaker in self._people(best)]

        def close(f: _Found, margin: float) -> bool:
            return self._score(f) - f.score + f.own >= top - margin

        same = [f for f in found if f.strength >= best.strength and self.event & self.window[(f.index, f.sentence)]
                and self.subject in (None, self.evidence[f.index].speaker) and close(f, CURRENT_MARGIN)]
        if best.strength and best in same:
            best = max(same, key=self._newest)
        elif part.now:
            best = max((f for f in found if self._score(f) >= top - RECENT_MARGIN), key=self._newest)
        if kind == "when" or self.subject is None:
            return best
        return max((f for f in found if f.span == best.span and f.strength and f.strength >= best.strength - 1
                    and self.evidence[f.index].speaker == self.subject and close(f, CURRENT_MARGIN)),
                   key=self._newest, default=best)

    def _people(self, found: _Found) -> set[str | None]:
        """Who speaks in the chat of `found` (in the evidence): a newer statement replaces an older one only
        when one of them made it. Over a whole memory "When is the trip to Portugal?" must not take a
        friend's later trip, said in another chat, for the trip's new dates; a person's own chats (an
        export's user and assistant) share their people, so a plan changed in a later chat still wins."""
        chat = self.evidence[found.index].conversation
        return {ev.speaker for ev in self.evidence if ev.conversation == chat}

    def _full_name(self, name: str) -> str:
        """The longest name the evidence gives for a short one: "Fernwood" → "Fernwood Robotics"."""
        longer = [n for n in self.places | self.full_names if n.startswith(name + " ")]
        return max(longer, key=len) if longer else name

    def _newest(self, found: _Found) -> tuple[str, int, float]:
        ev = self.evidence[found.index]
        return ev.time or "", ev.position, found.score

    def _about(self, found: _Found) -> float:
        """SUBJECT_BONUS when the question's subject said the sentence, OTHER_PENALTY less when someone
        else said it of themselves: asked "When did Leo start his new job?", Maya's "I start at the new
        office on the 28th" is about Maya."""
        if self.subject is None:
            return 0.0
        if self.evidence[found.index].speaker == self.subject:
            return SUBJECT_BONUS
        return -OTHER_PENALTY if _FIRST_PERSON.search(found.sentence) else 0.0

    def _states_period(self, found: _Found, part: Part) -> bool:
        """Whether the sentence states the day the question names ("I ran 8 miles yesterday", said on 15
        March, for "How far did Sam run on 14 March 2024?"): such sentences come first, then those said in
        the period. A longer period ("Where did Maya live in March 2023?") is a time things held in,
        not an event's day, so only when it was said counts."""
        days = [first for first, last in named_periods(part.text) if first == last]
        said = said_on(self.evidence[found.index].time)
        return any(w.first == w.last and w.first.isoformat() in days for w in dates(found.sentence, said, part.past))

    def _finer(self, best: _Found, part: Part) -> _Found:
        """A day inside a coarse date ("next month" → "I'm moving on August 19th"), from the same turn or
        the speaker's next turns of the session, with the sentence that gives it."""
        ev = self.evidence
        said = said_on(ev[best.index].time)
        coarse = best_date(dates(best.sentence, said, part.past), best.sentence, self.asked, part.text)
        if coarse is None or coarse.precision == DAY:
            return best
        i = best.index
        turns = [i] + [j for j in range(i + 1, min(i + 4, len(ev))) if ev[j].speaker == ev[i].speaker
                       and ev[j].session == ev[i].session and ev[j].position - ev[i].position <= 3]
        for j in turns:
            for sentence in sentences(ev[j].text):
                for w in dates(sentence, said_on(ev[j].time), part.past):
                    if w.precision == DAY and coarse.first <= w.first and w.last <= coarse.last:
                        return replace(best, span=w.text, index=j, sentence=sentence)
        return best

    def _fallback(self, part: Part) -> Reading:
        """No sentence holds a span of the part's kind: the noun phrase a cue of the best sentence's turn
        found at ingest, for a when-question the day it was said, else the best sentence; strength -1."""
        _, sentence, i = self.ranked[0]
        ev = self.evidence[i]
        if part.kind == "when" and ev.time:
            return Reading(part.kind, f"on {format_human(ev.time, with_time=False)}", i, sentence, -1)
        objects = [c for c in self.context.cues if c.turn == ev.source_id and c.kind == "triple" and c.object
                   and c.object.lower() in sentence.lower() and not stems(c.object) <= self.asked]
        if objects and part.kind == "what":
            return Reading(part.kind, max(objects, key=lambda c: c.score).object, i, sentence, -1)
        return Reading(part.kind, sentence, i, sentence, -1)


def _several(context: Context, answering: Ranked) -> list[tuple[str, int]]:
    """(sentence, evidence index) for a question asking for several things: the best answering sentence,
    then the best of each other turn among the ANSWER_NEAR best."""
    seen: dict[int, str] = {}
    for _, sentence, i in answering[:ANSWER_NEAR]:
        seen.setdefault(i, sentence)
    return [(sentence, i) for i, sentence in seen.items()]


def sure(reading: Reading, answering: Ranked, common: frozenset[str] = frozenset()) -> bool:
    """Whether the reader is sure of a span, so that it, not a quote, is the answer line: a date, place,
    person or number (not a what-phrase: measured, those are right too rarely) that reads as the kind
    asked (strength 1 or more: after a word of the question, a move, a counted noun…), read in one of the
    SURE_NEAR best answering sentences, in the newest statement of what holds now, or, for a question about
    now, in the sentence nearest the question of all (`Reading.nearest`). A question asking
    for two things is answered by its spans when the reader is sure of one of them (two quotes would
    not fit a line)."""
    near = reading.newer or reading.nearest or (reading.index, reading.sentence) in {(i, s) for _, s, i in
                                                                                  answering[:SURE_NEAR]}
    typed = reading.kind != "what" or (KIND_SURE and reading.strength >= KIND_STRENGTH)
    return near and typed and reading.strength >= 1 and _named(reading, common)


def _named(reading: Reading, common: frozenset[str]) -> bool:
    """Whether a place or person the reader found reads as a name: not a possessive ("Drive's", "Jasmine's":
    what follows was meant), and not one capitalised word that the evidence also writes in lower case, and
    never capitalised inside a sentence (`common_words`): "About", "Sounds", "Coupon" open a sentence;
    "Lisbon, and we stayed a week" is a name. Measured on the lone wrong answer lines: ShareGPT 8 -> 5
    (line 0.604 -> 0.614), REALTALK 23 -> 21, LoCoMo single-hop + temporal 34 -> 30 (line 0.426 -> 0.427);
    the sample questions unchanged."""
    if reading.kind not in ("where", "who"):
        return True
    if re.search(r"['’]s$", reading.span):
        return False
    return " " in reading.span.strip() or reading.span.lower() not in common


_ASKS_DAY = re.compile(r"\b(what|which) (day|date)\b|\bexact date\b", re.I)


def vague_date(reading: Reading, question: str) -> bool:
    """Whether a date is too coarse to be the answer alone: a year its sentence does not write ("this
    year" resolved to "2024" for "When does Elise's semester start?"), or a month without its day when
    the question names that month already ("When did Melanie go camping in June?" → "June 2023") or
    asks for a day. The quote of its sentence is the line instead. Measured on the lone wrong answer
    lines: REALTALK 21 -> 17, LoCoMo's answerable questions 34 -> 27; every set's answer line share the same."""
    if reading.kind != "when":
        return False
    span = reading.span.strip()
    if re.fullmatch(r"\d{4}", span):
        return span not in reading.sentence
    month = re.fullmatch(r"([A-Z][a-z]+) \d{4}", span)
    return bool(month and month[1] in MONTH_NAMES
                and (re.search(rf"\b{month[1]}\b", question, re.I) or _ASKS_DAY.search(question)))


def common_words(texts: list[str]) -> frozenset[str]:
    """The words the texts write in lower case and never capitalise inside a sentence: not names."""
    lower = {w for text in texts for w in re.findall(r"\b[a-z][a-z']+\b", text)}
    return frozenset(lower - {name.lower() for name in known_names(texts)})


def _quoted_sentence(reading: Reading, answering: Ranked) -> tuple[str, int]:
    """The sentence to quote, and its evidence turn: the one the reader read a span of the kind asked in,
    when it is among the ANSWER_NEAR best answering sentences (`answering`) or says what holds now (a
    newer statement replaced the best one), else the best answering sentence. Measured: quoting the
    best answering sentence alone held the gold answer more often on real chats (ShareGPT, REALTALK)
    and about as often on LoCoMo, but lost the sample dialogues' spread and changed facts ("his name is
    Biscuit, he's a beagle" after "I adopted a dog", "I moved to Denver" after "I live in Portland")."""
    near = {(i, sentence) for _, sentence, i in answering[:ANSWER_NEAR]}
    if reading.newer or (reading.strength >= 0 and (reading.index, reading.sentence) in near):
        return reading.sentence, reading.index
    _, sentence, i = answering[0]
    return sentence, i


def answer_extractively(context: Context, embedder, sources: int = EXTRACTIVE_SOURCES) -> Answer:
    """Offline, no model involved: the answer line (`_line`), then the turn it was read in as a source
    (speaker, turn id, day, text), then the turns of the best sentences (rank_sentences) up to `sources`
    turns in all. No answer when nothing matched (`matched`) or what answers is someone else's
    (`someone_elses`).

    The spans each part of the question asks for (question_parts: "What breed is the dog Maya adopted,
    and when?" has two; _Reader.answer): when → a date or range (`cuemem_cli.answer.stated_dates.dates`:
    "June 1st", "the 15th of November, back on the 18th", "last weekend" resolved against the day it was said
    and given with it); where → a capitalised place after in/at/to/from/into/on/along, or a name the evidence uses so
    elsewhere; who → a name with its title ("Professor de Vries"), or a relative ("my mother"); how many
    → a number and what it counts; what → the noun phrase (spaCy) nearest the question's focus ("breed"
    → "beagle"). A span the question already says answers nothing, so "I adopted a dog last weekend!" is
    passed over for the breed. In every source, relative time phrases carry their date ("last weekend
    [the weekend before 14 May 2023: weekend of 6 May 2023]").

    Each choice was measured (bench/RESULTS.md, "Offline answers"): on LoCoMo's single-hop and temporal
    questions the span and its resolved date, names left out of the sentence vectors, the whole turn
    as source, three source turns; for the answer line (issue 49) on ShareGPT, REALTALK and LoCoMo, the
    quote, the answering rank and when a span is sure.
    """
    parts = question_parts(context.question)
    if any(p.kind == "what" for p in parts):
        preload_parser()
    ranked = rank_sentences(context, embedder, short_places=any(p.kind == "where" for p in parts))
    if not matched(context, ranked):
        return Answer(text=None, kind="extractive")  # form None: nothing answers
    best_first = answering(context, ranked)
    if someone_elses(context, best_first):
        return Answer(text=None, kind="extractive")
    wanted = asked_kind(context.question)
    reader = _Reader(context, embedder, ranked, wanted)
    readings = [reader.answer(part) for part in parts]
    changed = change_line(context, parts[0], readings[0].index, readings[0].span, sure(readings[0], best_first)) \
        if len(parts) == 1 and not options(context.question) else None
    if changed is not None and (not is_yes_no(context.question) or changed[0].startswith("contradiction")):
        form, (line, found) = "answer", changed  # a fact that changed: the latest, and what it was before
    else:
        form, line, found = _line(context, readings, best_first, wanted, reader)
    lines = [line]
    used: list[int] = []
    for i in found:
        if i not in used:
            used.append(i)
            lines.append("source: " + source(context.evidence[i]))
    for _, _, j in ranked:
        if len(used) >= sources:
            break
        if j not in used:
            used.append(j)
            lines.append("also: " + source(context.evidence[j]))
    return Answer(text="\n".join(lines), kind="extractive", form=form)


def _line(context: Context, readings: list[Reading], best_first: Ranked, wanted: AskedKind | None = None,
          reader: _Reader | None = None) -> tuple[str, str, list[int]]:
    """(form, answer line, the evidence turns it was read in). "A or B?" → the option the best sentences
    name alone (choices.chosen); yes or no → the verdict and the quote that decides it; several things
    asked for → the best sentences of several turns (quote_several); a span the reader is sure of →
    the spans of the question's parts; else the quote of the sentence that answers best."""
    evidence, question = context.evidence, context.question
    best, at = _quoted_sentence(readings[0], best_first)
    common = common_words([ev.text for ev in evidence])
    sure_of = [sure(r, best_first, common) and not vague_date(r, question) for r in readings]
    offered = options(question)
    picked = chosen(offered, [sentence for _, sentence, _ in best_first[:ANSWER_NEAR]]) if offered else None
    if offered and picked:
        return "answer", offered[picked[0]][0], [best_first[picked[1]][2]]
    if is_yes_no(question):
        return "quote", quote(evidence[at], best, lead=f"{verdict(best)}: "), [at]
    if KIND_LIST and wanted and wanted.kinds and not wanted.sort and (wanted.plural or asks_for_several(question)) \
            and not any(sure_of):
        named = [s for s in {ev.speaker for ev in evidence if ev.speaker}
                 if re.search(rf"\b{re.escape(s)}\b", question)]
        found = instances(evidence, best_first, wanted.kinds, reader.asked if reader else set(),
                          named[0] if len(named) == 1 else None)
        if found:
            return "answer", listed(found, evidence), list(dict.fromkeys(f.index for f in found))
    if asks_for_several(question) and not any(sure_of):
        several = _several(context, best_first)
        return "quote", quote_several([(evidence[i], sentence) for sentence, i in several]), [i for _, i in several]
    if all(sure_of) or (len(readings) > 1 and any(sure_of)):
        return "answer", "; ".join(dict.fromkeys(r.span for r in readings)), [r.index for r in readings]
    return "quote", quote(evidence[at], best), [at]
