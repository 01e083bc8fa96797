"""The in-memory view of the memory (recall/view.py): same contexts as the store's queries, built only when it pays,
never stale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cuemem_cli import Memory
from cuemem_cli.store import vectors
from cuemem_cli.recall import view
from cuemem_cli.recall.reconstruct import reconstruct
from cuemem_cli.store.base import NewTurn
from cuemem_cli.store.sqlite import SQLiteStore
from cuemem_cli.recall.view import MemoryView, StoreSource, memory_source

from conftest import copy_memory

pytestmark = pytest.mark.slow  # the memory fixture holds both samples with the real models

SAMPLES = Path(__file__).resolve().parent.parent / "sample_dialogues"
MAYA = SAMPLES / "maya_and_leo.jsonl"
QUESTIONS = [
    "What did Maya adopt?", "Where did Leo go hiking?", "When did Maya start her new job?",
    "What is the name of Leo's dog?", "What did they cook together?", "How is Maya's sister doing?",
    "What book is Leo reading?", "What happened on 14 May, 2023?", "Where is Sam travelling in April?",
    "What does the assistant suggest for a vegetarian in Japan?",
]


@pytest.fixture(scope="module")
def memory(samples_memory, tmp_path_factory):
    """Both sample dialogues in one memory (conftest.samples_memory): questions range over two conversations."""
    mem = Memory(copy_memory(samples_memory, tmp_path_factory.mktemp("view")))
    yield mem
    mem.close()


def test_first_question_reads_the_store_second_builds_the_view(memory):
    store = SQLiteStore.open(memory.store.path)
    try:
        assert isinstance(memory_source(store, 384), StoreSource)
        source = memory_source(store, 384)
        assert isinstance(source, MemoryView)
        assert memory_source(store, 384) is source
        assert source.codes.shape == (store.cue_count(), 384) and source.codes.dtype == np.int8
        assert set(source.cue_conversations.tolist()) == {cid for cid, _, _ in store.conversations()}
        sam = store.turns(store.conversation_id("assistant-chat"))
        assert len(source.turn_ids) == store.turn_count() == 84 + len(sam)
    finally:
        store.close()


@pytest.mark.parametrize("scope", [None, "maya-and-leo", ["assistant-chat"]])
def test_view_gives_the_same_contexts_as_the_store(memory, scope):
    for question in QUESTIONS:
        fresh = SQLiteStore.open(memory.store.path)  # a new store object: its first question reads the store
        try:
            by_sql = reconstruct(fresh, memory.embedder(), question, scope)
            assert isinstance(memory_source(fresh, 384), MemoryView)
            by_view = reconstruct(fresh, memory.embedder(), question, scope)
        finally:
            fresh.close()
        # Same turns, same reasons; scores agree to float rounding (vec0 and NumPy sum in different orders).
        assert [(e.conversation, e.source_id, e.via) for e in by_view.evidence] == \
            [(e.conversation, e.source_id, e.via) for e in by_sql.evidence]
        assert [e.score for e in by_view.evidence] == pytest.approx([e.score for e in by_sql.evidence], abs=2e-4)
        assert {(c.turn, c.object) for c in by_view.cues} == {(c.turn, c.object) for c in by_sql.cues}
        assert by_view.tokens == by_sql.tokens


def test_a_view_asked_many_questions_across_scopes_gives_the_stores_contexts(memory):
    """The view keeps what it decoded and read for the next question (the scope's cue vectors, the turns):
    questions alternating between scopes must still get exactly what a one-question process gets."""
    asks = [(question, scope) for question in QUESTIONS[:5] for scope in (None, "maya-and-leo", ["assistant-chat"])]
    store = SQLiteStore.open(memory.store.path)
    try:
        cold = []
        for question, scope in asks:
            view.drop_view(store)
            cold.append(reconstruct(store, memory.embedder(), question, scope))
        reconstruct(store, memory.embedder(), QUESTIONS[0], None)
        assert isinstance(memory_source(store, 384), MemoryView)
        for (question, scope), by_sql in zip(asks, cold, strict=True):
            by_view = reconstruct(store, memory.embedder(), question, scope)
            assert [(e.conversation, e.source_id, e.via) for e in by_view.evidence] == \
                [(e.conversation, e.source_id, e.via) for e in by_sql.evidence], (question, scope)
            assert [e.score for e in by_view.evidence] == pytest.approx([e.score for e in by_sql.evidence], abs=2e-4)
    finally:
        store.close()


def test_hops_of_the_view_are_the_stores(memory):
    store = memory.store
    every = [t.id for cid, _, _ in store.conversations() for t in store.turns(cid)]
    held = MemoryView(store, 384)
    for window, sem_k in ((1, 2), (2, 5), (0, 1)):
        by_view = held.hops(every, window, sem_k)
        by_sql = StoreSource(store, 384).hops(every, window, sem_k)
        rows = sorted(zip(*(column.tolist() for column in by_view), strict=True))
        assert rows == sorted(zip(*(column.tolist() for column in by_sql), strict=True)) and rows


def test_hops_of_a_narrowed_question_never_reach_another_conversation(memory):
    """Semantic edges cross chats; a narrowed question's hops drop the other chats' turns before any is read
    (in LoCoMo's ten conversations three of four turns a conv-26 question reached were elsewhere: reading them
    took half its reconstruction), and keep every hop inside."""
    store = memory.store
    maya = store.conversation_id("maya-and-leo")
    conversation_of = {t.id: cid for cid, _, _ in store.conversations() for t in store.turns(cid)}
    seeds = [t.id for t in store.turns(maya)]
    held = MemoryView(store, 384)
    every = list(zip(*(column.tolist() for column in held.hops(seeds, 2, 5)), strict=True))
    narrowed = list(zip(*(column.tolist() for column in held.hops(seeds, 2, 5, [maya])), strict=True))
    assert any(conversation_of[hop[1]] != maya for hop in every)  # the memory has edges across chats
    assert narrowed == [hop for hop in every if conversation_of[hop[1]] == maya]


def test_the_sign_prefilter_finds_what_the_exact_search_finds(memory, monkeypatch):
    """Above EXACT_CUES the view ranks cues by sign bits and scores PREFILTER_CANDIDATES of them exactly:
    on these cues the top 20 overlaps the exact top 20 almost wholly, with exact similarities. A one-question
    process (the store's search, from its `cue_signs` table) finds exactly the view's cues and scores."""
    exact = MemoryView(memory.store, 384)
    monkeypatch.setattr(vectors, "EXACT_CUES", 100)
    monkeypatch.setattr(vectors, "PREFILTER_CANDIDATES", 150)
    bits = MemoryView(memory.store, 384)
    cold = StoreSource(memory.store, 384)
    assert bits.signs is not None and len(bits.codes) > 500
    maya = memory.store.conversation_id("maya-and-leo")
    overlaps = []
    for question in QUESTIONS:
        vector = memory.embedder().embed([question])[0]
        want = exact.knn_cues(vector, 20, None)
        got = bits.knn_cues(vector, 20, None)
        overlaps.append(len({c.id for c, _ in got} & {c.id for c, _ in want}) / 20)
        sims = {c.id: s for c, s in want}
        assert all(s == pytest.approx(sims[c.id], abs=1e-6) for c, s in got if c.id in sims)
        assert [(c.id, s) for c, s in cold.knn_cues(vector, 20, None)] == [(c.id, s) for c, s in got]
        narrowed = bits.knn_cues(vector, 20, [maya])
        assert {c.turn_id for c, _ in narrowed} <= {t.id for t in memory.store.turns(maya)}
        assert [c.id for c, _ in cold.knn_cues(vector, 20, [maya])] == [c.id for c, _ in narrowed]
    assert np.mean(overlaps) >= 0.9, overlaps
    monkeypatch.setattr(vectors, "PREFILTER_CANDIDATES", 20)
    vector = memory.embedder().embed([QUESTIONS[0]])[0]
    assert [c.id for c, _ in cold.knn_cues(vector, 20, None)] != [c.id for c, _ in exact.knn_cues(vector, 20, None)]


def test_signs_follow_the_turns_they_belong_to(tmp_path):
    """`cue_signs` holds a row per turn with the sign bits of every cue of it; forgetting a turn takes its row."""
    with Memory(tmp_path / "memory.db") as mem:
        mem.ingest_file(MAYA)
        store = mem.store
        rows = store._rows("SELECT turn_id, cue_ids, signs FROM cue_signs")
        codes = store.cue_codes(384)
        held = {int(t): (np.frombuffer(i, dtype="<i8"), s) for t, i, s in rows}
        assert len(held) == len(set(codes.turn_ids.tolist()))
        for turn in np.unique(codes.turn_ids)[:20].tolist():
            ids, bits = held[turn]
            at = np.flatnonzero(codes.turn_ids == turn)
            assert ids.tolist() == codes.cue_ids[at].tolist()
            assert bits == vectors.signs(codes.codes[at]).tobytes()
        first = store.turns(store.conversation_id("maya-and-leo"))[0].id
        with store.transaction():
            store.delete_turns([first])
        assert first not in {r[0] for r in store._rows("SELECT turn_id FROM cue_signs")}


def test_a_commit_drops_the_view_and_new_turns_are_found(tmp_path):
    with Memory(tmp_path / "memory.db") as mem:
        mem.ingest_file(MAYA)
        question = "What did Maya say about the volcano trip?"
        mem.context(question)
        mem.context(question)
        assert isinstance(memory_source(mem.store, 384), MemoryView)
        mem.add([{"speaker": "Maya", "text": "The volcano trip to Iceland got cancelled because of the eruption.",
                  "time": "2023-06-01T10:00:00"}], conversation="travel")
        after = mem.context(question)
        assert "volcano" in " ".join(e.text for e in after.evidence)
        assert "travel" in {e.conversation for e in after.evidence}


def test_a_commit_by_another_connection_drops_the_view(memory):
    store = SQLiteStore.open(memory.store.path)
    try:
        memory_source(store, 384)
        assert isinstance(memory_source(store, 384), MemoryView)
        other = SQLiteStore.open(store.path)
        cid = store.conversation_id("maya-and-leo")
        try:
            with other.transaction():
                [late] = other.insert_turns([NewTurn(cid, 1000, "late", "A late turn.", "h", None, None, "Leo",
                                                     None, {})])
            assert isinstance(memory_source(store, 384), StoreSource)
            assert memory_source(store, 384).turns_by_id([late])[late].source_id == "late"
        finally:
            with other.transaction():
                other.delete_turns([late])
            other.close()
    finally:
        store.close()


def test_big_memories_stay_in_the_store(memory, monkeypatch):
    monkeypatch.setattr(view, "VIEW_MAX_CUES", 10)
    store = SQLiteStore.open(memory.store.path)
    try:
        for _ in range(3):
            assert isinstance(memory_source(store, 384), StoreSource)
    finally:
        store.close()


def test_ties_between_identical_cues_break_by_cue_id_in_both(store):
    store.bind_embedder("test", 4, "test")
    with store.transaction():
        cid = store.conversation_id("c", create=True)
        [tid] = store.insert_turns([NewTurn(cid, 0, "t0", "text", "h", None, None, "A", None, {})])
        cue_ids = store.insert_cues(cid, [(tid, "A", "said", f"cue {i}", "statement") for i in range(45)])
        # Five cues closer to the query, then forty identical ones straddling the 10th place.
        better = np.tile(np.array([[0.8, 0.6, 0.0, 0.0]], dtype=np.float32), (5, 1))
        same = np.tile(np.array([[0.5, 0.5, 0.5, 0.5]], dtype=np.float32), (40, 1))
        store.insert_vectors(cid, cue_ids[20:25], better)
        store.insert_vectors(cid, cue_ids[:20] + cue_ids[25:], same)
    query = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    by_sql = [cue.id for cue, _ in store.knn_cues(query, 10)]
    by_view = [cue.id for cue, _ in MemoryView(store, 4).knn_cues(query, 10, None)]
    assert by_sql == by_view == cue_ids[20:25] + cue_ids[:5]


def test_turn_vectors_in_context_add_the_turn_before_in_the_same_session_only(store):
    """Both sources mix each turn vector with its predecessor's, never across a session break."""
    store.bind_embedder("test", 4, "test")
    with store.transaction():
        cid = store.conversation_id("c", create=True)
        ids = store.insert_turns([NewTurn(cid, p, f"t{p}", f"turn {p}", f"h{p}", session, None, "A", None, {})
                                  for p, session in enumerate(["s1", "s1", "s2", "s2"])])
        vectors = np.eye(4, dtype=np.float32)
        store.insert_turn_vectors(list(zip(ids, vectors, strict=True)))
    assert store.previous_turns(ids) == {ids[1]: ids[0], ids[3]: ids[2]}
    query = np.array([1.0, 0.0, 1.0, 0.0], dtype=np.float32) / np.sqrt(2)
    # By hand, turn vectors e0..e3 and the question (e0 + e2)/√2: alone, t0 and t2 score 1/√2, t1 and t3 0.
    # With 0.3 of the turn before in its session: t1 = 0.3 · 0.7071 / |e1 + 0.3 e0| = 0.2121 / 1.0440 = 0.2032,
    # t3 the same from t2; t0 has no turn before it and t2's (t1) is in another session: both unchanged.
    bare = [0.7071, 0.0, 0.7071, 0.0]
    mixed = [0.7071, 0.2032, 0.7071, 0.2032]
    for source in (StoreSource(store, 4), MemoryView(store, 4)):
        assert source.turn_similarities(ids, query) == pytest.approx(bare, abs=1e-4)
        assert source.turn_similarities(ids, query, 0.3) == pytest.approx(mixed, abs=1e-4)
        assert source.turn_similarities(ids[::-1], query, 0.3) == pytest.approx(mixed[::-1], abs=1e-4)
