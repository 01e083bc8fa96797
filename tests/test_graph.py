"""Turn graph construction against a small hand-computed case."""

from __future__ import annotations

from cuemem_cli.ingest.pipeline import IngestReport, Ingestor
from cuemem_cli.records import Message
from cuemem_cli.store.sqlite import SQLiteStore

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


# ------------------------------------------------------------------ a large memory: the HNSW graph (issue 58)
WORDS = ("river tram castle harbour bakery violin garden ferry museum lantern orchard glacier canyon market "
         "piano kettle bicycle lighthouse meadow pottery chess sardine lemon compass").split()


def _history(conversations: int, turns: int) -> list[Message]:
    """Turns of three words drawn from WORDS (seeded): many turns share words, so each cue has near neighbours."""
    import random

    rng = random.Random(58)
    return [Message(f"c{c}", " ".join(rng.sample(WORDS, 3)), source_id=f"c{c}-{i}")
            for c in range(conversations) for i in range(turns)]


def _semantic_edges(store) -> set[tuple[str, str]]:
    names = {t.id: f"{t.conversation}/{t.source_id}" for c in ("c0", "c1", "c2", "c3")
             if store.conversation_id(c) for t in store.turns(store.conversation_id(c))}
    return {(names[s], names[d]) for c in ("c0", "c1", "c2", "c3") if store.conversation_id(c)
            for s, d, kind, *_ in store.all_edges(store.conversation_id(c)) if kind == "semantic"}


def _ingest(path, messages, batch=40, replace=False):
    from cuemem_cli.store.sqlite import SQLiteStore

    store = SQLiteStore.open(path)
    Ingestor(store, StubExtractor(), StubEmbedder(), window=1, sem_k=3, replace=replace).run(
        messages, IngestReport(lines=len(messages)), batch_turns=batch)
    return store


def test_a_large_memory_finds_its_semantic_neighbours_through_the_hnsw_graph(tmp_path, monkeypatch):
    """From graph.ANN_FROM stored cues the memory-wide top-k comes from the HNSW graph: the same edges as the
    exact scan, but for a few approximate ones (here, with ANN_FROM lowered to 60 cues, at least 0.95 of them),
    and the same edges again for the same input (the graph is built with one thread)."""
    from cuemem_cli.ingest import graph

    messages = _history(4, 120)
    exact_store = _ingest(tmp_path / "exact.db", messages)
    exact = _semantic_edges(exact_store)
    monkeypatch.setattr(graph, "ANN_FROM", 60)
    built = []
    real = graph.CueGraph.add
    monkeypatch.setattr(graph.CueGraph, "add", lambda self, *a: (built.append(len(a[1])), real(self, *a))[1])
    approximate = _semantic_edges(_ingest(tmp_path / "ann.db", messages))
    assert sum(built) >= len(messages), "the graph held the memory's cues: the approximate path ran"
    assert len(approximate & exact) >= 0.95 * len(exact) and len(approximate) >= 0.95 * len(exact)
    assert approximate == _semantic_edges(_ingest(tmp_path / "again.db", messages)), "deterministic"


def test_a_circle_of_almost_every_chat_is_searched_through_the_graph(tmp_path, monkeypatch):
    """A user/assistant export where one chat has a single speaker makes a circle of all the other chats (graph.
    semantic_edges). From ANN_FROM cues in it, that circle is searched through the memory's HNSW graph, finding
    only its own chats' cues, instead of exactly (which compared each new cue with every stored cue again): the
    edges are those of the exact search, but for a few approximate ones."""
    from cuemem_cli.ingest import graph

    messages = [Message(m.conversation, m.text, source_id=m.source_id,
                        speaker="assistant" if i % 2 and m.conversation != "c3" else "user")
                for i, m in enumerate(_history(4, 80))]
    exact = _semantic_edges(_ingest(tmp_path / "exact.db", messages))
    monkeypatch.setattr(graph, "ANN_FROM", 60)
    searched = []
    real = graph.CueGraph.search

    def search(self, queries, k, among=None):
        found = real(self, queries, k, among)
        if among is not None:
            searched.append(len(queries))
            assert among[found[1][found[1] >= 0]].all(), "only the circle's cues are found"
        return found

    monkeypatch.setattr(graph.CueGraph, "search", search)
    approximate = _semantic_edges(_ingest(tmp_path / "ann.db", messages))
    assert sum(searched) > 100, "the circle (c0, c1, c2) was searched through the graph"
    assert len(approximate & exact) >= 0.95 * len(exact) and len(approximate) >= 0.95 * len(exact)


def test_a_replaced_turn_leaves_no_edge_to_its_old_cues_in_the_graph(tmp_path, monkeypatch):
    """`ingest --replace` deletes the old turn with its cues: their graph nodes are marked dead, and no new
    semantic edge points at the deleted turn."""
    from cuemem_cli.ingest import graph

    monkeypatch.setattr(graph, "ANN_FROM", 60)
    store = SQLiteStore.open(tmp_path / "m.db")
    ingestor = Ingestor(store, StubExtractor(), StubEmbedder(), window=1, sem_k=3, replace=True)
    messages = _history(2, 100)
    ingestor.run(messages, IngestReport(lines=len(messages)), batch_turns=40)  # a long-lived writer: graph kept
    assert ingestor._index is not None and ingestor._index.graph is not None
    changed = Message("c0", "river tram castle", source_id="c0-99")  # the same words as other turns: near them
    later = [Message("c1", "river tram castle", source_id="c1-new")]
    ingestor.run([changed, *later], IngestReport(lines=2))
    assert ingestor._index.graph is not None and ingestor._index.graph.dead > 0, "the old cues are dead nodes"
    turn_ids = {t.id for c in ("c0", "c1") for t in store.turns(store.conversation_id(c))}
    for c in ("c0", "c1"):
        for src, dst, *_ in store.all_edges(store.conversation_id(c)):
            assert src in turn_ids and dst in turn_ids
    new_id = store.stored_texts(store.conversation_id("c1"), ["c1-new"])["c1-new"][0]
    assert any(s == new_id and kind == "semantic" for s, _, kind, *_ in store.all_edges(store.conversation_id("c1")))


def test_the_graph_is_saved_and_the_next_ingest_goes_on_from_it_as_one_run_would(tmp_path, monkeypatch):
    """A large memory's graph is saved with the last batch's write (links only; the vectors are the stored codes);
    the next ingest reads it back, adds what was stored since, and links as one run over all the input does (but
    for approximate differences). A deleted cue (forget) makes the saved graph stale: not read back."""
    from cuemem_cli.ingest import graph
    from cuemem_cli.store.base import CUE_DELETIONS

    monkeypatch.setattr(graph, "ANN_FROM", 60)
    monkeypatch.setattr(graph, "SAVE_AFTER_NODES", 1)
    messages = _history(2, 120)
    one_run = _semantic_edges(_ingest(tmp_path / "one.db", messages))

    store = _ingest(tmp_path / "two.db", messages[:150])
    assert set(store.cue_graph()) == {"header", "nodes", "neighbors", "offsets", "levels"}  # type: ignore[attr-defined]
    loaded = graph.NeighbourIndex.load(store, 384)
    assert loaded.graph is not None and loaded.graph.saved_nodes == loaded.size, "read back, covering every cue"
    store.close()
    store = _ingest(tmp_path / "two.db", messages)  # the stored 150 are skipped; the rest link through the saved graph
    two_runs = _semantic_edges(store)
    assert len(two_runs & one_run) >= 0.95 * len(one_run) and len(two_runs) >= 0.95 * len(one_run)

    with store.transaction():
        store.delete_turns([store.turns(store.conversation_id("c1"))[-1].id])
    assert store.get_meta(CUE_DELETIONS) == "1"
    assert graph.NeighbourIndex.load(store, 384).graph is None, "stale after a deletion: not used"
