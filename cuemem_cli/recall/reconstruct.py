"""Question → top cues → anchor turns → one hop over the turn graph → scored, chronological evidence.

A question ranges over the whole memory, every conversation at once, unless it is narrowed to some
(`resolve_scope`: by name, or by a title that names one conversation). The paper adds every one-hop
neighbour of every anchor. Measured on LoCoMo at a 2,000-token budget that
spends most of the budget on neighbours that do not help (bench/RESULTS.md), so here expansion must earn
its tokens: anchors, their one-hop neighbours and lexical (FTS5) hits are all *candidates*, and each gets
a score; the budget is filled by score, then the chosen turns are put back in chronological order.

The score is score.py's; the evidence block and its budget evidence.py's; a question's own
features (words, pronouns, periods) question.py's; which conversations it ranges over scope.py's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..cues.kinds import asked_kind
from ..errors import CuememError
from ..models.embedders import embed_questions
from ..records import ChangeLink, Context, Cue, Evidence, ScoredCue, Turn
from ..store.base import TURN_ALONE, Store, change_records, check_embedder, has_vectors, kind_index, turn_vector_text
from ..text import without_names
from .changes import PAIR_RANK, kept_together, links
from .evidence import chronological, context_tokens, fill_budget
from .excerpt import Excerpts
from .kinds import kind_turns
from .lines import turn_cost
from .people import Named, named_people
from .question import Asked, addressed_roles, fts_query, question_periods
from .scope import Scope, resolve_scope
from .score import Candidates, asked_about, best_cues, circle_strength, score, within_circles
from .settings import Settings
from .view import Hops, MemoryView, StoreSource, memory_source


def reconstruct(store: Store, embedder, question: str, conversations: str | Sequence[str] | None = None,
                settings: Settings = Settings(), as_of: str | None = None, held_at: str | None = None) -> Context:
    """The evidence for `question` from the whole memory, or from the conversations named (`resolve_scope`).

    `as_of` is the question time the answer prompt states; `held_at` (ISO) limits memory to what it
    held then: turns said after it, and undated turns stored after it, are never candidates, anchors
    or graph neighbours (`ask --as-of`). A narrowed question never reaches past its conversations, not
    even over a semantic edge into another one."""
    if not question.strip():
        raise CuememError("the question is empty", 'ask something, e.g. "Where does Maya live now?"')
    scope = resolve_scope(store, conversations)
    _check_memory(store, embedder, settings)
    clock = _Clock()
    source = memory_source(store, embedder.dim)
    speakers = source.speakers(scope.ids)
    named = named_people(source, question, speakers, scope.ids, learned=settings.learned_names)
    mentioned = set(named.labels)
    topic = without_names(question, [*speakers, *named.words]) or question
    vector = embed_questions(embedder, [topic])[0]
    clock.lap("embed_query")

    involved = _involved(store, source, named, scope) \
        if (named.labels or named.known_as) and (settings.participant_weight or settings.participant_cues) else {}
    if len(involved) >= scope.held:
        involved = {}  # the people named took part in every chat asked: nothing to tell the chats apart
    hidden = _Hidden(*store.turns_not_held_at(held_at, scope.ids)) if held_at else _Hidden()
    hits, memory_hits = _cue_hits(source, vector, scope, list(involved), hidden, settings)
    lexical = _lexical_hits(store, topic, scope, hidden, settings)
    clock.lap("cue_search")

    floor = memory_hits[-1][1] if memory_hits else 0.0  # the memory's m-th similarity
    candidates = _expand(source, hits, lexical, floor, scope, hidden, settings)
    # Mix the turn before into turn vectors of the turn alone (view.in_context).
    mix = settings.context_weight if turn_vector_text(store) == TURN_ALONE else 0.0
    asked = Asked(frozenset(mentioned), frozenset(addressed_roles(question)), tuple(question_periods(question)),
                  frozenset(involved.values()), named.known_as)
    wanted = asked_kind(question)
    kinds = wanted.kinds if settings.kind_weight and len(wanted.kinds) <= settings.kind_max and (
        wanted.plural or not settings.kind_several) else ()
    if kinds:
        about = (lambda turn: asked_about(turn, asked)) if asked.mentioned or asked.roles or asked.known_as else None
        candidates.kinds = set(kind_turns(store, kinds, scope.ids, hidden.turns, source.turns_by_id,
                                          lambda ids: source.turn_similarities(ids, vector, mix), about, settings))
        new = [tid for tid in candidates.kinds if tid not in candidates.turns]
        candidates.turns.update(source.turns_by_id(new))
        candidates.ids += [tid for tid in new if tid in candidates.turns]
    lift = np.zeros(len(candidates.ids), dtype=np.float32)
    if settings.circle_weight and scope.held > 1:
        people = source.people()
        candidates.hops, candidates.ids = within_circles(candidates.hops, candidates.ids,
                                                         list(dict.fromkeys([*candidates.best, *lexical])),
                                                         candidates.turns, people)
        lift = np.float32(settings.circle_weight) * circle_strength(candidates.ids, candidates.turns, memory_hits,
                                                                    people)
    scores, via = score(candidates, source.turn_similarities(candidates.ids, vector, mix), lift, asked, settings)
    clock.lap("expand")

    turns = candidates.turns
    ranked = [turns[tid] for tid in sorted(candidates.ids, key=lambda tid: (-scores[tid], chronological(turns[tid])))]
    records = change_records(store)
    changes = records.changes_of_turns([t.id for t in ranked[:PAIR_RANK]]) if records is not None and ranked else []
    if scope.ids is not None:
        changes = [c for c in changes if c.conversation in scope.names]
    ranked, brought = kept_together(ranked, scores, changes, question, source.turns_by_id, hidden.turns)
    via.update(dict.fromkeys(brought, "change"))
    excerpts = Excerpts(source, vector, settings.excerpt_tokens, ranked, kinds)
    chosen = sorted(fill_budget(ranked, settings.budget, excerpts), key=chronological)
    if records is not None and chosen:
        changes = records.changes_of_turns([t.id for t in chosen])
    index = kind_index(store)
    stored = index.turn_kinds([t.id for t in chosen]) if index is not None and chosen else {}
    evidence = tuple(_evidence(t, scores[t.id], via[t.id], candidates.best.get(t.id), t.id in excerpts.cut,
                               links(changes, t.id, hidden.turns), stored.get(t.id, ()))
                     for t in chosen)
    source_of = {tid: turn.source_id for tid, turn in turns.items()}
    cues = tuple(
        ScoredCue(cue.subject, cue.relation, cue.object, round(sim, 4), source_of.get(cue.turn_id, "?"), cue.kind)
        for cue, sim in hits
    )
    clock.lap("trim")
    return Context(question=question, conversations=scope.names, as_of=as_of, cues=cues, evidence=evidence,
                   tokens=context_tokens(chosen), timings_ms=clock.total(), kinds=wanted.kinds)


def _involved(store: Store, source: MemoryView | StoreSource, named: Named, scope: Scope) -> dict[int, str]:
    """The conversations (id → name) that the people a question names took part in: by their label, or
    where the chat calls them by the name the question uses."""
    involved = dict(source.conversations_with_speakers(named.labels, scope.ids)) if named.labels else {}
    if named.known_as:
        by_name = {name: cid for cid, name, _ in store.conversations()}
        involved.update({by_name[name]: name for name, _ in named.known_as if name in by_name})
    return involved


def _check_memory(store: Store, embedder, settings: Settings) -> None:
    """Refuse a memory this question cannot be asked of: no cue vectors, another embedding model, or a graph
    built narrower than the settings follow."""
    if not has_vectors(store):
        raise CuememError("this memory holds no cue vectors yet", "add a dialogue first", fields=("add",))
    check_embedder(store, embedder.model_id, embedder.dim)
    built_w = int(store.get_meta("graph_window") or 0)
    built_k = int(store.get_meta("graph_sem_k") or 0)
    if settings.window > built_w or settings.sem_k > built_k:
        raise CuememError(
            f"this graph was built with window={built_w}, sem_k={built_k}; a question cannot follow more",
            f"ask with a window of at most {built_w} and a sem_k of at most {built_k}", fields=("window", "sem_k"),
        )


@dataclass(frozen=True)
class _Hidden:
    """What memory did not hold yet at the question's `held_at` time: those turns, and how many cues they have."""

    turns: frozenset[int] | set[int] = frozenset()
    cues: int = 0


def _cue_hits(source: MemoryView | StoreSource, vector: np.ndarray, scope: Scope, involved: list[int],
              hidden: _Hidden, settings: Settings) -> tuple[list[tuple[Cue, float]], list[tuple[Cue, float]]]:
    """The question's top cues (best first), with the top cues of the chats of the people it names
    (`involved`, conversation ids) beside the memory's own; and the memory's own alone, which tell the
    circles of people apart."""

    def search(k: int, within: Sequence[int] | None) -> list[tuple[Cue, float]]:
        found = source.knn_cues(vector, k + hidden.cues, within)  # each source caps k at max_k
        return [hit for hit in found if hit[0].turn_id not in hidden.turns][:k] if hidden.turns else found

    hits = search(settings.top_m, scope.ids)
    memory_hits = hits
    if settings.participant_cues and involved:
        # The chats of the people the question names get their own top cues beside the memory's.
        seen = {cue.id for cue, _ in hits}
        extra = [hit for hit in search(settings.top_m, involved) if hit[0].id not in seen]
        hits = sorted([*hits, *extra], key=lambda hit: (-hit[1], hit[0].id))
    return hits, memory_hits


def _lexical_hits(store: Store, topic: str, scope: Scope, hidden: _Hidden, settings: Settings) -> dict[int, float]:
    """Full-text (BM25) hits of the question's content words: turn id → score, best first."""
    query = fts_query(topic) if settings.lexical_weight else ""
    if not query:
        return {}
    lexical = dict(store.search_turns_fts(query, settings.lexical_m + len(hidden.turns), scope.ids))
    return dict([(t, v) for t, v in lexical.items() if t not in hidden.turns][:settings.lexical_m])


def _expand(source: MemoryView | StoreSource, hits: list[tuple[Cue, float]], lexical: dict[int, float], floor: float,
            scope: Scope, hidden: _Hidden, settings: Settings) -> Candidates:
    """The seeds (anchor turns of the top cues, and the full-text hits) and their one-hop neighbours, within
    what memory held then and within the conversations asked."""
    best = best_cues(hits)
    seeds = list(dict.fromkeys([*best, *lexical]))
    hops = source.hops(seeds, settings.window, settings.sem_k, scope.ids) if settings.graph and seeds else Hops.of([])
    if hidden.turns and len(hops.dst):
        held = ~np.isin(hops.dst, np.fromiter(hidden.turns, np.int64, len(hidden.turns)))
        hops = Hops(*(column[held] for column in hops))
    ids = list(dict.fromkeys([*seeds, *hops.dst.tolist()]))
    turns = source.turns_by_id(ids)
    if scope.ids is not None:  # semantic edges cross conversations; a narrowed question stays inside its own
        outside = {tid for tid, turn in turns.items() if turn.conversation not in scope.names}
        if outside:
            inside = ~np.isin(hops.dst, np.fromiter(outside, np.int64, len(outside)))
            hops = Hops(*(column[inside] for column in hops))
            ids = [tid for tid in ids if tid not in outside]
    return Candidates(ids, turns, best, lexical, hops, floor)


def _evidence(turn: Turn, score: float, via: str, best: tuple[Cue, float] | None, excerpt: bool,
              changed: tuple[tuple[ChangeLink, ...], tuple[ChangeLink, ...]] = ((), ()),
              kinds: tuple[str, ...] = ()) -> Evidence:
    return Evidence(
        source_id=turn.source_id, time=turn.time, speaker=turn.speaker, text=turn.text, via=via,
        session=turn.session, position=turn.position, score=round(score, 4),
        cue=_render_cue(best[0]) if best is not None else None, tokens=turn_cost(turn), excerpt=excerpt,
        conversation=turn.conversation, title=turn.title, role=turn.role, superseded_by=changed[0],
        supersedes=changed[1], kinds=kinds,
    )


def _render_cue(cue: Cue) -> str:
    return f"({cue.subject}, {cue.relation}, {cue.object})"


class _Clock:
    """A question's timings: milliseconds per step, and the total."""

    def __init__(self) -> None:
        self.start = self.last = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, step: str) -> None:
        now = time.perf_counter()
        self.laps[step] = (now - self.last) * 1000
        self.last = now

    def total(self) -> dict[str, float]:
        laps = {**self.laps, "total": (time.perf_counter() - self.start) * 1000}
        return {k: round(v, 2) for k, v in laps.items()}
