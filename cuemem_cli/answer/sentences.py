"""Which sentences of the evidence answer a question, best first, and whether any does.

`rank_sentences` is the reader's ranking (answer/extractive.py reads spans off it, with margins measured on
it); `answering` ranks the same sentences again for the one to quote. `matched` and `someone_elses` say
when nothing in the evidence answers: the offline answer then gives none.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

from ..models.embedders import embed_questions
from ..recall.excerpt import GAP
from ..recall.question import fts_query
from ..recall.view import in_context
from ..records import Context, Evidence
from ..text import sentences as split_sentences
from ..text import without_names
from .spans import content_stems, places, stems

Ranked = list[tuple[float, str, int]]  # (score, sentence, evidence index), best first

EXTRACTIVE_CONTEXT_WEIGHT = 0.7
TURN_SCORE_WEIGHT = 1.0
ANSWER_TURN_WEIGHT = 0.8  # see answering
SAID_WEIGHT = 0.45  # see _overlap
WINDOW_WEIGHT = 1.0
NO_EVIDENCE_FLOOR = 0.20  # see `matched`
OWNER_MARGIN = 0.3  # see someone_elses

_WORD = re.compile(r"[a-z0-9]+")
_TITLE_END = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Mx|Prof|St|Jr|Sr)\.$")


def sentences(text: str) -> list[str]:
    """The project's sentences (text.sentences), a title's full stop not taken for a sentence's
    end ("They assigned me Dr. Helen Marsh." is one sentence), an excerpt's gap marks dropped."""
    out: list[str] = []
    for sentence in split_sentences(text):
        sentence = sentence.strip().strip(GAP).strip()
        if out and _TITLE_END.search(out[-1]):
            out[-1] = f"{out[-1]} {sentence}"
        elif sentence:
            out.append(sentence)
    return out


def shared_words(question: str, context: Context) -> set[str]:
    """The question's content words (as the lexical search reads them) that some evidence turn also
    uses, compared on their first five letters so "painting" meets "paints"."""
    stems = {w[:5] for w in fts_query(question).replace('"', " ").replace(" OR ", " ").split()}
    said = {w[:5] for ev in context.evidence for w in _WORD.findall(ev.text.lower())}
    return stems & said


def rank_sentences(context: Context, embedder, short_places: bool = False) -> Ranked:
    """(score, sentence, evidence index) for every candidate sentence of the evidence, best first.

    Questions are left out (the other speaker asking "where did you go?" echoes the question best and
    answers nothing), and each sentence is scored in context, its vector plus EXTRACTIVE_CONTEXT_WEIGHT
    of the turn said just before it when the evidence holds that turn: "His name is Biscuit, he's a
    beagle" answers "What breed is Maya's dog?" because of the "name? breed?" before it. Reading in
    context and leaving questions out each made the chosen sentences hold a gold evidence turn more
    often, and the result barely moves with the weight (bench/RESULTS.md, "Offline answers: does the
    extractive answer hold the gold answer?"). With `short_places` (where-questions) a sentence under
    four words is kept when it names a place: "Greetings from Denver!" is where someone is.
    """
    found: list[tuple[str, int]] = []
    names = frozenset(ev.speaker for ev in context.evidence if ev.speaker)
    for i, ev in enumerate(context.evidence):
        for sentence in sentences(ev.text):
            if len(sentence.split()) >= 4 or (short_places and places(sentence, speakers=names)):
                found.append((sentence, i))  # greetings and one-word replies answer nothing
    candidates = [c for c in found if not c[0].endswith("?")] or found  # a question answers no question
    if not candidates:
        return []
    evidence = context.evidence
    led = [i for i in sorted({i for _, i in candidates}) if i and follows(evidence, i)]  # the turn before is there too
    plain = [without_names(t, names) or t for t in [context.question] + [c[0] for c in candidates]]
    vectors = embedder.embed(plain[1:] + [evidence[i - 1].text for i in led])
    question, own = embed_questions(embedder, plain[:1])[0], vectors[:len(candidates)]
    before = dict(zip(led, vectors[len(candidates):], strict=True))
    previous = np.vstack([before.get(i, np.zeros_like(question)) for _, i in candidates])
    scores = in_context(own, previous, EXTRACTIVE_CONTEXT_WEIGHT) @ question
    scores = scores + TURN_SCORE_WEIGHT * np.array([evidence[i].score for _, i in candidates])
    return [(float(scores[k]), *candidates[k]) for k in np.argsort(-scores, kind="stable").tolist()]


def answering(context: Context, ranked: Ranked) -> Ranked:
    """`ranked` again, for the sentence to quote: each score plus ANSWER_TURN_WEIGHT more of its turn's
    evidence score and how much of the question it says (`_overlap`). The reader's spans keep the plain
    ranking, whose margins they were measured with."""
    evidence = context.evidence
    names = frozenset(ev.speaker for ev in evidence if ev.speaker)
    before = {i: evidence[i - 1].text for i in {i for _, _, i in ranked} if i and follows(evidence, i)}
    extra = _overlap(context.question, [(sentence, i) for _, sentence, i in ranked], before, names)
    scores = [score + ANSWER_TURN_WEIGHT * evidence[i].score + extra[k] for k, (score, _, i) in enumerate(ranked)]
    order = sorted(range(len(ranked)), key=lambda k: -scores[k])
    return [(scores[k], ranked[k][1], ranked[k][2]) for k in order]


def follows(evidence: tuple[Evidence, ...], i: int) -> bool:
    """Whether evidence turn i was said right after evidence turn i - 1."""
    return (evidence[i - 1].conversation == evidence[i].conversation and evidence[i - 1].session == evidence[i].session
            and evidence[i - 1].position == evidence[i].position - 1)


def _overlap(question: str, candidates: list[tuple[str, int]], before: dict[int, str],
             names: frozenset[str]) -> np.ndarray:
    """How much of the question each sentence says: the share of the question's content words (rare ones
    weigh more: inverse document frequency over the candidate sentences) in the sentence, SAID_WEIGHT of
    it, plus the share in the sentence or the turn before it, WINDOW_WEIGHT of it. Speakers' names are
    left out, as in the vectors."""
    asked = content_stems(question) - stems(" ".join(names))
    if not asked:
        return np.zeros(len(candidates))
    said = [stems(sentence) for sentence, _ in candidates]
    seen = Counter(w for words in said for w in words & asked)
    idf = {w: math.log((len(said) + 1) / (seen[w] + 0.5)) for w in asked}
    total = sum(idf.values())
    prior = {i: stems(text) & asked for i, text in before.items()}
    return np.array([(SAID_WEIGHT * sum(idf[w] for w in words & asked)
                      + WINDOW_WEIGHT * sum(idf[w] for w in (words & asked) | prior.get(i, set()))) / total
                     for words, (_, i) in zip(said, candidates, strict=True)])


def matched(context: Context, ranked: Ranked) -> bool:
    """Whether any evidence answers at all: the question shares a content word with the evidence and its
    best sentence scores at least NO_EVIDENCE_FLOOR.

    Similarity alone cannot tell: "???" or "asdf" still lands near some sentence, as near as some real
    questions' best sentences do. A shared content word separates: real questions have one, junk
    ones rarely. The floor lies under the lowest best score of a real question, so it silences no real
    question and most junk and unrelated ones (bench/experiments/offline_floor.py; its figures in
    bench/RESULTS.md, "Offline answers: does the extractive answer hold the gold answer?").
    A speaker the question names counts as a shared word: "What is Sam's diet?" asks about Sam, whose own
    turns never say "Sam" nor "diet" ("I'm vegetarian").
    """
    named = {w.lower() for ev in context.evidence if ev.speaker for w in ev.speaker.split()}
    asks_about = named & {w.lower() for w in re.findall(r"[A-Za-z]+", context.question)}
    return bool(ranked) and ranked[0][0] >= NO_EVIDENCE_FLOOR and bool(shared_words(context.question, context)
                                                                       or asks_about)


_SECOND_PERSON = re.compile(r"\b(?:your|yours|yourself)\b", re.I)


_SELF = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself|we|we're|we've|us|our|ours)\b", re.I)


def someone_elses(context: Context, answering: Ranked) -> bool:
    """Whether what answers the question is someone else's: it names one of the people speaking (X), and
    a sentence about another one answers it better, by more than OWNER_MARGIN, than any about X. "What
    country is Melanie's grandma from?" when only Caroline said "my grandma is from Sweden": memory holds
    nothing about Melanie's grandma, and answering with Caroline's would be wrong (LoCoMo's adversarial
    questions: most swap the person). A sentence is about its speaker when it says I/my, about the one
    spoken to when it says your (a bare "you" is as often anyone: "three, if you count Figue"), and a
    speaker's sentence saying neither is about the speaker. A sentence about another one counts only when it
    says a word the question asks about (besides the names): "I finally went to that pottery class!" ranked
    above Leo's "I got the job at Fernwood Robotics!" answers nothing of "Where does Leo work?" (LoCoMo's
    abstention 0.323 -> 0.321, false abstention unchanged). Measured on LoCoMo's adversarial questions it
    abstains on a third of them, and on 1-4 % of questions that have an answer (bench/RESULTS.md)."""
    evidence = context.evidence
    named = {ev.speaker for ev in evidence
             if ev.speaker and re.search(rf"\b{re.escape(ev.speaker)}\b", context.question)}
    if len(named) != 1:
        return False
    asked = next(iter(named))

    def about_asked(sentence: str, speaker: str | None) -> bool | None:
        if _SELF.search(sentence):
            return speaker == asked
        if _SECOND_PERSON.search(sentence):
            return speaker != asked
        return True if speaker == asked else None

    asked_words = content_stems(context.question) - stems(" ".join(ev.speaker for ev in evidence if ev.speaker))
    best: dict[bool, float] = {}
    for score, sentence, i in answering:
        about = about_asked(sentence, evidence[i].speaker)
        if about is False and asked_words and not stems(sentence) & asked_words:
            continue  # says nothing the question asks about: it answers nothing, whoever's it is
        if about is not None and about not in best:
            best[about] = score
    return best.get(False, -math.inf) - best.get(True, -math.inf) > OWNER_MARGIN
