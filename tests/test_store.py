"""The store: file safety, migrations, model guard, vec0 search within one conversation."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from cuemem_cli.errors import StoreError
from cuemem_cli.store.migrations import MIGRATIONS, Migration
from cuemem_cli.store.base import TURN_ALONE, turn_vector_text
from cuemem_cli.store.sqlite import SQLiteStore, sqlite3

VECTOR_MIGRATIONS = [m for m in MIGRATIONS if m.needs_dim]


def test_new_db_is_private_wal_and_migrated(tmp_path):
    path = tmp_path / "sub" / "memory.db"
    store = SQLiteStore.open(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.schema_version() == len(MIGRATIONS) - len(VECTOR_MIGRATIONS)  # those wait for an embedder
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"meta", "conversations", "turns", "cues", "edges", "extraction_cache", "_migrations"} <= tables
    store.close()


def test_reopen_does_not_migrate_twice(db_path):
    SQLiteStore.open(db_path).close()
    store = SQLiteStore.open(db_path)
    applied = store.conn.execute("SELECT count(*) FROM _migrations").fetchone()[0]
    assert applied == len(MIGRATIONS) - len(VECTOR_MIGRATIONS)
    store.bind_embedder("m", 4, "test")
    store.close()
    store = SQLiteStore.open(db_path)
    assert store.conn.execute("SELECT count(*) FROM _migrations").fetchone()[0] == len(MIGRATIONS)


def test_refuses_a_file_that_is_not_sqlite_and_leaves_it_untouched(tmp_path):
    path = tmp_path / "notes.db"
    path.write_bytes(b"my precious notes\n" * 10)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a SQLite database"):
        SQLiteStore.open(path)
    assert path.read_bytes() == before
    assert not (tmp_path / "notes.db-wal").exists()


def test_refuses_a_foreign_sqlite_database(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t(x)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a cuemem one"):
        SQLiteStore.open(path)
    assert path.read_bytes() == before


def test_refuses_a_newer_schema(db_path):
    store = SQLiteStore.open(db_path)
    store.conn.execute("INSERT INTO _migrations VALUES ('m999_from_the_future', 'now')")
    store.close()
    with pytest.raises(StoreError, match="newer cuemem"):
        SQLiteStore.open(db_path)


def test_older_schema_is_backed_up_then_migrated(db_path, monkeypatch):
    store = SQLiteStore.open(db_path)
    store.bind_embedder("m", 4, "test")
    with store.transaction():
        store.conversation_id("c", create=True)  # something to lose
    store.close()
    later = "CREATE TABLE added_later (x)"
    monkeypatch.setattr("cuemem_cli.store.migrations.MIGRATIONS", [*MIGRATIONS, Migration("m900_test", later, later)])
    store = SQLiteStore.open(db_path)
    assert store.schema_version() == len(MIGRATIONS) + 1
    backup = db_path.parent / f"{db_path.name}.bak-schema{len(MIGRATIONS)}"
    assert backup.exists()
    old = sqlite3.connect(backup)
    assert old.execute("SELECT count(*) FROM _migrations").fetchone()[0] == len(MIGRATIONS)


def test_knn_ranges_over_the_memory_or_stays_inside_the_conversations_named(store):
    store.bind_embedder("m", 4, "test")
    from cuemem_cli.store.base import NewTurn

    with store.transaction():
        ids = {}
        for name in ("a", "b"):
            cid = store.conversation_id(name, create=True)
            [tid] = store.insert_turns([NewTurn(cid, 0, "t0", "same text", "h", None, None, None, None, {})])
            cue_ids = store.insert_cues(cid, [(tid, "x", "y", "z", "triple")])
            store.insert_vectors(cid, cue_ids, np.array([[1, 0, 0, 0]], dtype=np.float32))
            ids[name] = cid
    query = np.array([1, 0, 0, 0], dtype=np.float32)
    hits = store.knn_cues(query, 10, [ids["a"]])
    assert len(hits) == 1
    assert hits[0][1] == pytest.approx(1.0)
    turn = store.turns_by_id([hits[0][0].turn_id])[hits[0][0].turn_id]
    assert turn.conversation == "a"
    everywhere = store.knn_cues(query, 10)
    assert {store.turns_by_id([c.turn_id])[c.turn_id].conversation for c, _ in everywhere} == {"a", "b"}
    assert store.knn_cues(query, 10, []) == []


@pytest.mark.usefixtures("stub_models")
def test_schema_one_database_gets_turn_vectors_on_open(tmp_path):
    """A database from before m002 is backed up, then each turn with cues gets the mean of its sentence
    vectors (no model is needed to open a database), and ask works on it."""
    from cuemem_cli import Memory

    path = tmp_path / "old.db"
    with Memory(path) as mem:
        mem.add([{"conversation": "c", "speaker": "Ana",
                  "text": "I moved to Lisbon in May. The light there is lovely."},
                 {"conversation": "c", "speaker": "Ben", "text": "Lisbon! Do you still paint?"}])
        ids = [t.id for t in mem.store.turns(mem.store.conversation_id("c"))]
        mem.store.conn.execute("DROP TABLE turn_vectors")
        mem.store.conn.execute("ALTER TABLE conversations DROP COLUMN title")
        mem.store.conn.execute("DELETE FROM meta WHERE key = 'turn_vectors'")
        mem.store.conn.execute("ALTER TABLE turns DROP COLUMN stored_at")
        mem.store.conn.execute("DROP TABLE cue_signs")
        mem.store.conn.execute("DROP TABLE name_signs")
        mem.store.conn.execute("DROP TABLE learned_names")
        mem.store.conn.execute("DROP TABLE turn_kinds")
        mem.store.conn.execute("DELETE FROM _migrations WHERE name != 'm001_initial'")
    store = SQLiteStore.open(path)
    assert (tmp_path / "old.db.bak-schema1").exists()
    vectors = store.turn_vectors(ids)
    assert sorted(vectors) == ids
    assert all(abs(float(np.linalg.norm(v)) - 1.0) < 1e-5 for v in vectors.values())
    assert turn_vector_text(store) == TURN_ALONE  # sentence means: read as vectors of the turn alone
    store.close()
    with Memory(path) as mem:
        assert [e.source_id for e in mem.context("Where did Ana move?", "c").evidence]


def test_lexical_search_is_stemmed_also_in_a_database_from_before_it(db_path, monkeypatch):
    """m004: "dog" finds "dogs"; a database indexed before it is re-indexed when it is opened."""
    from cuemem_cli.recall.question import fts_query

    monkeypatch.setattr("cuemem_cli.store.migrations.MIGRATIONS", MIGRATIONS[:3])
    old = SQLiteStore.open(db_path)
    with old.transaction():
        cid = old.conversation_id("c", create=True)
        tid = old.conn.execute(  # as cuemem wrote turns then (no stored_at column before m006)
            "INSERT INTO turns(conversation_id, position, source_id, text, content_hash) VALUES (?, 0, 't0', ?, 'h')",
            (cid, "Our dogs love painting by the lake")).lastrowid
        old.conn.execute("INSERT INTO turns_fts(rowid, text) VALUES (?, ?)",
                         (tid, "Our dogs love painting by the lake"))
    assert old.search_turns_fts(fts_query("dog"), 10) == []  # the old index matched whole words only
    old.close()
    monkeypatch.setattr("cuemem_cli.store.migrations.MIGRATIONS", MIGRATIONS)
    store = SQLiteStore.open(db_path)
    for question in ("my dog?", "Who paints?", "lakes"):
        assert [hit for hit, _ in store.search_turns_fts(fts_query(question), 10, [cid])] == [tid], question
    assert store.search_turns_fts(fts_query("cats"), 10) == []


def test_private_dirs_leave_a_users_folder_alone_and_lock_cuemems_own(tmp_path):
    """files.private_dir: a new folder is 0700; an existing folder of the user's (where a --db goes) keeps
    its mode; cuemem's own cache folder and its parent are made 0700 even if they exist."""
    import stat

    from cuemem_cli.files import private_dir

    def mode(path):
        return stat.S_IMODE(path.stat().st_mode)

    assert mode(private_dir(tmp_path / "new" / "db")) == 0o700
    users = tmp_path / "projects"
    users.mkdir(mode=0o755)
    users.chmod(0o755)
    assert mode(private_dir(users)) == 0o755
    cache = users / "models"
    cache.mkdir(mode=0o755)
    cache.chmod(0o755)
    assert private_dir(cache, ours=True) == cache and mode(cache) == 0o700 and mode(users) == 0o700
