"""What memory holds: counts per conversation, one turn's neighbourhood, the whole graph."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from .errors import CuememError, UnknownConversation
from .records import Turn
from .reconstruct import resolve_conversation
from .store import Store


def summary(store: Store, conversation: str | None = None) -> dict[str, Any]:
    stats = store.conversation_stats()
    if conversation is not None:
        stats = [s for s in stats if s["conversation"] == conversation]
        if not stats:
            raise UnknownConversation(conversation, store.conversation_names())
    for s in stats:
        s["degree"] = store.degree_stats(store.conversation_id(s["conversation"]))
    meta = store.meta()
    settings = {
        "db": store.path,
        "schema_version": store.schema_version(),
        "embedding_model": meta.get("embedding_model"),
        "embedding_dim": int(meta["embedding_dim"]) if "embedding_dim" in meta else None,
        "embedding_backend": meta.get("embedding_backend"),
        "turn_vectors": store.turn_vector_text(),  # what a turn's vector was embedded from
        "graph_window": int(meta["graph_window"]) if "graph_window" in meta else None,
        "graph_sem_k": int(meta["graph_sem_k"]) if "graph_sem_k" in meta else None,
    }
    return {"settings": settings, "conversations": stats}


def turn_detail(store: Store, conversation: str | None, source_id: str) -> dict[str, Any]:
    cid, name = resolve_conversation(store, conversation)
    turn = store.turn_by_source_id(cid, source_id)
    if turn is None:
        raise CuememError(f"conversation {name!r} has no turn {source_id!r}",
                          "source ids are the input's `id` values; see cuemem inspect-graph --format json")
    cues = store.cues_of_turns([turn.id]).get(turn.id, [])
    edges = store.edges_of(turn.id)
    others = store.turns_by_id({dst if src == turn.id else src for src, dst, *_ in edges})
    neighbours = []
    for src, dst, kind, weight, rank in edges:
        other = others[dst if src == turn.id else src]
        neighbours.append({"direction": "out" if src == turn.id else "in", "kind": kind, "turn": other.source_id,
                           "weight": weight, "rank": rank, "text": other.text})
    return {"conversation": name, "turn": asdict(turn), "cues": [asdict(c) for c in cues], "neighbours": neighbours}


def graph_of(store: Store, conversation: str | None) -> tuple[str, list[Turn], list[tuple]]:
    cid, name = resolve_conversation(store, conversation)
    return name, store.turns(cid), store.all_edges(cid)
