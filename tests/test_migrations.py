"""Migrations (store/migrations.py) as the store applies them (store.SQLStore._migrate): a new database gets
every one, a database the previous code wrote upgrades to the same schema, a newer one is refused, and
each runs alone. On SQLite here; PostgreSQL's in-place upgrade from its old schema is at the end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cuemem_cli.store import migrations
from cuemem_cli.errors import StoreError
from cuemem_cli.store.migrations import MIGRATIONS, Migration, steps
from cuemem_cli.store.base import conversation_names
from cuemem_cli.store.sqlite import APPLICATION_ID, SQLiteStore

from conftest import assert_whole, raw

PLAIN = [s.name for s in steps(MIGRATIONS) if not s.needs_dim]
VECTOR = [s.name for s in steps(MIGRATIONS) if s.needs_dim]

# The schema the code before migrations-as-functions left (its migrations m001-m006 as SQL strings, then
# the vec0 table created at run time by bind_embedder), frozen here as it was written.
PREVIOUS_SCHEMA = [
    "CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE conversations (\n            id INTEGER PRIMARY KEY,\n            name TEXT NOT NULL UNIQUE,\n"
    "            created_at TEXT NOT NULL\n        )",
    "CREATE TABLE turns (\n            id INTEGER PRIMARY KEY,\n"
    "            conversation_id INTEGER NOT NULL REFERENCES conversations(id),\n"
    "            position INTEGER NOT NULL,\n            source_id TEXT NOT NULL,\n            session TEXT,\n"
    "            time TEXT,\n            speaker TEXT,\n            role TEXT,\n            text TEXT NOT NULL,\n"
    "            content_hash TEXT NOT NULL,\n            extra TEXT,\n"
    "            status TEXT NOT NULL DEFAULT 'done' CHECK (status IN ('done', 'pending')),\n"
    "            last_retrieved_at TEXT, stored_at TEXT,\n            UNIQUE (conversation_id, source_id),\n"
    "            UNIQUE (conversation_id, position)\n        )",
    "CREATE INDEX turns_time ON turns(conversation_id, time)",
    "CREATE TABLE cues (\n            id INTEGER PRIMARY KEY,\n"
    "            turn_id INTEGER NOT NULL REFERENCES turns(id),\n"
    "            conversation_id INTEGER NOT NULL REFERENCES conversations(id),\n            subject TEXT NOT NULL,\n"
    "            relation TEXT NOT NULL,\n            object TEXT NOT NULL,\n"
    "            kind TEXT NOT NULL DEFAULT 'triple'\n        )",
    "CREATE INDEX cues_turn ON cues(turn_id)",
    "CREATE INDEX cues_conversation ON cues(conversation_id)",
    "CREATE TABLE edges (\n            src INTEGER NOT NULL REFERENCES turns(id),\n"
    "            dst INTEGER NOT NULL REFERENCES turns(id),\n"
    "            kind TEXT NOT NULL CHECK (kind IN ('temporal', 'semantic')),\n            weight REAL NOT NULL,\n"
    "            rank INTEGER NOT NULL,\n            PRIMARY KEY (src, kind, dst)\n        ) WITHOUT ROWID",
    "CREATE INDEX edges_dst ON edges(dst, kind)",
    "CREATE TABLE extraction_cache (\n            model TEXT NOT NULL,\n            prompt_version TEXT NOT NULL,\n"
    "            turn_hash TEXT NOT NULL,\n            triples TEXT NOT NULL,\n"
    "            PRIMARY KEY (model, prompt_version, turn_hash)\n        ) WITHOUT ROWID",
    "CREATE TABLE turn_vectors (\n            turn_id INTEGER PRIMARY KEY REFERENCES turns(id),\n"
    "            embedding BLOB NOT NULL\n        )",
    "CREATE TABLE cell_centroids (\n            id INTEGER PRIMARY KEY,\n"
    "            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,\n"
    "            centroid BLOB NOT NULL\n        )",
    "CREATE INDEX cell_centroids_conversation ON cell_centroids(conversation_id)",
    "CREATE VIRTUAL TABLE turns_fts USING fts5(text, content='', contentless_delete=1, tokenize='porter unicode61')",
    "CREATE VIRTUAL TABLE cues_fts USING fts5(text, content='', contentless_delete=1, tokenize='porter unicode61')",
]
PREVIOUS_MIGRATIONS = ["m001_initial", "m002_turn_vectors", "m003_cells", "m004_porter_fts",
                       "m005_turn_vector_text", "m006_turn_stored_at"]
DIM = 4


def script(name: str, sql: str) -> Migration:
    """A migration whose body is the same SQL script on both backends."""
    return Migration(name, sql, sql)


def before(name: str) -> list[Migration]:
    """The migration list as it was before `name` was added."""
    return MIGRATIONS[:[m.name for m in MIGRATIONS].index(name)]


def previous_database(path, bound: bool, extra_migrations: tuple[str, ...] = ()) -> None:
    """A database as the previous code left it: one conversation of two turns with cues, vectors and both
    FTS indexes (bound to a 4-d embedder), or, unbound, never ingested into."""
    conn = raw(path)
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    conn.execute("PRAGMA journal_mode=WAL")
    for sql in PREVIOUS_SCHEMA:
        conn.execute(sql)
    conn.executemany("INSERT INTO _migrations VALUES (?, '2026-01-01T00:00:00')",
                     [(n,) for n in [*PREVIOUS_MIGRATIONS, *extra_migrations]])
    if bound:
        conn.execute("CREATE VIRTUAL TABLE cue_vectors USING vec0(cue_id INTEGER PRIMARY KEY, conversation_id"
                     f" INTEGER PARTITION KEY, embedding float[{DIM}] distance_metric=cosine)")
        conn.executemany("INSERT INTO meta VALUES (?, ?)",
                         [("embedding_model", "m"), ("embedding_dim", str(DIM)), ("embedding_backend", "test")])
        conn.execute("INSERT INTO conversations VALUES (1, 'c', '2026-01-01T00:00:00')")
        for tid, text, vector in ((1, "Our dogs love the lake", [1, 0, 0, 0]), (2, "I paint on Sundays", [0, 1, 0, 0])):
            conn.execute("INSERT INTO turns(id, conversation_id, position, source_id, text, content_hash, stored_at)"
                         " VALUES (?, 1, ?, ?, ?, 'h', '2026-01-01T00:00:00')", (tid, tid - 1, f"t{tid}", text))
            conn.execute("INSERT INTO turns_fts(rowid, text) VALUES (?, ?)", (tid, text))
            conn.execute("INSERT INTO cues VALUES (?, ?, 1, 'x', 'y', ?, 'statement')", (tid, tid, text))
            conn.execute("INSERT INTO cues_fts(rowid, text) VALUES (?, ?)", (tid, f"x y {text}"))
            blob = np.array(vector, dtype=np.float32).tobytes()
            conn.execute("INSERT INTO cue_vectors VALUES (?, 1, ?)", (tid, blob))
            conn.execute("INSERT INTO turn_vectors VALUES (?, ?)", (tid, blob))
        conn.execute("INSERT INTO edges VALUES (1, 2, 'temporal', 1.0, 1)")
    conn.commit()
    conn.close()


def autocommit(path):
    """A connection as Store.open makes it (transactions only where the store begins them)."""
    conn = raw(path)
    conn.isolation_level = None
    return conn


def schema(path) -> dict[str, str]:
    conn = raw(path)
    out = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL"))
    conn.close()
    return out


def recorded(path) -> list[str]:
    conn = raw(path)
    names = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
    conn.close()
    return names


def test_a_new_database_gets_every_migration_the_vector_ones_once_an_embedder_is_bound(db_path):
    store = SQLiteStore.open(db_path)
    assert recorded(db_path) == PLAIN
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master")}
    assert {"turns", "cues", "edges", "turn_vectors", "turns_fts"} <= tables
    assert not {"cue_vectors", "cue_cells", "cues_fts", "cell_centroids"} & tables
    store.bind_embedder("m", DIM, "test")
    assert recorded(db_path) == PLAIN + VECTOR
    sql = store.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'cue_vectors'").fetchone()[0]
    assert f"int8[{DIM}]" in sql and f"chunk_size={migrations.VECTOR_CHUNK}" in sql
    assert "PARTITION KEY" not in sql and "conversation_id INTEGER," in sql  # one table, the conversation as metadata
    assert "cue_cells" not in schema(db_path)
    store.close()
    SQLiteStore.open(db_path).close()  # nothing left to do: no record twice
    assert len(recorded(db_path)) == len(MIGRATIONS)


@pytest.mark.parametrize("bound", [True, False], ids=["bound", "never-ingested"])
def test_a_database_the_previous_code_wrote_upgrades_to_the_same_schema(tmp_path, bound):
    old = tmp_path / "old.db"
    previous_database(old, bound)
    store = SQLiteStore.open(old)
    assert (tmp_path / "old.db.bak-schema6").exists() == bound  # without conversations: nothing to lose
    assert recorded(old)[:6] == PREVIOUS_MIGRATIONS
    if bound:
        assert set(recorded(old)) == {s.name for s in steps(MIGRATIONS)}
        cid = store.conversation_id("c")
        [(cue, similarity)] = store.knn_cues(np.array([0, 1, 0, 0], dtype=np.float32), 1, [cid])
        assert (cue.turn_id, similarity) == (2, pytest.approx(1.0))
        assert [tid for tid, _ in store.search_turns_fts("dog", 10, [cid])] == [1]
        assert sorted(store.turn_vectors([1, 2])) == [1, 2]
    else:
        assert set(recorded(old)) == set(PLAIN)
        store.bind_embedder("m", DIM, "test")
    store.close()
    new = tmp_path / "new.db"
    SQLiteStore.open(new).bind_embedder("m", DIM, "test")
    assert schema(old) == schema(new)
    assert "cues_fts" not in schema(old) and "cues_fts_data" not in schema(old)
    if bound:
        assert_whole(old)


def test_a_database_with_a_newer_migration_is_refused_before_anything_is_applied(tmp_path):
    path = tmp_path / "newer.db"
    previous_database(path, bound=True, extra_migrations=("m999_from_the_future",))
    with pytest.raises(StoreError, match=r"newer cuemem.*m999_from_the_future"):
        SQLiteStore.open(path)
    assert recorded(path) == [*PREVIOUS_MIGRATIONS, "m999_from_the_future"]
    assert "cues_fts" in schema(path) and "cue_cells" not in schema(path)
    assert not list(tmp_path.glob("newer.db.bak-*"))


def test_two_processes_upgrading_one_database_leave_one_copy(tmp_path, monkeypatch):
    """The copy is made by whichever process applies the first migration; one that opened the file
    before that and got the write lock after it finds the schema moved on, and copies nothing."""
    path = tmp_path / "old.db"
    previous_database(path, bound=True)
    SQLiteStore.open(path).close()  # the first process: copies, then applies m007..
    assert [p.name for p in tmp_path.glob("old.db.bak-*")] == ["old.db.bak-schema6"]
    later = script("m900_later", "CREATE TABLE later (x)")
    monkeypatch.setattr("cuemem_cli.store.migrations.MIGRATIONS", [*MIGRATIONS, later])
    late = SQLiteStore(autocommit(path), str(path))  # the second one looked when the file held m001-m006
    late._migrate(seen=sorted(PREVIOUS_MIGRATIONS))
    assert recorded(path)[-1] == "m900_later"
    assert [p.name for p in tmp_path.glob("old.db.bak-*")] == ["old.db.bak-schema6"]
    late.close()
    SQLiteStore.open(path).close()
    late_again = SQLiteStore(autocommit(path), str(path))  # seen == the file's migrations: this one copies
    more = script("m901_more", "CREATE TABLE more (x)")
    monkeypatch.setattr("cuemem_cli.store.migrations.MIGRATIONS", [*MIGRATIONS, later, more])
    late_again._migrate(seen=sorted(recorded(path)))
    assert (tmp_path / f"old.db.bak-schema{len(MIGRATIONS) + 1}").exists()
    late_again.close()


def test_each_migration_commits_alone_and_a_failing_one_leaves_those_before_it(db_path, monkeypatch):
    def fails_half_way(conn):
        conn.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("boom")

    SQLiteStore.open(db_path).close()
    monkeypatch.setattr("cuemem_cli.store.migrations.MIGRATIONS", [
        *MIGRATIONS, script("m900_fine", "CREATE TABLE fine (x)"),
        Migration("m901_fails_half_way", fails_half_way, fails_half_way)])
    with pytest.raises(RuntimeError, match="boom"):
        SQLiteStore.open(db_path)
    assert recorded(db_path) == [*PLAIN, "m900_fine"]
    assert "fine" in schema(db_path) and "half_done" not in schema(db_path)


def test_a_migration_body_may_be_an_sql_script(db_path, monkeypatch):
    """Statements cut where SQLite says they end, so a ';' inside a string literal stays in it."""
    sql = "CREATE TABLE later (x TEXT);\nINSERT INTO later VALUES ('a; b');\nINSERT INTO later VALUES ('c')"
    monkeypatch.setattr("cuemem_cli.store.migrations.MIGRATIONS", [*MIGRATIONS, script("m900_later", sql)])
    store = SQLiteStore.open(db_path)
    assert [r[0] for r in store.conn.execute("SELECT x FROM later ORDER BY rowid")] == ["a; b", "c"]
    assert recorded(db_path)[-1] == "m900_later"
    store.close()


def test_a_vector_migration_waits_for_the_dimension_then_runs_in_the_binding_transaction(db_path, monkeypatch):
    def vector_index(conn, dim):
        conn.execute(f"CREATE VIRTUAL TABLE later_vectors USING vec0(embedding float[{dim}])")

    monkeypatch.setattr("cuemem_cli.store.migrations.MIGRATIONS",
                        [*MIGRATIONS, Migration("m900_vector_index", vector_index, vector_index, needs_dim=True)])
    store = SQLiteStore.open(db_path)
    assert "m900_vector_index" not in recorded(db_path)
    with pytest.raises(RuntimeError), store.transaction():
        store.bind_embedder("m", 8, "test")
        raise RuntimeError("the ingest failed")
    assert store.get_meta("embedding_dim") is None and "later_vectors" not in schema(db_path)
    store.bind_embedder("m", 8, "test")
    assert recorded(db_path) == [*PLAIN, *VECTOR, "m900_vector_index"]
    assert "float[8]" in schema(db_path)["later_vectors"]
    store.close()


def test_migration_names_never_repeat():
    assert [s.name for s in steps(MIGRATIONS)][:6] == PREVIOUS_MIGRATIONS
    with pytest.raises(ValueError, match="m001_initial"):
        steps([*MIGRATIONS, script("m001_initial", "SELECT 1")])
    assert migrations.split_sql("SELECT 1; ;SELECT ';'") == ["SELECT 1", "SELECT ';'"]


def test_int8_vectors_migrate_an_existing_database_to_the_same_neighbours(tmp_path, monkeypatch):
    """m010 turns the float32 vectors of a database built before it into int8 codes in vec0 tables of
    VECTOR_CHUNK-vector chunks: a quarter of the bytes, and its searches find the neighbours an exact
    float search finds (the codes move similarities by ~1e-3; repeated texts stay tied, lowest id first)."""
    dim, path = 16, tmp_path / "old.db"
    monkeypatch.setattr("cuemem_cli.store.migrations.MIGRATIONS", before("m010_int8_vectors"))  # the schema before m010
    store = SQLiteStore.open(path)
    store.bind_embedder("m", dim, "test")
    rng = np.random.default_rng(7)
    floats = {}
    with store.transaction():
        for cid, count in ((1, 1300), (2, 1700)):
            store.conn.execute("INSERT INTO conversations(id, name, created_at) VALUES (?, ?, '2026-01-01T00:00:00')",
                               (cid, f"c{cid}"))
            store.conn.execute("INSERT INTO turns(id, conversation_id, position, source_id, text, content_hash)"
                               " VALUES (?, ?, 0, 't', 'x', 'h')", (cid, cid))
            store.conn.execute("INSERT INTO turns_fts(rowid, text) VALUES (?, 'x')", (cid,))
            ids = store.insert_cues(cid, [(cid, "s", "r", f"o{i}", "triple") for i in range(count)])
            vectors = rng.normal(size=(count, dim)).astype(np.float32)
            vectors[1::3] = vectors[::3][: len(vectors[1::3])]  # repeated texts: tied distances
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            floats[cid] = (np.array(ids), vectors)
            # As cuemem wrote them before m010: float32 blobs.
            store.conn.executemany("INSERT INTO cue_vectors(cue_id, conversation_id, embedding) VALUES (?, ?, ?)",
                                   [(i, cid, v.tobytes()) for i, v in zip(ids, vectors, strict=True)])
            store.conn.execute("INSERT INTO turn_vectors(turn_id, embedding) VALUES (?, ?)",
                               (cid, vectors[0].tobytes()))
    allocated_before = store.conn.execute("SELECT sum(length(vectors)) FROM cue_vectors_vector_chunks00").fetchone()[0]
    store.close()
    monkeypatch.setattr("cuemem_cli.store.migrations.MIGRATIONS", MIGRATIONS)
    store = SQLiteStore.open(path)
    assert {"m010_int8_vectors", "m011_edge_kind_codes"} <= set(recorded(path))
    assert f"int8[{dim}]" in schema(path)["cue_vectors"]
    assert f"chunk_size={migrations.VECTOR_CHUNK}" in schema(path)["cue_vectors"]
    queries = [*floats[1][1][:10], *rng.normal(size=(10, dim)).astype(np.float32)]
    queries = [q / np.linalg.norm(q) for q in queries]  # unit, as embedded questions are
    for cid, (ids, vectors) in floats.items():
        for q in queries:
            exact = vectors @ q
            order = np.lexsort((ids, -exact))[:40]
            found = store.knn_cues(q, 40, [cid])
            overlap = len({c.id for c, _ in found} & set(ids[order].tolist())) / 40
            assert overlap >= 0.9, overlap
            assert all(abs(sim - exact[ids.tolist().index(c.id)]) < 0.01 for c, sim in found)
            sims = [sim for _, sim in found]
            assert sims == sorted(sims, reverse=True)
    assert np.allclose(store.turn_vectors([1])[1], floats[1][1][0], atol=0.01)
    ids, vectors = floats[2]
    best = store.knn_cues(vectors[0], 5)  # the whole memory
    assert [c.id for c, _ in best[:2]] == ids[:2].tolist()  # the cue itself and its repeat, lowest id first
    assert best[0][1] == best[1][1] == pytest.approx(1.0, abs=1e-3)
    allocated = store.conn.execute("SELECT sum(length(vectors)) FROM cue_vectors_vector_chunks00").fetchone()[0]
    assert allocated <= allocated_before / 4
    store.close()
    assert_whole(path)


def _edge_rows() -> list[tuple[int, int, str, float, int]]:
    rows = []
    for i in range(1, 301):
        rows += [(i, j, "temporal", 1.0, abs(i - j)) for j in (i - 1, i + 1) if 1 <= j <= 300]
        rows += [(i, (i * 7 + k) % 300 + 1, "semantic", 0.5 + k / 100, k) for k in range(1, 6)]
    return rows


def _turns_for_edges(store: SQLiteStore) -> None:
    store.conn.execute("INSERT INTO conversations(id, name, created_at) VALUES (1, 'c', '2026-01-01T00:00:00')")
    store.conn.executemany("INSERT INTO turns(id, conversation_id, position, source_id, text, content_hash)"
                           " VALUES (?, 1, ?, ?, 'x', 'h')", [(i, i, f"t{i}") for i in range(1, 301)])


def test_edge_kinds_stored_by_name_become_codes_and_read_back_as_names(tmp_path, monkeypatch):
    """m011 stores an edge's kind as 0/1 instead of its name: a database written before it reads back the
    same edges, by name, in the same order, and one hop finds what it finds in a database written after."""
    rows = _edge_rows()
    fresh = SQLiteStore.open(tmp_path / "new.db")
    with fresh.transaction():
        _turns_for_edges(fresh)
        fresh.insert_edges(rows)
    path = tmp_path / "old.db"
    monkeypatch.setattr("cuemem_cli.store.migrations.MIGRATIONS", before("m011_edge_kind_codes"))
    store = SQLiteStore.open(path)
    with store.transaction():
        _turns_for_edges(store)
        store.conn.executemany("INSERT INTO edges(src, dst, kind, weight, rank) VALUES (?, ?, ?, ?, ?)", rows)
    store.close()
    monkeypatch.setattr("cuemem_cli.store.migrations.MIGRATIONS", MIGRATIONS)
    store = SQLiteStore.open(path)
    assert "m011_edge_kind_codes" in recorded(path)
    assert {r[0] for r in store.conn.execute("SELECT DISTINCT kind FROM edges")} == {0, 1}
    assert store.all_edges(1) == sorted(rows, key=lambda r: (r[0], r[2], r[1]))
    for db in (store, fresh):
        assert db.all_edges(1) == store.all_edges(1)
        assert db.edges_of(5)[0][2] == "semantic" and db.edges_of(5)[-1][2] == "temporal"
        hop = db.neighbours([5, 17], 1, 3)
        assert {(a, b, kind) for a, b, kind, _ in hop} == (
            {(r[0], r[1], r[2]) for r in rows if r[0] in (5, 17) and r[4] <= (1 if r[2] == "temporal" else 3)}
            | {(r[1], r[0], r[2]) for r in rows if r[1] in (5, 17) and r[2] == "semantic" and r[4] <= 3})
        stats = db.conversation_stats()[0]
        assert (stats["temporal_edges"], stats["semantic_edges"]) == (598, 1500)
    with store.transaction():  # a repeated edge keeps its best weight and rank
        store.insert_edges([(1, 9, "semantic", 0.99, 1)])
    assert (1, 9, "semantic", 0.99, 1) in store.all_edges(1)
    with pytest.raises(Exception, match="CHECK"):
        store.conn.execute("INSERT INTO edges VALUES (1, 3, 2, 1.0, 1)")
    assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store.close()
    fresh.close()


# ------------------------------------------------------------------ PostgreSQL
# A PostgreSQL database as store/postgres.py wrote it before the migration list was shared: its one
# migration `m001_initial` (this DDL, frozen here as it was written), edge kinds stored by name, and the
# vector tables `bind_embedder` created at run time.
OLD_POSTGRES_FUNCTIONS = [
    "CREATE EXTENSION IF NOT EXISTS vector",
    "CREATE TEXT SEARCH DICTIONARY cuemem_stem (TEMPLATE = snowball, Language = english)",
    "CREATE TEXT SEARCH CONFIGURATION cuemem (PARSER = default)",
    "ALTER TEXT SEARCH CONFIGURATION cuemem ADD MAPPING FOR asciiword, word, numword, hword_asciipart, hword_part,"
    " hword_numpart WITH cuemem_stem",
    "ALTER TEXT SEARCH CONFIGURATION cuemem ADD MAPPING FOR int, uint WITH simple",
    "CREATE FUNCTION cuemem_tokens(tsvector) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE"
    " AS 'SELECT coalesce(sum(cardinality(positions)), 0)::integer FROM unnest($1)'",
]
OLD_POSTGRES_TABLES = """
CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE _writes (id integer PRIMARY KEY CHECK (id = 1), n bigint NOT NULL);
INSERT INTO _writes VALUES (1, 0);
CREATE TABLE conversations (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name text NOT NULL UNIQUE,
    created_at text COLLATE "C" NOT NULL
);
CREATE TABLE turns (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    conversation_id bigint NOT NULL REFERENCES conversations(id),
    position integer NOT NULL,
    source_id text NOT NULL,
    session text,
    time text COLLATE "C",
    speaker text,
    role text,
    text text NOT NULL,
    content_hash text NOT NULL,
    extra text,
    status text NOT NULL DEFAULT 'done' CHECK (status IN ('done', 'pending')),
    last_retrieved_at text COLLATE "C",
    stored_at text COLLATE "C",
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('cuemem', cuemem_words(text))) STORED,
    tokens integer GENERATED ALWAYS AS (cuemem_tokens(to_tsvector('cuemem', cuemem_words(text)))) STORED,
    UNIQUE (conversation_id, source_id),
    UNIQUE (conversation_id, position)
);
CREATE INDEX turns_time ON turns(conversation_id, time);
CREATE INDEX turns_tsv ON turns USING gin(tsv);
CREATE TABLE cues (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    turn_id bigint NOT NULL REFERENCES turns(id),
    conversation_id bigint NOT NULL REFERENCES conversations(id),
    subject text NOT NULL,
    relation text NOT NULL,
    object text NOT NULL,
    kind text NOT NULL DEFAULT 'triple'
);
CREATE INDEX cues_turn ON cues(turn_id);
CREATE INDEX cues_conversation ON cues(conversation_id);
CREATE TABLE edges (
    src bigint NOT NULL REFERENCES turns(id),
    dst bigint NOT NULL REFERENCES turns(id),
    kind text NOT NULL CHECK (kind IN ('temporal', 'semantic')),
    weight double precision NOT NULL,
    rank integer NOT NULL,
    PRIMARY KEY (src, kind, dst)
);
CREATE INDEX edges_dst ON edges(dst, kind);
CREATE TABLE extraction_cache (
    model text NOT NULL,
    prompt_version text NOT NULL,
    turn_hash text NOT NULL,
    triples text NOT NULL,
    PRIMARY KEY (model, prompt_version, turn_hash)
);
CREATE TABLE turn_vectors (
    turn_id bigint PRIMARY KEY REFERENCES turns(id),
    embedding vector NOT NULL
);
CREATE TABLE cell_centroids (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    conversation_id bigint NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    centroid vector NOT NULL
);
CREATE INDEX cell_centroids_conversation ON cell_centroids(conversation_id)
"""
OLD_POSTGRES_BOUND = [  # what bind_embedder did, for a 4-d embedder
    "INSERT INTO meta VALUES ('embedding_model', 'm'), ('embedding_dim', '4'), ('embedding_backend', 'test')",
    "CREATE TABLE IF NOT EXISTS cue_vectors (cue_id bigint PRIMARY KEY REFERENCES cues(id),"
    " conversation_id bigint NOT NULL, embedding vector(4) NOT NULL)",
    "CREATE INDEX IF NOT EXISTS cue_vectors_conversation ON cue_vectors(conversation_id)",
    "CREATE TABLE IF NOT EXISTS cue_cells (cue_id bigint PRIMARY KEY REFERENCES cues(id),"
    " cell bigint NOT NULL, embedding vector(4) NOT NULL)",
    "CREATE INDEX IF NOT EXISTS cue_cells_cell ON cue_cells(cell)",
]
OLD_POSTGRES_ROWS = [
    "INSERT INTO conversations VALUES (1, 'c', '2026-01-01T00:00:00')",
    "INSERT INTO turns(id, conversation_id, position, source_id, text, content_hash, stored_at, speaker) VALUES"
    " (1, 1, 0, 't1', 'Our dogs love the lake', 'h1', '2026-01-01T00:00:00', 'Ana'),"
    " (2, 1, 1, 't2', 'I paint on Sundays', 'h2', '2026-01-01T00:00:00', 'Ben'),"
    " (3, 1, 2, 't3', 'The lake freezes in winter', 'h3', '2026-01-01T00:00:00', 'Ana')",
    "INSERT INTO cues VALUES (1, 1, 1, 'x', 'y', 'Our dogs love the lake', 'statement'),"
    " (2, 2, 1, 'x', 'y', 'I paint on Sundays', 'statement'), (3, 3, 1, 'x', 'y', 'The lake freezes', 'statement')",
    "INSERT INTO cue_vectors VALUES (1, 1, '[1,0,0,0]'), (2, 1, '[0,1,0,0]'), (3, 1, '[0.6,0,0.8,0]')",
    "INSERT INTO turn_vectors VALUES (1, '[1,0,0,0]'), (2, '[0,1,0,0]'), (3, '[0.6,0,0.8,0]')",
    "INSERT INTO edges VALUES (1, 2, 'temporal', 1.0, 1), (2, 1, 'temporal', 1.0, 1), (2, 3, 'temporal', 1.0, 1),"
    " (3, 2, 'temporal', 1.0, 1), (3, 1, 'semantic', 0.8, 1)",
    "INSERT INTO _writes VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET n = 7",
]


def old_postgres_database(url: str, bound: bool) -> None:
    import string

    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in OLD_POSTGRES_FUNCTIONS:
            conn.execute(statement)
        conn.execute(sql.SQL("CREATE FUNCTION cuemem_words(text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE"
                             " RETURN translate($1, {}, {})").format(
            sql.Literal(string.punctuation), sql.Literal(" " * len(string.punctuation))))
        for statement in OLD_POSTGRES_TABLES.split(";"):
            conn.execute(statement)
        conn.execute("CREATE TABLE _migrations (name text PRIMARY KEY, applied_at text NOT NULL)")
        conn.execute("INSERT INTO _migrations VALUES ('m001_initial', '2026-01-01T00:00:00')")
        for statement in OLD_POSTGRES_BOUND + OLD_POSTGRES_ROWS if bound else []:
            conn.execute(statement)


def postgres_schema(url: str) -> dict[str, list]:
    """Columns, indexes and constraints of a database's cuemem tables, as PostgreSQL describes them."""
    import psycopg

    with psycopg.connect(url) as conn:
        return {
            "columns": conn.execute(
                "SELECT table_name, column_name, data_type, is_nullable, column_default, generation_expression"
                " FROM information_schema.columns WHERE table_schema = current_schema()"
                " ORDER BY table_name, column_name").fetchall(),
            "indexes": conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
                                    " ORDER BY indexname").fetchall(),
            "constraints": conn.execute(
                "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint"
                " WHERE connamespace = current_schema()::regnamespace ORDER BY 1, 2").fetchall(),
        }


@pytest.mark.parametrize("bound", [True, False], ids=["bound", "never-ingested"])
def test_a_postgres_database_the_previous_code_wrote_migrates_in_place(pg_url, bound):
    """It records the names its schema already satisfied, turns its edge kinds into SQLite's codes, keeps
    every row, and ends with the schema a new database gets."""
    import psycopg

    from cuemem_cli.store.open import open_store

    fresh = open_store(pg_url)
    fresh.bind_embedder("m", DIM, "test")
    fresh.close()
    new_schema = postgres_schema(pg_url)
    assert ("edges", "kind", "smallint", "NO", None, None) in new_schema["columns"]
    with psycopg.connect(pg_url, autocommit=True) as conn:  # the same database, emptied for the old schema
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    old_postgres_database(pg_url, bound)
    store = open_store(pg_url)
    names = [r[0] for r in store.conn.execute("SELECT name FROM _migrations ORDER BY name").fetchall()]
    if bound:
        assert names == [m.name for m in MIGRATIONS]
        assert sorted(r[0] for r in store.conn.execute("SELECT DISTINCT kind FROM edges").fetchall()) == [0, 1]
        assert store.all_edges(1) == [(1, 2, "temporal", 1.0, 1), (2, 1, "temporal", 1.0, 1),
                                      (2, 3, "temporal", 1.0, 1), (3, 1, "semantic", 0.8, 1),
                                      (3, 2, "temporal", 1.0, 1)]
        assert sorted(store.neighbours([1], 1, 1)) == [(1, 2, "temporal", 1.0), (1, 3, "semantic", 0.8)]
        stats = store.conversation_stats()[0]
        assert (stats["turns"], stats["cues"], stats["temporal_edges"], stats["semantic_edges"]) == (3, 3, 4, 1)
        [(cue, similarity)] = store.knn_cues(np.array([0, 1, 0, 0], dtype=np.float32), 1, [1])
        assert (cue.turn_id, similarity) == (2, pytest.approx(1.0))
        assert [tid for tid, _ in store.search_turns_fts('"dog"', 10, [1])] == [1]
        assert sorted(store.turn_vectors([1, 2, 3])) == [1, 2, 3]
        assert store.version().others == 7  # the commit counter is kept, not restarted
        with store.transaction():  # written after the migration: codes, read back as names
            store.insert_edges([(1, 3, "semantic", 0.7, 2)])
        assert (1, 3, "semantic", 0.7, 2) in store.edges_of(1)
    else:
        assert names == sorted(m.name for m in MIGRATIONS if not m.needs_dim)
        store.bind_embedder("m", DIM, "test")
    store.close()
    assert postgres_schema(pg_url) == new_schema


def _as_before_memory_wide(path) -> None:
    """Turn a database this code wrote into the one the code before m012 left: no conversation titles,
    cue vectors partitioned by conversation, the coarse cells' tables (empty), m012-m014 not recorded."""
    conn = autocommit(path)
    conn.execute("BEGIN")
    conn.execute("ALTER TABLE conversations DROP COLUMN title")
    rows = conn.execute("SELECT cue_id, conversation_id, embedding FROM cue_vectors"
                        " ORDER BY conversation_id, cue_id").fetchall()
    conn.execute("DROP TABLE cue_vectors")
    for table, key in (("cue_vectors", "conversation_id"), ("cue_cells", "cell")):
        conn.execute(f"CREATE VIRTUAL TABLE {table} USING vec0(cue_id INTEGER PRIMARY KEY, {key} INTEGER PARTITION KEY,"
                     f" embedding int8[384] distance_metric=cosine, chunk_size={migrations.VECTOR_CHUNK})")
    conn.executemany("INSERT INTO cue_vectors(cue_id, conversation_id, embedding) VALUES (?, ?, vec_int8(?))", rows)
    migrations.sqlite_m003_cells(conn)
    conn.execute("DELETE FROM _migrations WHERE name IN"
                 " ('m012_conversation_titles', 'm013_memory_wide_vectors', 'm014_drop_cell_centroids')")
    conn.execute("COMMIT")
    conn.close()


@pytest.mark.slow  # the old database is built with the real models, as the old code built it
def test_a_database_of_per_conversation_vectors_migrates_to_one_memory(tmp_path):
    """m012-m014 on a database written before them (two sample dialogues and a titled chat): titles come
    from the turns' extra, the vectors move into one table with the conversation as metadata, the cells'
    tables go; every row stays, a narrowed search finds what the partition search found, and the evidence
    of a question asked in one conversation is the same; a memory-wide question now reaches every chat."""
    from cuemem_cli import Memory
    from cuemem_cli.recall.reconstruct import reconstruct

    samples = Path(__file__).resolve().parent.parent / "sample_dialogues"
    path = tmp_path / "old.db"
    chat = [{"conversation": "c-9f1", "title": "Lisbon trip", "speaker": "Ana", "role": "user",
             "time": "2024-05-03T10:00:00", "text": "We are staying at a guesthouse in Alfama for the Lisbon trip."},
            {"conversation": "c-9f1", "title": "Lisbon trip", "speaker": "Assistant", "role": "assistant",
             "time": "2024-05-03T10:01:00", "text": "Alfama is lovely: steep streets, fado bars and views."}]
    questions = ["What did Maya adopt?", "Where is Sam travelling?", "Where are we staying in Lisbon?"]
    with Memory(path) as mem:
        mem.ingest_file(samples / "maya_and_leo.jsonl")
        mem.ingest_file(samples / "assistant_chat.jsonl")
        mem.add(chat)
        store, embedder = mem.store, mem.embedder()
        names = conversation_names(store)
        counts = {t: store.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                  for t in ("turns", "cues", "cue_vectors", "edges", "turn_vectors")}
        vectors = [embedder.embed([q])[0] for q in questions]
        searched = {(name, i): [(c.id, round(s, 6)) for c, s in store.knn_cues(v, 30, [store.conversation_id(name)])]
                    for name in names for i, v in enumerate(vectors)}
        asked = {(name, q): [(e.source_id, e.via) for e in reconstruct(store, embedder, q, name).evidence]
                 for name in names for q in questions}
    _as_before_memory_wide(path)
    assert "PARTITION KEY" in schema(path)["cue_vectors"] and "cell_centroids" in schema(path)

    with Memory(path) as mem:
        store = mem.store
        assert (tmp_path / f"old.db.bak-schema{len(MIGRATIONS) - 3}").exists()
        assert recorded(path)[-3:] == ["m012_conversation_titles", "m013_memory_wide_vectors",
                                       "m014_drop_cell_centroids"]
        assert [(n, t) for _, n, t in store.conversations()] == [("maya-and-leo", None), ("assistant-chat", None),
                                                                  ("c-9f1", "Lisbon trip")]
        assert {t: store.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in counts} == counts
        for (name, i), hits in searched.items():
            found = store.knn_cues(vectors[i], 30, [store.conversation_id(name)])
            assert [(c.id, round(s, 6)) for c, s in found] == hits
        for (name, q), evidence in asked.items():
            assert [(e.source_id, e.via) for e in reconstruct(store, mem.embedder(), q, name).evidence] == evidence
        everywhere = mem.context("Where are we staying in Lisbon?")
        assert everywhere.conversations == () and "c-9f1" in {e.conversation for e in everywhere.evidence}
        assert {e.title for e in everywhere.evidence if e.conversation == "c-9f1"} == {"Lisbon trip"}
    fresh = tmp_path / "new.db"
    with Memory(fresh) as mem:
        mem.add(chat)
    assert schema(path) == schema(fresh)
    assert_whole(path)


@pytest.mark.slow  # the old database is built with the real models
def test_a_database_without_sign_bits_gets_them_on_open(tmp_path):
    """m015 on a database written before it: every turn's row of sign bits is what ingest writes today, and
    the cold search over them (EXACT_CUES lowered so the prefilter runs) finds what the in-memory view finds."""
    from cuemem_cli import Memory
    from cuemem_cli.store import vectors
    from cuemem_cli.recall.view import MemoryView

    samples = Path(__file__).resolve().parent.parent / "sample_dialogues"
    path = tmp_path / "old.db"
    with Memory(path) as mem:
        mem.ingest_file(samples / "maya_and_leo.jsonl")
        mem.ingest_file(samples / "assistant_chat.jsonl")
        question = mem.embedder().embed(["What did Maya adopt?"])[0]
    rows = "SELECT turn_id, conversation_id, cue_ids, signs FROM cue_signs ORDER BY turn_id"
    written = raw(path).execute(rows).fetchall()
    conn = autocommit(path)
    conn.execute("DROP TABLE cue_signs")
    conn.execute("DELETE FROM _migrations WHERE name = 'm015_cue_signs'")
    conn.close()
    with Memory(path) as mem:
        migrated = mem.store.conn.execute(rows).fetchall()
        assert recorded(path)[-1] == "m015_cue_signs"
        assert migrated == written and len(written) > 50
        before = vectors.EXACT_CUES
        vectors.EXACT_CUES = 100
        try:
            cold = mem.store.knn_cues(question, 10)
            warm = MemoryView(mem.store, 384).knn_cues(question, 10, None)
        finally:
            vectors.EXACT_CUES = before
        assert [(c.id, s) for c, s in cold] == [(c.id, s) for c, s in warm] and cold
    fresh = tmp_path / "new.db"
    with Memory(fresh) as mem:
        mem.ingest_file(samples / "maya_and_leo.jsonl")
    assert schema(path) == schema(fresh)
