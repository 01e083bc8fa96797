"""The store contract: SQLite (store/sqlite.py) and PostgreSQL (store/postgres.py) answer every method of
every store Protocol (store/base.py: the engine's `Store`, and `ExtractionRecords`, `Maintenance`,
`BrowseQueries`, `EvalQueries`) the same way. Behaviour tests run on each backend; comparison tests fill
both with the same rows and compare what each returns; a test fails when a Protocol method is called by
none of them. Real SQLite + sqlite-vec, real PostgreSQL + pgvector (conftest)."""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from cuemem_cli.errors import ModelMismatch, ReadOnlyStore, StoreError
from cuemem_cli.store.migrations import MIGRATIONS
from cuemem_cli.ingest.pipeline import texts_with_previous
from cuemem_cli.store import base
from cuemem_cli.store.base import (NewTurn, browse_queries, change_records, check_embedder, conversation_names,
                                   extraction_records, has_vectors, maintenance, name_index, names_indexed,
                                   turn_vector_text)
from cuemem_cli.store.open import open_store

TEXTS = [
    "I adopted two dogs from the shelter last spring.",
    "Dogs are a lot of work! What are their names?",
    "Biscuit and Pepper. Biscuit loves painting sessions, he sits by the easel.",
    "Do you still paint? I remember your watercolors.",
    "Yep, a few years back I started again; painting calms me.",
    "I moved to Denver last month for the new office.",
    "Denver! How is the weather there?",
    "Sunny, and the mountains are close. I went hiking on Saturday.",
    "Hiking with the dogs?",
    "Of course, Pepper runs ahead and Biscuit lags behind.",
    "My sister visits Denver in June; she's a well-known painter.",
    "A painter in the family, nice. What does she paint?",
]
DIM = 8


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.normal(size=(n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def fill(store, conversations=("a", "b")) -> dict[str, int]:
    """The same turns, cues (one with a vector equal to another's: a tie), vectors and edges in each store."""
    rng = np.random.default_rng(7)
    tie = unit(rng, 1)[0]
    store.bind_embedder("test-model", DIM, "test")
    ids = {}
    with store.transaction():
        for name in conversations:
            cid = ids[name] = store.conversation_id(name, create=True)
            turn_ids = []
            for pos, text in enumerate(TEXTS):
                [tid] = store.insert_turns([NewTurn(
                    cid, pos, f"t{pos}", text, f"hash{pos}", "s1" if pos < 6 else "s2",
                    None if pos == 11 else f"2023-05-{1 + pos // 3:02d}T10:00:00", "Maya" if pos % 2 else "Leo",
                    None, {"n": pos}, "pending" if pos == 4 else "done")])
                turn_ids.append(tid)
                words = text.split()
                cue_ids = store.insert_cues(cid, [(tid, "Maya", "said", words[0], "triple"),
                                                  (tid, "Maya", "", text, "statement")])
                vectors = unit(rng, 2)
                if pos in (0, 3):
                    vectors[0] = tie  # two cues at the same distance from any question
                store.insert_vectors(cid, cue_ids, vectors)
                store.insert_turn_vectors([(tid, unit(rng, 1)[0])])
            store.insert_edges([(turn_ids[i], turn_ids[i + 1], "temporal", 1.0, 1) for i in range(len(TEXTS) - 1)])
            store.insert_edges([(turn_ids[i], turn_ids[i - 3], "semantic", 0.5 + i / 100, 1 + i % 3)
                                for i in range(3, len(TEXTS))])
            store.insert_edges([(turn_ids[5], turn_ids[2], "semantic", 0.9, 1)])  # again: best weight, best rank
    return ids


def titled(store, name: str, title: str, times: list[str]) -> int:
    """A conversation titled as an export titles it (its turns keep the title in `extra`, all but its first),
    said at `times`."""
    with store.transaction():
        cid = store.conversation_id(name, create=True)
        store.insert_turns([NewTurn(cid, pos, f"x{pos}", f"Turn {pos} of {name}.", f"h{name}{pos}", None, time,
                                    "Maya", None, {"title": title} if pos else {}, "done")
                            for pos, time in enumerate(times)])
        store.set_title(cid, title)
        store.set_title(cid, "another title")  # the first one given stays
    return cid


@pytest.fixture
def both(tmp_path, pg_url, monkeypatch):
    """Both backends; one clock for both, so turns filled a second apart on a busy machine compare equal."""
    monkeypatch.setattr("cuemem_cli.store.base.now_iso", lambda: "2026-01-02T03:04:05")
    stores = (open_store(str(tmp_path / "memory.db")), open_store(pg_url))
    yield stores
    for s in stores:
        s.close()


def _same(a, b):
    assert a == b
    return a


# ------------------------------------------------------------ on each backend
def test_opens_migrated_and_reopens_without_migrating_again(backend_db):
    first = open_store(backend_db)
    version = first.schema_version()
    assert version >= 1
    first.close()
    again = open_store(backend_db)
    assert again.schema_version() == version
    assert conversation_names(again) == []
    again.close()


def test_a_missing_database_is_not_created_for_a_reader(backend_db):
    with pytest.raises(StoreError, match="no cuemem database"):
        open_store(backend_db, create=False)


def test_a_store_opened_read_only_reads_and_refuses_writes_before_they_start(backend_db):
    """`readonly=True` (how a memory that cannot be written is opened): it reads as usual, `read_only` says why,
    and a write is refused before it starts, leaving the data as it was."""
    writer = open_store(backend_db)
    assert writer.read_only is None
    writer.check_writable()
    ids = fill(writer, ("a",))
    writer.close()
    reader = open_store(backend_db, readonly=True)
    try:
        assert reader.read_only == "it was opened for reading only, as asked"
        turns = reader.turns(ids["a"])
        assert [t.source_id for t in turns] == [f"t{i}" for i in range(len(TEXTS))]
        with reader.snapshot():
            assert conversation_names(reader) == ["a"]
        with pytest.raises(ReadOnlyStore, match="is read-only: it was opened for reading only, as asked"):
            reader.check_writable()
        with pytest.raises(ReadOnlyStore, match="cuemem can read it but not change it"), reader.transaction():
            reader.mark_retrieved(ids["a"], ["t1"], "2024-01-01T00:00:00")
    finally:
        reader.close()
    again = open_store(backend_db)
    try:  # t1 was not marked as retrieved in 2024: the decay policy still selects it
        decayed = {tid for tid, _ in again.forget_selection(None, None, None, None, "2023-12-31T00:00:00", None)}
        assert turns[1].id in decayed
    finally:
        again.close()


def test_a_memory_that_does_not_exist_is_not_created_read_only(backend_db):
    if "://" in backend_db:
        import psycopg

        with psycopg.connect(backend_db, autocommit=True) as conn:  # an empty schema of its own
            conn.execute("CREATE SCHEMA nothing_yet")
        joiner = "&" if "?" in backend_db else "?"
        target, said = f"{backend_db}{joiner}options=-csearch_path%3Dnothing_yet", "has no cuemem schema yet"
    else:
        target, said = backend_db, "cannot create"
    with pytest.raises(ReadOnlyStore, match=said):
        open_store(target, readonly=True)


def test_embedding_model_is_recorded_and_guarded(any_store):
    assert not has_vectors(any_store)
    any_store.bind_embedder("all-MiniLM-L6-v2", 384, "onnx")
    any_store.bind_embedder("all-MiniLM-L6-v2", 384, "sentence-transformers")  # same space: fine
    with pytest.raises(ModelMismatch, match="all-MiniLM-L6-v2"):
        any_store.bind_embedder("bge-small", 384, "onnx")
    with pytest.raises(ModelMismatch):
        check_embedder(any_store, "all-MiniLM-L6-v2", 768)
    check_embedder(any_store, "all-MiniLM-L6-v2", 384)
    assert has_vectors(any_store)
    assert any_store.meta()["embedding_dim"] == "384" and any_store.get_meta("embedding_backend") == "onnx"
    assert any_store.get_meta("nothing", "default") == "default"


def test_transaction_rolls_back_everything(any_store):
    with pytest.raises(RuntimeError), any_store.transaction():
        any_store.conversation_id("x", create=True)
        raise RuntimeError("boom")
    assert conversation_names(any_store) == []


def test_search_ranges_over_the_memory_or_stays_inside_the_conversations_named(any_store):
    ids = fill(any_store)
    query = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    for name, cid in ids.items():
        hits = any_store.knn_cues(query, 100, [cid])
        assert len(hits) == 2 * len(TEXTS)
        turns = any_store.turns_by_id({cue.turn_id for cue, _ in hits})
        assert {t.conversation for t in turns.values()} == {name}
        lexical = any_store.search_turns_fts('"dogs" OR "painting"', 50, [cid])
        assert {any_store.turns_by_id([tid])[tid].conversation for tid, _ in lexical} == {name}
    hits = any_store.knn_cues(query, 100)
    assert len(hits) == 4 * len(TEXTS)
    sims = [sim for _, sim in hits]
    assert sims == sorted(sims, reverse=True)
    assert len(any_store.knn_cues(query, 100, list(ids.values()))) == 4 * len(TEXTS)
    assert any_store.knn_cues(query, 100, []) == [] and any_store.search_turns_fts('"dogs"', 50, []) == []
    lexical = any_store.search_turns_fts('"dogs" OR "painting"', 50)
    assert {any_store.turns_by_id([tid])[tid].conversation for tid, _ in lexical} == {"a", "b"}


def test_lexical_search_is_stemmed(any_store):
    [cid] = fill(any_store, ("a",)).values()
    found = {any_store.turns_by_id([tid])[tid].source_id for tid, _ in any_store.search_turns_fts('"dog"', 50, [cid])}
    assert found == {"t0", "t1", "t8"}  # "dogs" found by "dog"
    found = {any_store.turns_by_id([tid])[tid].source_id for tid, _ in any_store.search_turns_fts('"known"', 50)}
    assert found == {"t10"}  # a hyphenated word is indexed as its parts


def test_a_commit_changes_the_version_of_who_made_it(backend_db):
    """`others` changes with another connection's commit, `own` with this connection's write."""
    mine, other = open_store(backend_db), open_store(backend_db)
    try:
        before = mine.version()
        with mine.transaction():
            mine.set_meta("k", "1")
        after = mine.version()
        assert after.others == before.others and after.own != before.own
        with other.transaction():
            other.set_meta("k", "2")
        assert mine.version().others != before.others and mine.version().own == after.own
        assert mine.get_meta("k") == "2"
    finally:
        mine.close()
        other.close()


def test_a_snapshot_does_not_see_a_later_commit(backend_db):
    reader, writer = open_store(backend_db), open_store(backend_db)
    try:
        with reader.snapshot():
            assert conversation_names(reader) == []
            with writer.transaction():
                writer.conversation_id("late", create=True)
            assert conversation_names(reader) == []
        assert conversation_names(reader) == ["late"]
    finally:
        reader.close()
        writer.close()


def test_delete_turns_takes_everything_of_theirs(any_store):
    ids = fill(any_store)
    turns = any_store.turns(ids["a"])
    with any_store.transaction():
        counts = any_store.delete_turns([t.id for t in turns])
    assert counts["turns"] == len(TEXTS) and counts["cues"] == counts["vectors"] == 2 * len(TEXTS)
    assert counts["conversations_removed"] == ["a"]
    assert conversation_names(any_store) == ["b"]
    assert any_store.turn_vectors([t.id for t in turns]) == {}
    assert any_store.conversation_stats()[0]["turns"] == len(TEXTS)


def test_every_migration_is_recorded_by_name_on_both_backends(backend_db):
    """One list of migrations (store/migrations.py): a new database of either backend records every name, the
    vector ones once an embedder is bound, and its schema version counts them alike."""
    store = open_store(backend_db)
    try:
        plain = [m.name for m in MIGRATIONS if not m.needs_dim]
        assert store.schema_version() == len(plain)
        store.bind_embedder("m", DIM, "test")
        assert store.schema_version() == len(MIGRATIONS)
        recorded = [r[0] for r in store.conn.execute("SELECT name FROM _migrations ORDER BY name").fetchall()]
        assert recorded == sorted(m.name for m in MIGRATIONS)
    finally:
        store.close()


def test_status_cache_and_counts(any_store):
    ids = fill(any_store)
    assert any_store.turn_count() == 2 * len(TEXTS)
    texts = any_store.all_turn_texts()
    assert [text for _, text in texts] == TEXTS * 2 and [tid for tid, _ in texts] == sorted(tid for tid, _ in texts)
    pending = any_store.pending_turns(ids["b"])
    assert [(turn.source_id, turn.conversation, digest) for turn, digest in pending] == [("t4", "b", "hash4")]
    with any_store.transaction():
        any_store.set_status([turn.id for turn, _ in pending], "done")
    assert any_store.pending_turns(ids["b"]) == [] and len(any_store.pending_turns()) == 1
    assert any_store.cached_triples("llm", "v1", "hash0") is None
    with any_store.transaction():
        any_store.cache_triples("llm", "v1", "hash0", [["Maya", "adopted", "two dogs"]])
        any_store.cache_triples("llm", "v1", "hash0", [["Maya", "adopted", "Biscuit"]])  # replaces
        any_store.cache_triples("llm", "v2", "hash0", [])
    assert any_store.cached_triples("llm", "v1", "hash0") == [["Maya", "adopted", "Biscuit"]]
    assert any_store.cached_triples("llm", "v2", "hash0") == []
    assert turn_vector_text(any_store) == "turn+previous"
    with any_store.transaction():
        any_store.set_meta("turn_vectors", "turn")
    assert turn_vector_text(any_store) == "turn"


def test_the_memory_as_arrays_codes_and_edges(any_store):
    """What the ingest's neighbour index and the in-memory view read: every cue's int8 code with its ids in
    cue id order, every turn's code, every edge as columns; cues by id."""
    from cuemem_cli.store.base import SEMANTIC, TEMPORAL
    from cuemem_cli.store.vectors import encode

    ids = fill(any_store)
    cue_ids, turn_ids, conversation_ids, codes = any_store.cue_codes(DIM)
    turn_ids_of = [t.id for cid in ids.values() for t in any_store.turns(cid)]
    cues = {c.id: c for found in any_store.cues_of_turns(turn_ids_of).values() for c in found}
    assert cue_ids.tolist() == sorted(cues) and codes.dtype == np.int8 and codes.shape == (len(cues), DIM)
    assert turn_ids.tolist() == [cues[c].turn_id for c in cue_ids.tolist()]
    assert conversation_ids.tolist() == [ids[any_store.turns_by_id([t])[t].conversation] for t in turn_ids.tolist()]
    stored = any_store.statement_vectors(turn_ids.tolist())
    for row, cue_id in enumerate(cue_ids.tolist()):
        cue = cues[cue_id]
        if cue.kind == "statement":
            [(_, vector)] = stored[cue.turn_id]
            assert np.array_equal(codes[row], encode(vector)[0])
    assert any_store.cues_by_id(cue_ids[:3].tolist()) == {c: cues[c] for c in cue_ids[:3].tolist()}
    assert any_store.cue_count() == len(cues) == 2 * any_store.cue_count(ids["a"])
    turns, turn_codes = any_store.turn_codes(DIM)
    vectors = any_store.turn_vectors(turns.tolist())
    assert turns.tolist() == sorted(vectors) and all(np.array_equal(turn_codes[i], encode(vectors[t])[0])
                                                     for i, t in enumerate(turns.tolist()))
    src, dst, kind, weight, rank = any_store.edge_columns()
    rows = sorted(zip(src.tolist(), dst.tolist(), ["semantic" if k == SEMANTIC else "temporal" for k in kind.tolist()],
                      rank.tolist(), weight.tolist(), strict=True))
    assert set(kind.tolist()) == {SEMANTIC, TEMPORAL}
    want = sorted((a, b, k, r, w) for a, b, k, w, r in any_store.all_edges())
    assert [row[:4] for row in rows] == [row[:4] for row in want]
    assert np.allclose([row[4] for row in rows], [row[4] for row in want])  # float32 columns
    assert len(any_store.all_edges()) == sum(len(any_store.all_edges(cid)) for cid in ids.values())


def test_conversations_carry_their_titles(any_store):
    ids = fill(any_store)
    cid = titled(any_store, "chat-1", "Trip to Denver", ["2023-06-01T09:00:00"])
    assert any_store.conversations() == [(ids["a"], "a", None), (ids["b"], "b", None),
                                         (cid, "chat-1", "Trip to Denver")]
    assert [s["title"] for s in any_store.conversation_stats()] == [None, None, "Trip to Denver"]
    [turn] = any_store.turns(cid)
    assert (turn.title, turn.stored_at is not None) == ("Trip to Denver", True)


def test_each_backend_keeps_its_own_knn_limit(any_store):
    """sqlite-vec caps k at VEC0_MAX_K; PostgreSQL's exact scan has no cap (backend limits on their own side)."""
    from cuemem_cli.store.sqlite import VEC0_MAX_K, SQLiteStore

    sqlite = isinstance(any_store, SQLiteStore)
    assert any_store.max_k == (VEC0_MAX_K if sqlite else None)
    any_store.bind_embedder("m", DIM, "test")
    n = VEC0_MAX_K + 10
    with any_store.transaction():
        cid = any_store.conversation_id("big", create=True)
        [tid] = any_store.insert_turns([NewTurn(cid, 0, "t0", "many cues", "h", None, None, None, None, {})])
        cue_ids = any_store.insert_cues(cid, [(tid, "s", "r", f"o{i}", "triple") for i in range(n)])
        any_store.insert_vectors(cid, cue_ids, unit(np.random.default_rng(3), n))
    found = any_store.knn_cues(unit(np.random.default_rng(4), 1)[0], n)
    assert len(found) == (VEC0_MAX_K if sqlite else n)
    sims = [sim for _, sim in found]
    assert sims == sorted(sims, reverse=True)


def test_scrub_after_a_forget_keeps_what_remains(any_store):
    ids = fill(any_store)
    with any_store.transaction():
        any_store.delete_turns([t.id for t in any_store.turns(ids["a"])])
        with pytest.raises(StoreError, match="inside a transaction"):
            any_store.scrub()
    any_store.scrub()
    assert conversation_names(any_store) == ["b"]
    assert len(any_store.knn_cues(unit(np.random.default_rng(1), 1)[0], 100)) == 2 * len(TEXTS)
    assert {t for t, _ in any_store.search_turns_fts('"dogs"', 10)} <= {t.id for t in any_store.turns(ids["b"])}


def test_browse_lists_conversations_most_recent_first_with_their_titles(any_store):
    fill(any_store)
    titled(any_store, "chat-1", "Trip to Denver", ["2023-06-01T09:00:00", "2023-06-02T09:00:00"])
    with any_store.transaction():
        any_store.conversation_id("empty", create=True)  # no turn said: listed by when it was created (now)
    total, rows = any_store.browse_conversations(None, None, 0, 10)
    assert total == 4 and [r["conversation"] for r in rows] == ["empty", "chat-1", "b", "a"]  # a tie: newer first
    assert rows[0] == {"conversation": "empty", "title": None, "first_time": None, "last_time": None,
                       "turns": 0, "cues": 0}
    assert rows[1] == {"conversation": "chat-1", "title": "Trip to Denver", "first_time": "2023-06-01T09:00:00",
                       "last_time": "2023-06-02T09:00:00", "turns": 2, "cues": 0}
    assert rows[3] == {"conversation": "a", "title": None, "first_time": "2023-05-01T10:00:00",
                       "last_time": "2023-05-04T10:00:00", "turns": len(TEXTS), "cues": 2 * len(TEXTS)}
    assert any_store.browse_conversations(None, None, 1, 2) == (4, rows[1:3])

    def names(search, name=None):
        total, rows = any_store.browse_conversations(search, name, 0, 10)
        assert total == len(rows)
        return [r["conversation"] for r in rows]

    assert names("denVER") == ["chat-1"]  # the title, whatever the case
    assert names("CHAT") == ["chat-1"] and names("a") == ["chat-1", "a"]  # the name
    assert names("%") == [] and names("_") == []  # a substring, not a pattern
    assert names(None, "a") == ["a"] and names(None, "nope") == [] and names("denver", "a") == []


def test_browse_search_finds_turns_of_every_conversation_holding_every_word(any_store):
    fill(any_store)

    def found(*words, limit=50):
        hits = any_store.browse_search_turns(list(words), limit)
        scores = [s for _, s in hits]
        assert scores == sorted(scores, reverse=True)  # best first
        turns = any_store.turns_by_id([t for t, _ in hits])
        return sorted((turns[t].conversation, turns[t].source_id) for t, _ in hits)

    assert found("dog") == [(c, t) for c in "ab" for t in ("t0", "t1", "t8")]  # stemmed, in both conversations
    assert found("Biscuit", "pepper") == [(c, t) for c in "ab" for t in ("t2", "t9")]  # every word
    assert found("biscuit", "hiking") == []
    assert found("Pepper", "AND") == found("pepper", "and") == found("biscuit", "pepper")  # a word, not syntax
    assert found('biscuit"') == found("biscuit")
    assert len(found("dog", limit=2)) == 2
    assert found() == [] and found("dog", limit=0) == []


def test_the_name_index_keeps_signs_per_turn_and_names_per_conversation(any_store):
    """Signs of a name go with their turns, learned names with their conversation; a turn's signs are
    replaced whole; `texts_holding` finds a word anywhere in a text, in its case."""
    ids = fill(any_store)
    a, b = ids["a"], ids["b"]
    ta, tb = [t.id for t in any_store.turns(a)], [t.id for t in any_store.turns(b)]
    assert names_indexed(any_store)  # a memory new at m017 is complete from its start (ingest keeps it)
    with any_store.transaction():
        any_store.replace_name_signs(ta[:3], [(a, ta[1], "Kate", 2), (a, ta[2], "Kate", 1), (a, ta[2], "Bo", 3)])
        any_store.replace_name_signs(ta[2:4], [(a, ta[3], "Kate", 2)])  # ta[2]'s signs replaced: none left
        any_store.replace_name_signs(tb[:1], [(b, tb[0], "Kate", 2)])
        any_store.set_learned_names(a, {"Kate": "Maya", "Bo": "Leo"})
        any_store.set_learned_names(a, {"Kate": "Maya"})
        any_store.set_learned_names(b, {"Kate": "Leo"})
    assert any_store.name_signs(a) == [(ta[1], "Maya", None, "Kate", 2), (ta[3], "Maya", None, "Kate", 2)]
    assert any_store.learned_names() == [("a", "Kate", "Maya"), ("b", "Kate", "Leo")]
    assert any_store.learned_names(["Kate", "Nobody"], [b]) == [("b", "Kate", "Leo")]
    assert any_store.learned_names(["Bo"]) == []
    assert any_store.texts_holding(a, "Denver") == [TEXTS[5], TEXTS[6], TEXTS[10]]
    assert any_store.texts_holding(a, "denver") == [] and any_store.texts_holding(a, "Bisc") == [TEXTS[2], TEXTS[9]]
    with any_store.transaction():
        any_store.delete_turns([ta[1]])
        any_store.delete_turns(tb)
    assert any_store.name_signs(a) == [(ta[3], "Maya", None, "Kate", 2)]
    assert any_store.name_signs(b) == [] and any_store.learned_names() == [("a", "Kate", "Maya")]
    assert name_index(any_store) is any_store


def protocols() -> list[type]:
    """Every Protocol store/base.py declares."""
    return [value for value in vars(base).values() if isinstance(value, type) and value.__module__ == base.__name__
            and typing.Protocol in value.__mro__[1:]]


def _changed(store, ids: dict[str, int]) -> list[int]:
    """Two changes in conversation "a" of fill(): t5 → t7 (a move) and t0 → t9 (a contradiction); the turn ids."""
    turn_ids = [t.id for t in maintenance(store).turns(ids["a"])]
    with store.transaction():
        assert change_records(store).insert_changes(ids["a"], [
            (turn_ids[5], turn_ids[7], "maya", "live in", "Lisbon", "Denver", "change"),
            (turn_ids[0], turn_ids[9], "maya", "adopt", "two dogs", "not two dogs", "contradiction"),
            (turn_ids[5], turn_ids[7], "maya", "live in", "Lisbon", "Denver", "change")]) == 3  # again: kept once
    return turn_ids


def test_changes_are_recorded_read_and_go_with_their_turns(any_store):
    """m018: a change links two turns; it is read by either turn and by conversation, oldest newer turn first,
    cleared for a rebuild, and deleted with either of its turns."""
    ids = fill(any_store)
    records = change_records(any_store)
    turn_ids = _changed(any_store, ids)
    every = records.changes(ids["a"])
    assert [(c.older, c.newer, c.kind, c.older_value, c.newer_value) for c in every] == [
        ("t5", "t7", "change", "Lisbon", "Denver"), ("t0", "t9", "contradiction", "two dogs", "not two dogs")]
    assert every[0].older_turn == turn_ids[5] and every[0].newer_time == "2023-05-03T10:00:00"
    assert records.changes() == every and records.changes(ids["b"]) == []
    assert records.changes_of_turns([turn_ids[7]]) == every[:1] and records.changes_of_turns([turn_ids[0]]) == every[1:]
    sources = list(records.change_sources(ids["a"]))
    assert [row[0] for row in sources] == turn_ids and sources[0][1] == TEXTS[0]
    assert [(t.subject, t.relation, t.object) for t in sources[0][4]] == [("Maya", "said", "I")]  # triples only
    with any_store.transaction():
        any_store.delete_turns([turn_ids[7]])
    assert records.changes() == every[1:]
    with any_store.transaction():
        assert records.clear_changes(ids["a"]) == 1
    assert records.changes() == []


def test_every_protocol_method_has_a_contract_test():
    """Each public member of every store Protocol is called somewhere in this module, whose tests run on
    both backends: a method added to a Protocol (or a Protocol added) without a contract test fails here."""
    members = {name for protocol in protocols() for name in {*vars(protocol), *protocol.__annotations__}
               if not name.startswith("_")}
    assert [p.__name__ for p in protocols()] == ["Store", "SavedCueGraph", "KindIndex", "ExtractionRecords",
                                                 "ChangeRecords",
                                                 "Maintenance", "NameIndex", "BrowseQueries", "EvalQueries"]
    assert len(members) > 60 and {"knn_cues", "delete_turns", "max_k", "path", "cached_triples", "forget_selection",
                                  "browse_conversations", "all_turn_texts"} <= members
    used = {node.attr for node in ast.walk(ast.parse(Path(__file__).read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute)}
    assert sorted(members - used) == []


def test_the_saved_cue_graph_is_replaced_whole_and_read_back(any_store):
    """The ingest's HNSW graph (ingest/graph.py) is kept as named parts of bytes, replaced whole in a write
    transaction; a backend without the table is not one (base.saved_cue_graph then says None)."""
    saved = base.saved_cue_graph(any_store)
    assert saved is any_store and saved.cue_graph() == {}
    with any_store.transaction():
        saved.save_cue_graph({"header": b'{"version": 1}', "neighbors": bytes(range(256)) * 4})
    assert saved.cue_graph() == {"header": b'{"version": 1}', "neighbors": bytes(range(256)) * 4}
    with any_store.transaction():
        saved.save_cue_graph({"header": b"{}"})
    assert saved.cue_graph() == {"header": b"{}"}
    assert base.saved_cue_graph(SimpleNamespace(path="elsewhere")) is None


def test_each_backend_is_every_protocol_and_a_backend_without_one_is_refused_by_name(any_store):
    """Both backends pass as each tool's protocol; a store that lacks one (a third backend with only the
    engine's `Store`, say) is refused naming what it lacks, before a tool calls a method it does not have."""
    for narrow in (extraction_records, maintenance, browse_queries, change_records):
        assert narrow(any_store) is any_store
    engine_only = SimpleNamespace(path="elsewhere", read_only=None, max_k=None)
    assert name_index(engine_only) is None  # ingest keeps no names there, a question learns them from turns
    assert change_records(engine_only) is None  # a memory without them still answers, with no change found
    with pytest.raises(StoreError, match=r"elsewhere: its backend \(SimpleNamespace\) has no Maintenance"):
        maintenance(engine_only)
    with pytest.raises(StoreError, match="has no BrowseQueries"):
        browse_queries(engine_only)
    with pytest.raises(StoreError, match="has no ExtractionRecords"):
        extraction_records(engine_only)


# --------------------------------------------------- both backends, compared
def _unstamped(turns):
    """Turns without `stored_at`: the clock of each backend's fill, which a loaded machine puts a second apart."""
    if isinstance(turns, dict):
        return {key: dataclasses.replace(t, stored_at=None) for key, t in turns.items()}
    return [dataclasses.replace(t, stored_at=None) for t in turns]


def test_both_backends_return_the_same_rows(both):
    sqlite, postgres = both
    ids = _same(fill(sqlite), fill(postgres))
    cid = ids["a"]
    _same(conversation_names(sqlite), conversation_names(postgres))
    turns = _same(_unstamped(sqlite.turns(cid)), _unstamped(postgres.turns(cid)))
    turn_ids = [t.id for t in turns]
    _same(_unstamped(sqlite.turns_by_id(turn_ids[2:5])), _unstamped(postgres.turns_by_id(turn_ids[2:5])))
    _same(sqlite.stored_texts(cid, ["t1", "t3", "nope"]), postgres.stored_texts(cid, ["t1", "t3", "nope"]))
    _same(sqlite.next_position(cid), postgres.next_position(cid))
    _same(sqlite.speakers([cid]), postgres.speakers([cid]))
    _same(sqlite.speakers(), postgres.speakers())
    speaker = sqlite.speakers([cid])[0]
    assert _same(sqlite.conversations_with_speakers([speaker]), postgres.conversations_with_speakers([speaker])) == {
        c: name for c, name, _ in sqlite.conversations()}  # fill() has each speaker in both conversations
    for scope in ([cid], None):
        _same(sqlite.conversations_with_speakers([speaker, "Nobody"], scope),
              postgres.conversations_with_speakers([speaker, "Nobody"], scope))
    assert sqlite.conversations_with_speakers(["Nobody"]) == {} == postgres.conversations_with_speakers([])
    people = _same(sqlite.speaker_sets(), postgres.speaker_sets())
    assert people[cid] == frozenset(sqlite.speakers([cid]))
    _same(sqlite.speaker_sets([cid]), postgres.speaker_sets([cid]))
    _same(sqlite.conversations(), postgres.conversations())
    assert len(_same(sqlite.turns_with_source_id("t7", cid), postgres.turns_with_source_id("t7", cid))) == 1
    assert len(_same(sqlite.turns_with_source_id("t7"), postgres.turns_with_source_id("t7"))) == len(
        sqlite.conversations())  # fill() gives both conversations a t7
    assert sqlite.turns_with_source_id("none") == [] == postgres.turns_with_source_id("none", cid)
    _same(sqlite.turns_at_positions(cid, 2, 5), postgres.turns_at_positions(cid, 2, 5))
    _same(sqlite.pending_turns(), postgres.pending_turns())
    for scope in ([cid], None):
        _same(sqlite.turns_not_held_at("2023-05-02T12:00:00", scope), postgres.turns_not_held_at("2023-05-02T12:00:00",
                                                                                                  scope))
    _same(sqlite.previous_turns(turn_ids), postgres.previous_turns(turn_ids))
    _same(sqlite.turns_after(turn_ids[4:7]), postgres.turns_after(turn_ids[4:7]))
    _same(sqlite.last_turn(cid), postgres.last_turn(cid))
    _same(texts_with_previous(sqlite, turn_ids), texts_with_previous(postgres, turn_ids))
    _same(sqlite.cues_of_turns(turn_ids), postgres.cues_of_turns(turn_ids))
    _same(sqlite.cue_count(cid), postgres.cue_count(cid))
    _same(sqlite.all_edges(cid), postgres.all_edges(cid))
    _same(sqlite.all_edges(), postgres.all_edges())
    assert sorted(sqlite.edges_of(turn_ids[5])) == sorted(postgres.edges_of(turn_ids[5]))  # ties: any order
    assert sorted(sqlite.neighbours(turn_ids[3:6], 1, 2)) == sorted(postgres.neighbours(turn_ids[3:6], 1, 2))
    _same(sqlite.conversation_stats(), postgres.conversation_stats())
    _same(sqlite.degree_stats(cid), postgres.degree_stats(cid))
    _same(list(sqlite.export_turns(None)), list(postgres.export_turns(None)))
    for got, want in zip(sqlite.cue_codes(DIM), postgres.cue_codes(DIM), strict=True):
        assert np.array_equal(got, want)
    for got, want in zip(sqlite.turn_codes(DIM), postgres.turn_codes(DIM), strict=True):
        assert np.array_equal(got, want)
    for got, want in zip(sqlite.edge_columns(), postgres.edge_columns(), strict=True):
        assert np.array_equal(np.sort(got), np.sort(want))
    s_vec, p_vec = sqlite.statement_vectors(turn_ids), postgres.statement_vectors(turn_ids)
    assert s_vec.keys() == p_vec.keys()
    assert all(np.array_equal(s_vec[t][0][1], p_vec[t][0][1]) and s_vec[t][0][0] == p_vec[t][0][0] for t in s_vec)


def test_both_backends_find_the_same_nearest_cues_ties_by_lowest_id(both):
    sqlite, postgres = both
    cid = _same(fill(sqlite), fill(postgres))["a"]
    rng = np.random.default_rng(1)
    codes = sqlite.cue_codes(DIM).codes
    vectors = codes.astype(np.float32) / np.linalg.norm(codes.astype(np.float32), axis=1, keepdims=True)
    for query in [*unit(rng, 20), vectors[0]]:
        for k in (1, 5, 24, 48):
            for scope in ([cid], None):
                want, got = sqlite.knn_cues(query, k, scope), postgres.knn_cues(query, k, scope)
                assert [c for c, _ in got] == [c for c, _ in want]
                assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-6)
    tied = postgres.knn_cues(vectors[0], 2, [cid])
    assert [c.id for c, _ in tied] == sorted(c.id for c, _ in tied)  # the equal pair, lowest id first


def test_both_backends_rank_lexical_hits_alike_by_bm25(both):
    """Over the whole memory FTS5's bm25() (its counts over the file) and PostgreSQL's (over the memory)
    count alike."""
    sqlite, postgres = both
    _same(fill(sqlite), fill(postgres))
    for query in ('"dogs" OR "painting"', '"denver"', '"biscuit" OR "pepper" OR "hiking"', '"watercolors"',
                  '"sister" OR "painter" OR "june"'):
        want, got = sqlite.search_turns_fts(query, 50), postgres.search_turns_fts(query, 50)
        assert sorted(t for t, _ in got) == sorted(t for t, _ in want), query
        assert np.allclose(sorted(s for _, s in got), sorted(s for _, s in want), rtol=1e-6), query


def test_both_backends_record_the_same_changes(both):
    sqlite, postgres = both
    ids = _same(fill(sqlite), fill(postgres))
    _same(_changed(sqlite, ids), _changed(postgres, ids))
    _same(change_records(sqlite).changes(), change_records(postgres).changes())
    _same(list(change_records(sqlite).change_sources(ids["b"])),
          list(change_records(postgres).change_sources(ids["b"])))


def test_both_backends_select_the_same_turns_to_forget(both):
    sqlite, postgres = both
    ids = _same(fill(sqlite), fill(postgres))
    for store in both:
        with store.transaction():
            store.mark_retrieved(ids["a"], ["t2", "t5"], "2023-06-01T00:00:00")
            store.mark_retrieved(ids["a"], ["t7"], "2023-06-02T00:00:00")
    for args in [(ids["a"], None, None, None, None, None), (None, "s2", None, None, None, None),
                 (ids["a"], None, ["t1", "t2", "zz"], None, None, None), (None, None, None, "2023-05-03", None, None),
                 (None, None, None, None, "2023-05-03T00:00:00", None), (None, None, None, None, None, 3),
                 (ids["b"], "s1", None, None, None, 2)]:
        selected = _same(sqlite.forget_selection(*args), postgres.forget_selection(*args))
        _same(sqlite.forget_counts([t for t, _ in selected]), postgres.forget_counts([t for t, _ in selected]))
    doomed = [t for t, _ in sqlite.forget_selection(ids["a"], "s1", None, None, None, None)]
    with sqlite.transaction(), postgres.transaction():
        _same(sqlite.delete_turns(doomed), postgres.delete_turns(doomed))
    _same(sqlite.conversation_stats(), postgres.conversation_stats())


def test_both_backends_browse_the_same_conversations_and_find_the_same_turns(both):
    sqlite, postgres = both
    _same(fill(sqlite), fill(postgres))
    for store in both:
        titled(store, "chat-1", "Trip to Denver", ["2023-06-01T09:00:00", "2023-06-02T09:00:00"])
        titled(store, "chat-2", "Dogs in the park", ["2023-04-01T09:00:00"])
    for args in [(None, None, 0, 10), (None, None, 1, 2), ("DENVER", None, 0, 10), ("chat", None, 0, 1),
                 ("a", None, 0, 10), (None, "chat-2", 0, 1), ("zz", None, 0, 10)]:
        _same(sqlite.browse_conversations(*args), postgres.browse_conversations(*args))
    for words in (["dogs"], ["painting"], ["biscuit", "pepper"], ["denver", "june"], ["turn", "chat"], ["of"],
                  ["watercolors", "dog"]):
        want, got = sqlite.browse_search_turns(words, 50), postgres.browse_search_turns(words, 50)
        assert sorted(t for t, _ in got) == sorted(t for t, _ in want), words  # the scores are each backend's


def test_kinds_are_kept_per_turn_found_by_kind_speaker_and_conversation_and_go_with_their_turn(any_store):
    """KindIndex: a turn's kinds as written (a row again changes nothing), the turns of some kinds by scope and
    speaker (newest first, at most `limit`), counts per kind, a conversation's kinds deleted, and a turn's kinds
    gone with the turn."""
    ids = fill(any_store)
    a, b = (sorted(t.id for t in any_store.turns(ids[name])) for name in "ab")
    with any_store.transaction():
        any_store.insert_turn_kinds([(a[0], "dog"), (a[0], "animal"), (a[5], "city"), (a[10], "city"),
                                     (b[5], "city"), (a[0], "dog")])
    assert any_store.turn_kinds([a[0], a[5], a[1]]) == {a[0]: ("animal", "dog"), a[5]: ("city",)}
    assert any_store.turns_of_kinds(["city"]) == [b[5], a[10], a[5]]
    assert any_store.turns_of_kinds(["city", "dog"], [ids["a"]]) == [a[10], a[5], a[0]]
    assert any_store.turns_of_kinds(["city", "dog"], [ids["a"]], speakers=["Maya"]) == [a[5]]  # Maya: odd turns
    assert any_store.turns_of_kinds(["city"], limit=1) == [b[5]]
    assert any_store.turns_of_kinds([]) == [] and any_store.turns_of_kinds(["sport"]) == []
    assert any_store.kind_counts() == {"city": 3, "animal": 1, "dog": 1}
    assert any_store.kind_counts(ids["b"]) == {"city": 1}
    with any_store.transaction():
        any_store.delete_turns([a[0]])
        assert any_store.delete_turn_kinds([ids["b"]]) == 1
    assert any_store.kind_counts() == {"city": 2}
    assert any_store.turn_kinds([a[0], b[5]]) == {}


def test_postgres_refuses_a_database_with_other_tables(pg_url):
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(StoreError, match="no cuemem schema"):
        open_store(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    assert tables == ["invoices"]


def test_postgres_refuses_a_newer_schema(pg_url):
    store = open_store(pg_url)
    store.conn.execute("INSERT INTO _migrations VALUES ('m999_from_the_future', 'now')")
    store.close()
    with pytest.raises(StoreError, match="newer cuemem"):
        open_store(pg_url)


def test_postgres_password_is_not_shown(pg_url):
    from cuemem_cli.store.postgres import redacted

    assert redacted("postgresql://app:s3cret@db.internal:5432/memory") == "postgresql://app:***@db.internal:5432/memory"
    store = open_store(pg_url)
    assert store.path == pg_url  # no password in it: shown as it is
    store.close()
