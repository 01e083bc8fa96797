"""Question → top cues → anchor turns → one hop over the turn graph → chronological evidence.

The evidence is trimmed to a token budget: anchors first (by their best cue's score), then
neighbours by priority (anchor score × edge weight), each turn taken whole or not at all. Tokens are
estimated as ceil(characters / 4) of the evidence line as the answer prompt shows it.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass

from .config import DEFAULT_BUDGET, DEFAULT_SEM_K, DEFAULT_TOP_M, DEFAULT_WINDOW
from .errors import CuememError
from .records import Context, Cue, Evidence, ScoredCue, Turn
from .statements import without_names
from .store import Store
from .timeparse import format_human

TEMPORAL_DISCOUNT = 0.9  # a temporal neighbour ranks a little below an equally weighted semantic one


@dataclass(frozen=True)
class Settings:
    top_m: int = DEFAULT_TOP_M
    window: int = DEFAULT_WINDOW
    sem_k: int = DEFAULT_SEM_K
    budget: int = DEFAULT_BUDGET
    graph: bool = True
    lexical: bool = False
    rrf_k: int = 60
    neighbour_weight: float = 1.0
    anchors_first: bool = True
    speaker_boost: float = 0.0


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def evidence_line(source_id: str, time: str | None, speaker: str | None, text: str) -> str:
    """How a turn is shown to the answer model, and what the budget counts: `[id] date · speaker: text`.

    The date is absolute and without time of day: questions ask on which day, and every token spent
    on a prefix is one less for evidence.
    """
    when = format_human(time, with_time=False) if time else "date unknown"
    return f"[{source_id}] {when} · {speaker or 'unknown'}: {text}"


def turn_cost(turn: Turn) -> int:
    return estimate_tokens(evidence_line(turn.source_id, turn.time, turn.speaker or turn.role, turn.text))


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


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")
_STOPWORDS = frozenset(
    "a an the and or but if of at by for with about to from in on into over after before is are was were be been "
    "being do does did done have has had having i me my we our you your he him his she her it its they them their "
    "what which who whom whose when where why how this that these those there here as than then so not no can could "
    "would should will shall may might must just also very any some all each".split()
)


def fts_query(question: str) -> str:
    """A safe FTS5 query from free text: content words, each quoted, OR-ed (BM25 ranks the matches)."""
    words = [w.lower().strip("'-") for w in _WORD.findall(question)]
    terms = dict.fromkeys(w for w in words if w and w not in _STOPWORDS and len(w) > 1)
    return " OR ".join(f'"{w}"' for w in terms)


def _dense_scores(hits: list[tuple[Cue, float]]) -> tuple[dict[int, float], dict[int, Cue]]:
    """Turn score = its best cue's similarity; remember that cue to show why the turn was chosen."""
    score: dict[int, float] = {}
    best: dict[int, Cue] = {}
    for cue, sim in hits:
        if sim > score.get(cue.turn_id, -2.0):
            score[cue.turn_id] = sim
            best[cue.turn_id] = cue
    return score, best


def _fuse(rankings: list[dict[int, float]], k: int) -> dict[int, float]:
    """Reciprocal-rank fusion: robust to the different scales of cosine and BM25."""
    fused: dict[int, float] = {}
    for scores in rankings:
        for rank, tid in enumerate(sorted(scores, key=scores.get, reverse=True), start=1):
            fused[tid] = fused.get(tid, 0.0) + 1.0 / (k + rank)
    return fused


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
    speakers = store.speakers(cid)
    mentioned = {name for name in speakers if re.search(rf"\b{re.escape(name)}\b", question, re.IGNORECASE)}
    vector = embedder.embed([without_names(question, speakers) or question])[0]
    t1 = time.perf_counter()
    timings["embed_query"] = (t1 - t0) * 1000
    hits = store.knn_cues(cid, vector, settings.top_m)
    anchor_score, anchor_cue = _dense_scores(hits)
    if mentioned and settings.speaker_boost:
        speaker_of = store.speaker_of_turns(list(anchor_score))
        anchor_score = {tid: s + (settings.speaker_boost if speaker_of.get(tid) in mentioned else 0.0)
                        for tid, s in anchor_score.items()}
    if settings.lexical:
        lexical = store.search_turns_fts(cid, fts_query(question), settings.top_m) if fts_query(question) else []
        anchor_score = _fuse([anchor_score, dict(lexical)], settings.rrf_k)
    t2 = time.perf_counter()
    timings["cue_search"] = (t2 - t1) * 1000

    via: dict[int, str] = {tid: "anchor" for tid in anchor_score}
    priority: dict[int, float] = dict(anchor_score)
    if settings.graph and anchor_score:
        for src, dst, kind, weight in store.neighbours(list(anchor_score), settings.window, settings.sem_k):
            if dst in anchor_score:
                continue
            score = anchor_score[src] * settings.neighbour_weight * (
                TEMPORAL_DISCOUNT if kind == "temporal" else weight)
            if score > priority.get(dst, -2.0):
                priority[dst] = score
                via[dst] = kind
    turns = store.turns_by_id(priority)
    t3 = time.perf_counter()
    timings["expand"] = (t3 - t2) * 1000

    chosen: list[tuple[Turn, int]] = []
    used = 0
    ranked = sorted(priority, key=lambda tid: (settings.anchors_first and via[tid] != "anchor", -priority[tid],
                                               turns[tid].position))
    for tid in ranked:
        cost = turn_cost(turns[tid])
        if used + cost > settings.budget:
            continue
        chosen.append((turns[tid], cost))
        used += cost
    chosen.sort(key=lambda item: item[0].position)
    evidence = tuple(
        Evidence(
            source_id=t.source_id, time=t.time, speaker=t.speaker, text=t.text, via=via[t.id],
            session=t.session, position=t.position, score=round(priority[t.id], 4),
            cue=_render_cue(anchor_cue[t.id]) if t.id in anchor_cue and via[t.id] == "anchor" else None,
            tokens=cost,
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

