"""Turn graph construction against a small hand-computed case."""

from __future__ import annotations

from cuemem_cli.ingest.pipeline import IngestReport, Ingestor
from cuemem_cli.records import Message

from conftest import StubEmbedder, StubExtractor

# Four turns, one cue each, with hand-picked unit vectors:
#   t0 ─ a = (1, 0, 0)        t1 ─ b = (0, 1, 0)
#   t2 ─ c = (0.8, 0.6, 0)    t3 ─ d = (0.6, 0, 0.8)
# (StubEmbedder with this table: a cue or turn is the vector of its one word in it.)
VECTORS = {
    "a": [1.0, 0.0, 0.0],
    "b": [0.0, 1.0, 0.0],
    "c": [0.8, 0.6, 0.0],
    "d": [0.6, 0.0, 0.8],
}


def build(store, texts, window, sem_k, batch):
    messages = [Message("conv", text, source_id=f"t{i}") for i, text in enumerate(texts)]
    ingestor = Ingestor(store, StubExtractor(), StubEmbedder(VECTORS), window=window, sem_k=sem_k)
    ingestor.run(messages, IngestReport(lines=len(messages)), batch_turns=batch)
    cid = store.conversation_id("conv")
    src = {t.id: t.source_id for t in store.turns(cid)}
    # Two decimals: vectors are stored as int8 codes (store/vectors.py), which move a similarity by ~1e-3.
    return {(src[s], src[d], kind, round(w, 2), rank) for s, d, kind, w, rank in store.all_edges(cid)}


def test_hand_computed_edges(store):
    edges = build(store, ["a", "b", "c", "d"], window=1, sem_k=1, batch=10)
    temporal = {e for e in edges if e[2] == "temporal"}
    semantic = {e for e in edges if e[2] == "semantic"}
    assert temporal == {
        ("t1", "t0", "temporal", 1.0, 1), ("t0", "t1", "temporal", 1.0, 1),
        ("t2", "t1", "temporal", 1.0, 1), ("t1", "t2", "temporal", 1.0, 1),
        ("t3", "t2", "temporal", 1.0, 1), ("t2", "t3", "temporal", 1.0, 1),
    }
    # Each cue's nearest cue among earlier turns: b → a (cos 0, the only one); c → a (0.8 beats 0.6 to b);
    # d → a (cos(d,a) = 0.6, cos(d,b) = 0, cos(d,c) = 0.48).
    assert semantic == {
        ("t1", "t0", "semantic", 0.0, 1),
        ("t2", "t0", "semantic", 0.8, 1),
        ("t3", "t0", "semantic", 0.6, 1),
    }


def test_window_two_and_k_two(store):
    edges = build(store, ["a", "b", "c", "d"], window=2, sem_k=2, batch=10)
    temporal = {(s, d) for s, d, kind, *_ in edges if kind == "temporal"}
    assert ("t2", "t0") in temporal and ("t0", "t2") in temporal and ("t3", "t1") in temporal
    assert ("t3", "t0") not in temporal
    semantic = {(s, d, w, r) for s, d, kind, w, r in edges if kind == "semantic"}
    assert ("t2", "t1", 0.6, 2) in semantic
    assert ("t3", "t2", 0.48, 2) in semantic


def test_graph_does_not_depend_on_batching(tmp_path):
    from cuemem_cli.store.sqlite import SQLiteStore

    texts = ["a", "b", "c", "d", "c", "a", "b", "d"]
    one = build(SQLiteStore.open(tmp_path / "one.db"), texts, window=2, sem_k=3, batch=100)
    many = build(SQLiteStore.open(tmp_path / "many.db"), texts, window=2, sem_k=3, batch=3)
    assert one == many


def test_incremental_ingest_links_new_turns_to_old(store):
    build(store, ["a", "b"], window=1, sem_k=1, batch=10)
    ingestor = Ingestor(store, StubExtractor(), StubEmbedder(VECTORS))
    ingestor.run([Message("conv", "c", source_id="t2")], IngestReport(lines=1))
    cid = store.conversation_id("conv")
    src = {t.id: t.source_id for t in store.turns(cid)}
    edges = {(src[s], src[d], k) for s, d, k, *_ in store.all_edges(cid)}
    assert ("t2", "t1", "temporal") in edges and ("t2", "t0", "semantic") in edges


def test_batches_alternating_conversations_build_the_same_graph(tmp_path):
    """Batches that alternate conversations give the edges one batch gives (semantic ones cross them)."""
    from cuemem_cli.store.sqlite import SQLiteStore

    def edges(path, batch):
        store = SQLiteStore.open(path)
        messages = [Message(conv, text, source_id=f"{conv}{i}")
                    for i, text in enumerate(["a", "b", "c", "d"]) for conv in ("x", "y")]
        Ingestor(store, StubExtractor(), StubEmbedder(VECTORS), window=1, sem_k=2).run(
            messages, IngestReport(lines=len(messages)), batch_turns=batch)
        sid = {t.id: t.source_id for name in ("x", "y") for t in store.turns(store.conversation_id(name))}
        out = {}
        for name in ("x", "y"):
            cid = store.conversation_id(name)
            out[name] = sorted((sid[s], sid[d], k, round(w, 4), r) for s, d, k, w, r in store.all_edges(cid))
        store.close()
        return out

    one = edges(tmp_path / "one.db", 100)
    assert one == edges(tmp_path / "many.db", 1)
    assert ("y1", "x1", "semantic", 1.0, 1) in one["y"]  # y's "b" found x's "b", said just before it


def test_graph_does_not_depend_on_block_size(tmp_path, monkeypatch):
    """Blocks shrink as a conversation's history grows (graph.MAX_BLOCK_CELLS): one similarity per block
    gives the same edges as the default."""
    from cuemem_cli.ingest import graph
    from cuemem_cli.store.sqlite import SQLiteStore

    texts = ["a", "b", "c", "d", "c", "a", "b", "d"]
    default = build(SQLiteStore.open(tmp_path / "default.db"), texts, window=2, sem_k=3, batch=100)
    monkeypatch.setattr(graph, "MAX_BLOCK_CELLS", 1)
    tiny = build(SQLiteStore.open(tmp_path / "tiny.db"), texts, window=2, sem_k=3, batch=100)
    assert default == tiny and any(kind == "semantic" for _, _, kind, _, _ in default)
