"""The in-memory conversation view (view.py): same contexts as SQL, built only when it pays, never stale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cuemem_cli import Memory, view
from cuemem_cli.reconstruct import reconstruct
from cuemem_cli.store import NewTurn
from cuemem_cli.store_sqlite import SQLiteStore
from cuemem_cli.view import ConversationView, StoreConversation, conversation_source

MAYA = Path(__file__).resolve().parent.parent / "sample_dialogues" / "maya_and_leo.jsonl"
QUESTIONS = [
    "What did Maya adopt?", "Where did Leo go hiking?", "When did Maya start her new job?",
    "What is the name of Leo's dog?", "What did they cook together?", "How is Maya's sister doing?",
    "What book is Leo reading?", "What happened on 14 May, 2023?",
]


@pytest.fixture
def memory(tmp_path, stub_models):
    """The sample dialogue with the stand-in models: the view must give what SQL gives for any vectors."""
    mem = Memory(tmp_path / "memory.db")
    mem.ingest_file(MAYA)
    yield mem
    mem.close()


def test_first_question_reads_sql_second_builds_the_view(memory):
    store = memory.store
    cid = store.conversation_id("maya-and-leo")
    assert isinstance(conversation_source(store, cid, 384), StoreConversation)
    source = conversation_source(store, cid, 384)
    assert isinstance(source, ConversationView)
    assert conversation_source(store, cid, 384) is source
    assert len(source.turns) == 84 and source.matrix.shape == (store.cue_count(cid), 384)


def test_view_gives_the_same_contexts_as_sql(memory):
    for question in QUESTIONS:
        fresh = SQLiteStore.open(memory.store.path)  # a new store object: its first question goes to SQL
        try:
            by_sql = reconstruct(fresh, memory.embedder(), question, "maya-and-leo")
            assert isinstance(conversation_source(fresh, fresh.conversation_id("maya-and-leo"), 384), ConversationView)
            by_view = reconstruct(fresh, memory.embedder(), question, "maya-and-leo")
        finally:
            fresh.close()
        # Same turns, same reasons; scores agree to float rounding (vec0 and NumPy sum in different orders).
        assert [(e.source_id, e.via) for e in by_view.evidence] == [(e.source_id, e.via) for e in by_sql.evidence]
        assert [e.score for e in by_view.evidence] == pytest.approx([e.score for e in by_sql.evidence], abs=2e-4)
        assert {(c.turn, c.object) for c in by_view.cues} == {(c.turn, c.object) for c in by_sql.cues}
        assert by_view.tokens == by_sql.tokens


def test_a_commit_drops_the_view_and_new_turns_are_found(memory):
    question = "What did Maya say about the volcano trip?"
    memory.context(question)
    memory.context(question)
    cid = memory.store.conversation_id("maya-and-leo")
    assert isinstance(conversation_source(memory.store, cid, 384), ConversationView)
    memory.add([{"speaker": "Maya", "text": "The volcano trip to Iceland got cancelled because of the eruption.",
                 "time": "2023-06-01T10:00:00"}], conversation="maya-and-leo")
    after = memory.context(question)
    assert "volcano" in " ".join(e.text for e in after.evidence)


def test_a_commit_by_another_connection_drops_the_view(memory):
    store = memory.store
    cid = store.conversation_id("maya-and-leo")
    conversation_source(store, cid, 384)
    assert isinstance(conversation_source(store, cid, 384), ConversationView)
    other = SQLiteStore.open(store.path)
    try:
        with other.transaction():
            other.insert_turns([NewTurn(cid, 1000, "late", "A late turn.", "h", None, None, "Leo", None, {})])
    finally:
        other.close()
    assert isinstance(conversation_source(store, cid, 384), StoreConversation)
    assert any(t.source_id == "late" for t in conversation_source(store, cid, 384).turns.values())


def test_big_conversations_stay_in_sql(memory, monkeypatch):
    monkeypatch.setattr(view, "VIEW_MAX_CUES", 10)
    store = memory.store
    cid = store.conversation_id("maya-and-leo")
    for _ in range(3):
        assert isinstance(conversation_source(store, cid, 384), StoreConversation)


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
    by_sql = [cue.id for cue, _ in store.knn_cues(cid, query, 10)]
    by_view = [cue.id for cue, _ in ConversationView(store, cid, 4).knn_cues(query, 10)]
    assert by_sql == by_view == cue_ids[20:25] + cue_ids[:5]


def test_turn_vectors_in_context_add_the_turn_before_in_the_same_session_only(store):
    """SQL and the view mix each turn vector with its predecessor's, never across a session break."""
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
    for source in (StoreConversation(store, cid, 4), ConversationView(store, cid, 4)):
        assert source.turn_similarities(ids, query) == pytest.approx(bare, abs=1e-4)
        assert source.turn_similarities(ids, query, 0.3) == pytest.approx(mixed, abs=1e-4)
        assert source.turn_similarities(ids[::-1], query, 0.3) == pytest.approx(mixed[::-1], abs=1e-4)
