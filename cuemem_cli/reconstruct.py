"""Question → top cues → anchor turns → one hop over the turn graph → chronological evidence.

The evidence is trimmed to a token budget: anchors first (by their best cue's score), then
neighbours by priority (anchor score × edge weight), each turn taken whole or not at all. Tokens are
estimated as ceil(characters / 4) of the evidence line as the answer prompt shows it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from .errors import CuememError
from .records import Context, Cue, Evidence, ScoredCue, Turn
from .store import Store
from .timeparse import format_human

DEFAULT_TOP_M = 20
DEFAULT_WINDOW = 1
DEFAULT_SEM_K = 2
DEFAULT_BUDGET = 2000
TEMPORAL_DISCOUNT = 0.9  # a temporal neighbour ranks a little below an equally weighted semantic one


@dataclass(frozen=True)
class Settings:
    top_m: int = DEFAULT_TOP_M
    window: int = DEFAULT_WINDOW
    sem_k: int = DEFAULT_SEM_K
    budget: int = DEFAULT_BUDGET
    graph: bool = True


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def evidence_line(turn: Turn) -> str:
    """How a turn is shown to the answer model: id, absolute time, speaker, text."""
    when = format_human(turn.time) if turn.time else "time unknown"
    return f"[{turn.source_id}] {when} | {turn.speaker or turn.role or 'unknown'}: {turn.text}"


def resolve_conversation(store: Store, conversation: str | None) -> tuple[int, str]:
    names = store.conversation_names()
    if not names:
        raise CuememError("this memory is empty", "ingest a dialogue first: cuemem ingest FILE")
    if conversation is None:
        if len(names) > 1:
            listed = ", ".join(names[:20]) + (f", … ({len(names)} in all)" if len(names) > 20 else "")
            raise CuememError(f"this memory holds {len(names)} conversations: {listed}",
                              "choose one with --conversation NAME")
        conversation = names[0]
    cid = store.conversation_id(conversation)
    if cid is None:
        raise CuememError(f"no conversation named {conversation!r}",
                          f"known: {', '.join(names[:20])}")
    return cid, conversation


def _render_cue(cue: Cue) -> str:
    return f"({cue.subject}, {cue.relation}, {cue.object})"


def reconstruct(store: Store, embedder, question: str, conversation: str | None = None,
                settings: Settings = Settings(), as_of: str | None = None) -> Context:
    cid, name = resolve_conversation(store, conversation)
    if not store.has_vectors():
        raise CuememError("this memory holds no cue vectors yet", "ingest a dialogue first: cuemem ingest FILE")
    store.check_embedder(embedder.model_id, embedder.dim)
    built_w = int(store.get_meta("graph_window") or 0)
    built_k = int(store.get_meta("graph_sem_k") or 0)
    if settings.window > built_w or settings.sem_k > built_k:
        raise CuememError(
            f"this graph was built with window={built_w}, sem_k={built_k}; ask cannot use more",
            f"pass --window ≤ {built_w} and --sem-k ≤ {built_k}",
        )
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    vector = embedder.embed([question])[0]
    t1 = time.perf_counter()
    timings["embed_query"] = (t1 - t0) * 1000
    hits = store.knn_cues(cid, vector, settings.top_m)
    t2 = time.perf_counter()
    timings["cue_search"] = (t2 - t1) * 1000

    anchor_score: dict[int, float] = {}
    anchor_cue: dict[int, Cue] = {}
    for cue, score in hits:
        if score > anchor_score.get(cue.turn_id, -2.0):
            anchor_score[cue.turn_id] = score
            anchor_cue[cue.turn_id] = cue
    via: dict[int, str] = {tid: "anchor" for tid in anchor_score}
    priority: dict[int, float] = dict(anchor_score)
    if settings.graph and anchor_score:
        for src, dst, kind, weight in store.neighbours(list(anchor_score), settings.window, settings.sem_k):
            if dst in anchor_score:
                continue
            score = anchor_score[src] * weight * (TEMPORAL_DISCOUNT if kind == "temporal" else 1.0)
            if score > priority.get(dst, -2.0):
                priority[dst] = score
                via[dst] = kind
    turns = store.turns_by_id(priority)
    t3 = time.perf_counter()
    timings["expand"] = (t3 - t2) * 1000

    chosen: list[tuple[Turn, int]] = []
    used = 0
    ranked = sorted(priority, key=lambda tid: (via[tid] != "anchor", -priority[tid], turns[tid].position))
    for tid in ranked:
        cost = estimate_tokens(evidence_line(turns[tid]))
        if used + cost > settings.budget:
            continue
        chosen.append((turns[tid], cost))
        used += cost
    chosen.sort(key=lambda item: item[0].position)
    evidence = tuple(
        Evidence(
            source_id=t.source_id, time=t.time, speaker=t.speaker, text=t.text, via=via[t.id],
            session=t.session, position=t.position, score=round(priority[t.id], 4),
            cue=_render_cue(anchor_cue[t.id]) if t.id in anchor_cue else None, tokens=cost,
        )
        for t, cost in chosen
    )
    source_of = {tid: turns[tid].source_id for tid in turns}
    cues = tuple(
        ScoredCue(cue.subject, cue.relation, cue.object, round(score, 4), source_of.get(cue.turn_id, "?"), cue.kind)
        for cue, score in hits
    )
    timings["trim"] = (time.perf_counter() - t3) * 1000
    timings["total"] = (time.perf_counter() - t0) * 1000
    timings = {k: round(v, 2) for k, v in timings.items()}
    return Context(question=question, conversation=name, as_of=as_of, cues=cues, evidence=evidence,
                   tokens=used, timings_ms=timings)

