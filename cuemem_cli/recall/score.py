"""Each candidate turn's score: what it says itself, what its neighbours pull it up by, and how
strongly the chats of its people hold the question.

    own(t)   = cue_weight · best cue similarity of t  (candidates without a top-m cue: the m-th similarity)
             + (1 − cue_weight) · similarity of t as a whole: its turn vector, its own tokens read with
                               the turn before it in the session (ingest.prepare.embed_turns)
             + speaker_weight  if t was said by a person the question names (by label, or by a name
                               t's chat calls them: recall/people.py), or by the role its pronouns
                               name in a user/assistant chat (addressed_roles)
             + date_weight     if the question names a day, month or year and t was said then
                               (or up to a week later: people tell of things in the days after)
             + kind_weight     if the question asks for a kind of thing ("What sports …") and t, said by
                               a person it names (by anyone if it names none), names a thing of that
                               kind ("basketball": recall/kinds.py)
    score(t) = own(t)
             + temporal_weight · max own(u) over temporal neighbours u in the same session
             + semantic_weight · max own(u) · edge weight over semantic neighbours u
             + lexical_weight  · BM25(t) / best BM25
             − asking_weight   if t only asks the one it talks to something (`asks_only`)
             + participant_weight  if t is in a chat where a person the question names took part
             + circle_weight · (best similarity of the memory's top-m cues in the chats of t's people,
                               over the best of all: `circle_strength`)

A question that names people who took part in some of the memory's chats (not all of them) also takes
the top-m cues of those chats beside the memory's top-m (`participant_cues`): in a memory of many people's
chats, "What did Caroline research?" should not spend its anchors on the lives of others. A question
narrowed to one chat, or naming nobody, or naming people in every chat (the "user" of a ChatGPT export),
is scored as without these two terms.

In a memory of several people's chats the last term lifts the people who hold the question's best cues
(all chats of the same people are one circle: one chat, or a user/assistant export, gets the same lift
everywhere, i.e. none), and one hop follows a semantic edge only between chats that have a person in
common (`within_circles`): a question naming nobody, or a name two people share, is not filled with
the turns of lives the memory holds beside the one it is about.

Why each term (each measured as an ablation): a turn's best cue finds the precise fact, its whole
vector finds the turn about the topic, and the turn before it tells what a short reply is about; a
person's facts are mostly in their own turns (names are kept out of the vectors, see cues/statements.py,
so this is where they count); an answer usually sits next to the question that prompted it, in the
same session; rare words (names of places, pets, books) are
what BM25 finds and MiniLM blurs; "what did she do on 25 May, 2022" names the day the turn was said.
A turn that only asks ("What kind of food do you like?") states no fact, yet matches a question by its
form (MiniLM puts questions near questions): such turns are a tenth as often evidence as the others
(REALTALK's dev chats 0.07 % against 0.67 % of candidates, LoCoMo 0.03 % against 0.37 %). Its
neighbours still count its own score: the answer follows it.
The weights are round values from the middle of a flat plateau (bench/quality_notes.md), not a fit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..records import Cue, Turn
from .question import Asked, said_in
from .settings import Settings
from .view import Hops


def best_cues(hits: list[tuple[Cue, float]]) -> dict[int, tuple[Cue, float]]:
    """Each anchor turn's best cue and its similarity (hits come best first)."""
    best: dict[int, tuple[Cue, float]] = {}
    for cue, sim in hits:
        best.setdefault(cue.turn_id, (cue, sim))
    return best


@dataclass
class Candidates:
    """The turns a question may show and how each was reached: `best` the anchors' best cues, `lexical` the
    full-text hits (turn → BM25), `hops` the one-hop edges followed from them; `floor` the m-th cue
    similarity, which a candidate without a cue of its own counts."""

    ids: list[int]
    turns: dict[int, Turn]
    best: dict[int, tuple[Cue, float]]
    lexical: dict[int, float]
    hops: Hops
    floor: float
    kinds: set[int] = field(default_factory=set)  # those that name a thing of the kind asked (recall/kinds.py)


def score(candidates: Candidates, whole: np.ndarray, lift: np.ndarray, asked: Asked,
          settings: Settings) -> tuple[dict[int, float], dict[int, str]]:
    """The module docstring's formula over all candidates at once (NumPy), and how each came in. `whole`:
    each candidate's similarity as a whole (NaN: it has no turn vector); `lift`: its circle term."""
    ids, turns, best, lexical = candidates.ids, candidates.turns, candidates.best, candidates.lexical
    n = len(ids)
    at = {tid: i for i, tid in enumerate(ids)}
    cue = np.full(n, candidates.floor, dtype=np.float32)
    for tid, (_, sim) in best.items():
        cue[at[tid]] = sim
    whole = np.where(np.isnan(whole), cue, whole)  # a turn without a vector (older database) counts its cue
    people = np.array([asked_about(turns[tid], asked) for tid in ids], dtype=np.float32)
    dated = np.array([said_in(turns[tid].time, asked.periods) for tid in ids], dtype=np.float32) \
        if asked.periods else np.zeros(n, dtype=np.float32)
    kind = np.array([tid in candidates.kinds for tid in ids], dtype=np.float32) if candidates.kinds \
        else np.zeros(n, dtype=np.float32)
    own = (settings.cue_weight * cue + (1 - settings.cue_weight) * whole
           + settings.speaker_weight * people + settings.date_weight * dated + settings.kind_weight * kind)
    pulled = _pulled(candidates, own, settings)
    lex = np.zeros(n, dtype=np.float32)
    top_lexical = max(lexical.values(), default=0.0)
    if top_lexical > 0:
        for tid, value in lexical.items():
            lex[at[tid]] = settings.lexical_weight * value / top_lexical
    asking = np.array([asks_only(turns[tid].text) for tid in ids], dtype=np.float32)
    total = own + pulled["temporal"] + pulled["semantic"] + lex + lift - settings.asking_weight * asking
    if asked.involved:
        total += settings.participant_weight * np.array([turns[tid].conversation in asked.involved for tid in ids],
                                                        dtype=np.float32)
    scores = dict(zip(ids, total.tolist(), strict=True))
    via = {tid: "anchor" if tid in best else "lexical" if tid in lexical else "kind" if kind[i] and not (
           pulled["temporal"][i] or pulled["semantic"][i])
           else "temporal" if pulled["temporal"][i] >= pulled["semantic"][i] else "semantic"
           for i, tid in enumerate(ids)}
    return scores, via


_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i’m|im|i've|i’ve|i'd|i’d|i'll|i’ll|me|my|mine|myself|we|our|ours|us)\b",
                           re.IGNORECASE)


@lru_cache(maxsize=65536)
def asks_only(text: str) -> bool:
    """Whether a turn only asks something of the one it talks to: it ends with a question mark and says
    nothing of its writer (no first person): "How about you?", "Do you like sushi?"."""
    return text.rstrip().endswith("?") and not _FIRST_PERSON.search(text)


def asked_about(turn: Turn, asked: Asked) -> bool:
    """Whether the question names the person who said `turn`: by label, by a name its chat calls them, or
    by the role its pronouns name."""
    return (turn.speaker in asked.mentioned or turn.role in asked.roles
            or (turn.conversation, turn.speaker or turn.role) in asked.known_as)


def _pulled(candidates: Candidates, own: np.ndarray, settings: Settings) -> dict[str, np.ndarray]:
    """What each candidate's neighbours pull it up by, per kind of edge: the best own score among its temporal
    neighbours in the same session, and among its semantic neighbours times the edge's weight."""
    ids, turns, hops = candidates.ids, candidates.turns, candidates.hops
    n = len(ids)
    pulled = {"temporal": np.zeros(n, dtype=np.float32), "semantic": np.zeros(n, dtype=np.float32)}
    if not len(hops.src):
        return pulled
    array = np.array(ids, dtype=np.int64)
    order = np.argsort(array)
    src, dst = (order[np.searchsorted(array[order], end)] for end in (hops.src, hops.dst))
    temporal, weight = hops.temporal, hops.weight
    sessions: dict[tuple[str, str | None], int] = {}  # a session is one conversation's
    session = np.array([sessions.setdefault((turns[tid].conversation, turns[tid].session), len(sessions))
                        for tid in ids])
    same_session = session[src] == session[dst]
    factor = np.where(temporal, settings.temporal_weight, settings.semantic_weight * weight)
    positive = np.maximum(own, 0.0)
    # Edges count in both directions: one end of each is a seed, the other any candidate.
    for kind, keep in (("temporal", temporal & same_session), ("semantic", ~temporal)):
        np.maximum.at(pulled[kind], dst[keep], factor[keep] * positive[src[keep]])
        np.maximum.at(pulled[kind], src[keep], factor[keep] * positive[dst[keep]])
    return pulled


def within_circles(hops: Hops, candidates: list[int], seeds: list[int], turns: dict[int, Turn],
                   people: dict[str, frozenset[str]]) -> tuple[Hops, list[int]]:
    """The hops between chats that have a person in common, and the candidates they leave (the seeds, and
    the turns still reached). A semantic edge between chats of people who never talk to each other is a
    likeness of topic between different lives: in a memory of ten people's chats (LoCoMo as exports)
    following them filled the budget with other people's turns (bench/memory_notes.md, "The last as-exports
    gap"). In one person's history every chat has that person, so every edge is kept: the same trip told to
    a friend and to an assistant stays linked. (Keeping only edges between chats of the same set of people
    measured the same on LoCoMo and would cut those.)"""
    if not len(hops.src):
        return hops, candidates
    circle = {tid: people.get(turn.conversation) for tid, turn in turns.items()}

    def related(a: int, b: int) -> bool:
        first, second = circle[a], circle[b]
        return first is None or second is None or bool(first & second)

    keep = np.fromiter((related(s, d) for s, d in zip(hops.src.tolist(), hops.dst.tolist(), strict=True)),
                       bool, len(hops.src))
    if keep.all():
        return hops, candidates
    hops = Hops(*(column[keep] for column in hops))
    reached = {*seeds, *hops.dst.tolist()}
    return hops, [tid for tid in candidates if tid in reached]


def circle_strength(candidates: list[int], turns: dict[int, Turn], hits: list[tuple[Cue, float]],
                    people: dict[str, frozenset[str]]) -> np.ndarray:
    """Per candidate, how strongly the chats of its people hold the question: the best similarity of the
    memory's top cues in those chats over the best of all (0 for people with none of them). All chats of
    one set of people (a single chat, a user/assistant export) get the same lift: the ranking is as
    without it. In a memory of several people's chats it ranks the turns of the people the question is
    about above other people's, where the question names nobody or a name several people share. The hits'
    turns are among `turns`: each is a seed."""
    best: dict[frozenset[str] | None, float] = {}
    for cue, sim in hits:
        if cue.turn_id in turns:
            circle = people.get(turns[cue.turn_id].conversation)
            best[circle] = max(best.get(circle, 0.0), sim)
    top = max(best.values(), default=0.0)
    if top <= 0:
        return np.zeros(len(candidates), dtype=np.float32)
    return np.array([best.get(people.get(turns[tid].conversation), 0.0) / top for tid in candidates],
                    dtype=np.float32)
