"""What memory holds: counts per conversation, one turn's neighbourhood, the whole graph.

Each conversation's counts come with `names`: the names its people go by in it beside their labels
(speaker → names, learned from how they are greeted and introduce themselves: cues/names.py), which a
question may use, and `changes`, how many facts a newer turn changed there (cues/changes.py); the facts
that changed are listed after the counts (`changes`: each pair's conversation, older and newer turn ids and
times, subject, relation, values and kind; `older_turn`/`newer_turn` are node ids). `kinds`, how many of its
turns name a thing of each kind (cues/kinds.py: sport, city, dish, …), most first; the settings' `kinds` say
which lexicon tagged the turns (null: `cuemem reindex` has yet to tag them). `--format json` adds the
graph itself: `nodes` (one per turn: `id`, the turn's number in
this database that edges refer to, `conversation`, `source_id`, `time`, `speaker`, `cues`, its cue count,
`kinds`, the kinds of things it names)
and `edges` (`src`, `dst`: node ids; `kind`: temporal or semantic; `weight`; `rank`).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..cues.names import learn
from ..errors import CuememError
from ..recall.scope import resolve_one
from ..records import Turn
from ..store.base import (Store, change_records, kind_index, kinds_built, maintenance, name_index, names_indexed,
                          turn_vector_text)
from .reindex import stale


def summary(store: Store, conversation: str | None = None, graph: bool = False) -> dict[str, Any]:
    """Counts and settings; with `graph`, the nodes and edges too (`--format json`)."""
    reads = maintenance(store)
    stats = reads.conversation_stats()
    if conversation is not None:
        _, name = resolve_one(store, conversation)
        stats = [s for s in stats if s["conversation"] == name]
    indexed = learned_names(store)
    records = change_records(store)
    changes = []
    for s in stats:
        cid = store.conversation_id(s["conversation"])
        s["degree"] = reads.degree_stats(cid)
        if indexed is not None:
            s["names"] = indexed.get(s["conversation"], {})
        else:
            s["names"] = names_used(store, cid, s["conversation"]) if cid is not None else {}
        found = records.changes(cid) if records is not None and cid is not None else []
        s["changes"] = len(found)
        changes += [asdict(c) for c in found]
        s["kinds"] = index.kind_counts(cid) if (index := kind_index(store)) is not None and cid is not None else {}
    meta = reads.meta()
    settings = {
        "db": store.path,
        "schema_version": reads.schema_version(),
        "embedding_model": meta.get("embedding_model"),
        "embedding_dim": int(meta["embedding_dim"]) if "embedding_dim" in meta else None,
        "embedding_backend": meta.get("embedding_backend"),
        "turn_vectors": turn_vector_text(store),  # what a turn's vector was embedded from
        "graph_window": int(meta["graph_window"]) if "graph_window" in meta else None,
        "graph_sem_k": int(meta["graph_sem_k"]) if "graph_sem_k" in meta else None,
        "stale": stale(store),  # derived indexes holding only later turns: `cuemem reindex` rebuilds them
        "kinds": kinds_built(store),  # the lexicon version that tagged every turn; None: `cuemem reindex` has not
    }
    if not graph:
        return {"settings": settings, "conversations": stats, "changes": changes}
    ids = [cid for s in stats if (cid := store.conversation_id(s["conversation"])) is not None]
    turns = [t for cid in ids for t in reads.turns(cid)]
    edges = [e for cid in ids for e in reads.all_edges(cid)]
    return {"settings": settings, "conversations": stats, "changes": changes,
            **graph_json(store, with_far_ends(store, turns, edges), edges)}


def learned_names(store: Store) -> dict[str, dict[str, list[str]]] | None:
    """Each conversation's names as ingest keeps them (ingest/names.py): conversation → speaker → names; None
    when the memory's name index is not complete (written before it, not reindexed since)."""
    index = name_index(store)
    if index is None or not names_indexed(store):
        return None
    known: dict[str, dict[str, list[str]]] = {}
    for conversation, called, speaker in index.learned_names():
        known.setdefault(conversation, {}).setdefault(speaker, []).append(called)
    return known


def names_used(store: Store, conversation_id: int, name: str) -> dict[str, list[str]]:
    """The names a conversation calls its people by, beside their labels (cues/names.py): speaker → names,
    learned from all its turns (where the name index is not complete: `learned_names`).
    They are what a question may call someone ("What are Kate's hobbies?" of a chat whose turns say Emi)."""
    people = {name: store.speaker_sets([conversation_id]).get(conversation_id, frozenset())}
    known: dict[str, list[str]] = {}
    for (_, called), speaker in sorted(learn(maintenance(store).turns(conversation_id), people).items()):
        known.setdefault(speaker, []).append(called)
    return known


def turn_detail(store: Store, conversation: str | None, source_id: str) -> dict[str, Any]:
    name, turn = find_turn(store, conversation, source_id)
    cues = maintenance(store).cues_of_turns([turn.id]).get(turn.id, [])
    edges = maintenance(store).edges_of(turn.id)
    others = store.turns_by_id({dst if src == turn.id else src for src, dst, *_ in edges})
    neighbours = []
    for src, dst, kind, weight, rank in edges:
        other = others[dst if src == turn.id else src]
        neighbours.append({"direction": "out" if src == turn.id else "in", "kind": kind, "turn": other.source_id,
                           "weight": weight, "rank": rank, "text": other.text})
    turns = [turn, *sorted(others.values(), key=lambda t: t.position)]
    records = change_records(store)
    changes = [asdict(c) for c in records.changes_of_turns([turn.id])] if records is not None else []
    index = kind_index(store)
    kinds = list(index.turn_kinds([turn.id]).get(turn.id, ())) if index is not None else []
    return {"conversation": name, "turn": asdict(turn), "kinds": kinds, "cues": [asdict(c) for c in cues],
            "neighbours": neighbours, "changes": changes, **graph_json(store, turns, edges)}


def neighbourhood(store: Store, conversation: str | None, source_id: str) -> tuple[str, list[Turn], list[tuple]]:
    """One turn, its one-hop neighbours and the edges between it and them (`--turn` with dot or graphml)."""
    name, turn = find_turn(store, conversation, source_id)
    edges = maintenance(store).edges_of(turn.id)
    others = store.turns_by_id({dst if src == turn.id else src for src, dst, *_ in edges})
    return name, [turn, *sorted(others.values(), key=lambda t: t.position)], edges


def graph_json(store: Store, turns: list[Turn], edges: list[tuple]) -> dict[str, list[dict[str, Any]]]:
    """The nodes and edges of `--format json` (their fields are documented in the module docstring)."""
    cues = maintenance(store).cues_of_turns([t.id for t in turns])
    index = kind_index(store)
    kinds = index.turn_kinds([t.id for t in turns]) if index is not None and turns else {}
    nodes = [{"id": t.id, "conversation": t.conversation, "source_id": t.source_id, "time": t.time,
              "speaker": t.speaker, "cues": len(cues.get(t.id, [])), "kinds": list(kinds.get(t.id, ()))}
             for t in turns]
    return {"nodes": nodes, "edges": [{"src": src, "dst": dst, "kind": kind, "weight": weight, "rank": rank}
                                      for src, dst, kind, weight, rank in edges]}


def find_turn(store: Store, conversation: str | None, source_id: str) -> tuple[str, Turn]:
    """(its conversation's name, the turn) with this source id: in the conversation named, or, none named,
    wherever in the memory it is, when only one conversation has it. An id copied from `ask`'s evidence (a
    ChatGPT export's message UUID) then needs no --conversation; an id two conversations share ("1") does."""
    cid, name = resolve_one(store, conversation) if conversation is not None else (None, None)
    found = maintenance(store).turns_with_source_id(source_id, cid)
    if not found:
        raise CuememError(f"conversation {name!r} has no turn {source_id!r}" if name is not None
                          else f"no turn {source_id!r} in any conversation of this memory",
                          "source ids are the input's `id` values; the graph lists them", fields=("graph",))
    if len(found) > 1:
        names = ", ".join(t.conversation for t in found)
        raise CuememError(f"{len(found)} conversations have a turn {source_id!r}: {names}",
                          "choose one by its name or title", fields=("conversation",))
    return found[0].conversation, found[0]


def graph_of(store: Store, conversation: str | None) -> tuple[str, list[Turn], list[tuple]]:
    """One conversation's turns and the edges leaving them, or (None, several conversations) the whole
    memory's, whose semantic edges cross conversations."""
    reads = maintenance(store)
    rows = store.conversations()
    if conversation is None and len(rows) != 1:
        return "memory", [t for cid, _, _ in rows for t in reads.turns(cid)], reads.all_edges()
    cid, name = resolve_one(store, conversation)
    edges = reads.all_edges(cid)
    return name, with_far_ends(store, reads.turns(cid), edges), edges


def with_far_ends(store: Store, turns: list[Turn], edges: list[tuple]) -> list[Turn]:
    """`turns` and, after them, the turns of other conversations their semantic edges reach, so that every
    edge drawn or listed has both its ends among the nodes (each node names its conversation)."""
    known = {t.id for t in turns}
    far = sorted({end for src, dst, *_ in edges for end in (src, dst)} - known)
    found = store.turns_by_id(far)
    return turns + [found[i] for i in far if i in found]
