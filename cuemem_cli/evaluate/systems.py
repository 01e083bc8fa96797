"""The systems compared: CueMem and its ablations through `reconstruct`, and three baselines.

Two ablations need turn vectors the database does not hold (the turn alone, without the turn before
it): they run on a copy of the database with those vectors, made once and cached beside it (runner).

Every budgeted system fills the same budget by the same rule as `reconstruct` (`fill_budget`): turns
in rank order, each whole or skipped, cost = `recall.lines.turn_cost` plus a day header for each new
day and the "…" lines between turns not said one after the other; the context is then put in
chronological order and shown the same way. Latency is query-time work: the question's embedding
(computed once per question and charged to every system that needs it), search, expansion and
trimming.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..files import private_dir
from ..models.embedders import embed_questions
from ..recall.evidence import GAP_LINE, break_lines, chronological, context_tokens, fill_budget, header_line
from ..recall.lines import estimate_tokens, evidence_line, shown_text, turn_cost
from ..recall.question import fts_query
from ..recall.reconstruct import reconstruct
from ..recall.scope import resolve_scope
from ..recall.settings import Settings
from ..records import Context, Evidence, Turn
from ..store.base import Store, maintenance
from .tokens import TokenCounter

if TYPE_CHECKING:
    from ..models.embedders import Embedder

CUEMEM_SYSTEMS: dict[str, dict[str, Any]] = {
    "cuemem": {},
    "no-graph": {"graph": False},  # anchors only (the paper's ablation)
    "no-semantic": {"sem_k": 0},
    "no-temporal": {"window": 0},
    # One scoring term off at a time (recall/reconstruct.py); run them with --systems.
    "no-lexical": {"lexical_weight": 0.0},
    "no-speaker": {"speaker_weight": 0.0},
    "no-date": {"date_weight": 0.0},
    "cue-only": {"cue_weight": 1.0},
    "turn-only": {"cue_weight": 0.0},
    "whole-turns": {"excerpt_tokens": 0},  # long turns shown whole, not as excerpts (recall/excerpt.py)
}
# Run on a copy of the database whose turn vectors hold the turn alone, as before m005 (Env.turn_alone).
TURN_ALONE_SYSTEMS: dict[str, dict[str, Any]] = {
    "no-context": {"context_weight": 0.0},  # nothing of the turn before
    "mixed-context": {},  # the turn before mixed in at question time: view.in_context, the default before m005
}
BASELINES = ("full-history", "naive-rag", "bm25")
SYSTEMS = (*CUEMEM_SYSTEMS, *TURN_ALONE_SYSTEMS, *BASELINES)
DEFAULT_SYSTEMS = ("cuemem", "no-graph", "no-semantic", "no-temporal", *BASELINES)
UNBUDGETED = ("full-history",)

@dataclass
class QueryVectors:
    """Each question embedded once (timed) and reused by every system in the run."""

    embedder: Embedder
    cache: dict[str, tuple[np.ndarray, float]] = field(default_factory=dict)

    def get(self, question: str) -> tuple[np.ndarray, float]:
        if question not in self.cache:
            t0 = time.perf_counter()
            vector = embed_questions(self.embedder, [question])[0]
            self.cache[question] = (vector, (time.perf_counter() - t0) * 1000)
        return self.cache[question]


class CachedQueryEmbedder:
    """What `reconstruct` sees: the run's embedder, answering from `QueryVectors` when it can."""

    def __init__(self, queries: QueryVectors):
        self.queries = queries
        inner = queries.embedder
        self.model_id, self.dim, self.name = inner.model_id, inner.dim, inner.name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.queries.embedder.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 1:
            return self.queries.get(texts[0])[0][None, :]
        return embed_questions(self.queries.embedder, texts)


class ConversationView:
    """What a question is asked over: one conversation, or (`name` None) the whole memory, whose turns,
    token counts and (for naive RAG) vectors are loaded once. A turn is known by its `key`: its source id
    in one conversation, `conversation/source id` over a memory of many (source ids repeat across
    conversations)."""

    def __init__(self, store: Store, name: str | None, counter: TokenCounter):
        scope = resolve_scope(store, name)
        self.name, self.scope, self.scope_name = name or "(memory)", scope.names or None, name
        self.ids = scope.ids
        cids = scope.ids if scope.ids is not None else [cid for cid, _, _ in store.conversations()]
        reads = maintenance(store)  # conversations whole, as inspect reads them
        self.turns = [t for cid in cids for t in reads.turns(cid)]
        self.by_id = {t.id: t for t in self.turns}
        self.qualified = name is None
        self.index = {self.key(t.conversation, t.source_id): i for i, t in enumerate(self.turns)}
        self.tokenizers = ("estimate", *counter.names)
        self.counter = counter
        self.cost = {self.key_of(t): turn_cost(t) for t in self.turns}
        lines = [evidence_line(t.speaker or t.role, shown_text(t.text, t.time)) for t in self.turns]
        self.counts = {self.key_of(t): {"estimate": self.cost[self.key_of(t)], **counts}
                       for t, counts in zip(self.turns, counter.count(lines), strict=True)}
        # Every header a context can show: a day's, a day's naming its conversation (two conversations'
        # turns), and a day's under its own conversation's run of an earlier day (the ditto mark).
        breaks = [*sorted({header for t in self.turns
                           for header in (header_line(t, False), header_line(t, True), header_line(t, True, t))}),
                  GAP_LINE]
        self.break_counts = {line: {"estimate": estimate_tokens(line), **counts}
                             for line, counts in zip(breaks, counter.count(breaks), strict=True)}
        self._matrix: np.ndarray | None = None

    def key(self, conversation: str, source_id: str) -> str:
        return f"{conversation}/{source_id}" if self.qualified else source_id

    def key_of(self, turn: Turn | Evidence) -> str:
        return self.key(turn.conversation, turn.source_id)

    def matrix(self, embedder, cache_file: Path | None) -> np.ndarray:
        """Turn vectors ("speaker: text"), from `cache_file` when it matches, else embedded and saved."""
        if self._matrix is None and cache_file is not None and cache_file.exists():
            try:
                loaded = np.load(cache_file)
            except (OSError, ValueError):  # unreadable: embed again below
                loaded = None
            if loaded is not None and loaded.shape == (len(self.turns), embedder.dim):
                self._matrix = loaded
        if self._matrix is None:
            texts = [f"{t.speaker or t.role or 'unknown'}: {t.text}" for t in self.turns]
            self._matrix = embedder.embed(texts)
            if cache_file is not None:
                private_dir(cache_file.parent)
                partial = cache_file.with_name(cache_file.stem + ".partial.npy")
                np.save(partial, self._matrix)
                os.chmod(partial, 0o600)
                os.replace(partial, cache_file)
        return self._matrix


@dataclass(frozen=True)
class Retrieval:
    context: Context
    ranked: tuple[str, ...]  # source ids in the system's own rank order (for NDCG)
    latency_ms: float


@dataclass
class Env:
    """What systems share during a run."""

    store: Store
    queries: QueryVectors
    settings: Settings  # CLI overrides applied to the current defaults
    turn_vectors: Callable[[ConversationView], np.ndarray]
    turn_alone: Callable[[], Store]  # the database copy for TURN_ALONE_SYSTEMS, made on first use


def _context(question, view: ConversationView, turns: list[Turn], via: str, scores: dict[str, float],
             latency: float) -> Context:
    evidence = tuple(
        Evidence(source_id=t.source_id, time=t.time, speaker=t.speaker or t.role, text=t.text, via=via,
                 session=t.session, position=t.position, score=round(scores.get(view.key_of(t), 0.0), 4),
                 tokens=view.cost[view.key_of(t)], conversation=t.conversation, title=t.title, role=t.role)
        for t in sorted(turns, key=chronological)
    )
    return Context(question=question.question, conversations=tuple(view.scope or ()), as_of=question.as_of, cues=(),
                   evidence=evidence, tokens=context_tokens(turns), timings_ms={"total": round(latency, 2)})


def cuemem(change: dict, env: Env, view: ConversationView, question, budget: int,
           store: Store | None = None) -> Retrieval:
    settings = replace(env.settings, budget=budget, **change)
    embedder = CachedQueryEmbedder(env.queries)
    context = reconstruct(store or env.store, embedder, question.question, view.scope, settings, question.as_of)
    ranked = sorted(context.evidence, key=lambda e: (e.via != "anchor", -e.score, e.time or "", e.position))
    timings = context.timings_ms
    latency = timings["total"] - timings.get("embed_query", 0.0) + env.queries.get(question.question)[1]
    return Retrieval(context, tuple(view.key_of(e) for e in ranked), latency)


def naive_rag(env: Env, view: ConversationView, question, budget: int) -> Retrieval:
    matrix = env.turn_vectors(view)  # the index, built once per conversation like ingest: not query time
    vector, embed_ms = env.queries.get(question.question)
    t0 = time.perf_counter()
    scores = matrix @ vector
    order = np.argsort(-scores, kind="stable")
    ranked = [view.turns[i] for i in order]
    chosen = fill_budget(ranked, budget)
    latency = embed_ms + (time.perf_counter() - t0) * 1000
    by_key = {view.key_of(t): float(scores[view.index[view.key_of(t)]]) for t in chosen}
    return Retrieval(_context(question, view, chosen, "retrieved", by_key, latency),
                     tuple(view.key_of(t) for t in chosen), latency)


def bm25(env: Env, view: ConversationView, question, budget: int) -> Retrieval:
    """The question's content words against the turns' FTS5 index, read as cuemem's lexical signal reads
    them (recall.question.fts_query), filled to the budget by BM25 rank."""
    t0 = time.perf_counter()
    query = fts_query(question.question)
    hits = env.store.search_turns_fts(query, len(view.turns), view.ids) if query else []
    ranked = [view.by_id[tid] for tid, _ in hits if tid in view.by_id]
    chosen = fill_budget(ranked, budget)
    latency = (time.perf_counter() - t0) * 1000
    scores = {view.key_of(view.by_id[tid]): s for tid, s in hits if tid in view.by_id}
    return Retrieval(_context(question, view, chosen, "retrieved", scores, latency),
                     tuple(view.key_of(t) for t in chosen), latency)


def full_history(env: Env, view: ConversationView, question, budget: int | None) -> Retrieval:
    t0 = time.perf_counter()
    turns = sorted(view.turns, key=chronological)
    latency = (time.perf_counter() - t0) * 1000
    return Retrieval(_context(question, view, turns, "history", {}, latency),
                     tuple(view.key_of(t) for t in turns), latency)


# (env, view, question, budget) -> Retrieval; budget is None exactly for the UNBUDGETED systems
Retriever = Callable[..., Retrieval]


def system(name: str) -> Retriever:
    if name in CUEMEM_SYSTEMS:
        change = CUEMEM_SYSTEMS[name]
        return lambda env, view, question, budget: cuemem(change, env, view, question, budget)
    if name in TURN_ALONE_SYSTEMS:
        change = TURN_ALONE_SYSTEMS[name]
        return lambda env, view, question, budget: cuemem(change, env, view, question, budget, env.turn_alone())
    return {"full-history": full_history, "naive-rag": naive_rag, "bm25": bm25}[name]


def count_tokens(view: ConversationView, evidence: Sequence[Evidence]) -> dict[str, int]:
    """The context's size per tokenizer, as the prompt shows it: the sum over its lines (turns, headers, gap
    lines), a long turn cut to an excerpt counted as cut (`estimate` is what the budget counted)."""
    turns = [view.turns[view.index[view.key_of(e)]] for e in evidence]
    counts = dict.fromkeys(view.tokenizers, 0)
    lines = []  # the excerpts' lines, counted below
    for t, e in zip(turns, evidence, strict=True):
        if e.excerpt:
            lines.append(evidence_line(t.speaker or t.role, shown_text(e.text, t.time)))
            continue
        for name in view.tokenizers:
            counts[name] += view.counts[view.key_of(t)][name]
    for line, measured in zip(lines, view.counter.count(lines) if lines else [], strict=True):
        for name in view.tokenizers:
            counts[name] += estimate_tokens(line) if name == "estimate" else measured[name]
    for line in break_lines(turns):
        for name in view.tokenizers:
            counts[name] += view.break_counts[line][name]
    return counts
