"""The schema of a cuemem database, as one ordered list of migrations shared by both backends: this
module alone says what a database holds.

Each migration (`Migration`) has a name, a SQLite body and a PostgreSQL body. The store applies each
pending one once, in list order, in its own write transaction together with its record in `_migrations`
(store.sql.SQLStore._migrate), on either backend, so both record the same names and a schema version means
the same on both. Never edit a released migration (databases have recorded it): add one at the end,
with both bodies. A database recording a migration this code does not know was written by a newer
cuemem and is refused.

A body is a function of the backend's connection (pysqlite3's or psycopg's), run inside the store's
write transaction, or an SQL script. Where one backend's schema already held what a migration
adds, its body is `already(why)`, a no-op that says where: PostgreSQL's m001_initial created at once what
SQLite's m001-m006 build step by step.

Vector migrations. Vector tables need the embedding dimension, which exists only once an embedder is
bound to the database (its first ingest; `bind_embedder` records `embedding_dim` in meta). A migration
with `needs_dim` gets it as a second argument; until the database has a dimension it waits, unrecorded,
and `bind_embedder` applies it in the transaction that binds. The others never wait, so on a database
without an embedder a later plain migration can run before an earlier vector one; hence a vector
migration creates or changes only vector tables, and a later migration that touches a vector table
must itself be a vector migration. The same holds on both backends.

PostgreSQL databases written before this list was shared recorded only `m001_initial` (the same schema
as its body here) and created `cue_vectors`/`cue_cells` in `bind_embedder`. They migrate in place like
any other database: m002-m006, m009 and m010 are `already` there and are recorded as they run, m007 and
m008 create the vector tables only where `bind_embedder` had not, and m011 turns edge kinds from names
into SQLite's codes (EDGE_KINDS).
"""

from __future__ import annotations

import sqlite3  # only its tokenizer (complete_statement): the store connects with pysqlite3
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

# A DB-API connection: pysqlite3's (SQLite bodies) or psycopg's (PostgreSQL bodies).
Connection: TypeAlias = Any
Body: TypeAlias = Callable[..., None] | str


# ----------------------------------------------------------------- SQLite bodies
def _run(conn: Connection, *statements: str) -> None:
    for statement in statements:
        conn.execute(statement)


def sqlite_m001_initial(conn: Connection) -> None:
    _run(
        conn,
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
        """CREATE TABLE conversations (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL
        )""",
        """CREATE TABLE turns (
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id),
            position INTEGER NOT NULL,
            source_id TEXT NOT NULL,
            session TEXT,
            time TEXT,
            speaker TEXT,
            role TEXT,
            text TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            extra TEXT,
            status TEXT NOT NULL DEFAULT 'done' CHECK (status IN ('done', 'pending')),
            last_retrieved_at TEXT,
            UNIQUE (conversation_id, source_id),
            UNIQUE (conversation_id, position)
        )""",
        "CREATE INDEX turns_time ON turns(conversation_id, time)",
        """CREATE TABLE cues (
            id INTEGER PRIMARY KEY,
            turn_id INTEGER NOT NULL REFERENCES turns(id),
            conversation_id INTEGER NOT NULL REFERENCES conversations(id),
            subject TEXT NOT NULL,
            relation TEXT NOT NULL,
            object TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'triple'
        )""",
        "CREATE INDEX cues_turn ON cues(turn_id)",
        "CREATE INDEX cues_conversation ON cues(conversation_id)",
        """CREATE TABLE edges (
            src INTEGER NOT NULL REFERENCES turns(id),
            dst INTEGER NOT NULL REFERENCES turns(id),
            kind TEXT NOT NULL CHECK (kind IN ('temporal', 'semantic')),
            weight REAL NOT NULL,
            rank INTEGER NOT NULL,
            PRIMARY KEY (src, kind, dst)
        ) WITHOUT ROWID""",
        "CREATE INDEX edges_dst ON edges(dst, kind)",
        """CREATE TABLE extraction_cache (
            model TEXT NOT NULL,
            prompt_version TEXT NOT NULL,
            turn_hash TEXT NOT NULL,
            triples TEXT NOT NULL,
            PRIMARY KEY (model, prompt_version, turn_hash)
        ) WITHOUT ROWID""",
        "CREATE VIRTUAL TABLE turns_fts USING fts5(text, content='', contentless_delete=1)",
        # read by nothing but its own upkeep: dropped by m009
        "CREATE VIRTUAL TABLE cues_fts USING fts5(text, content='', contentless_delete=1)",
    )


def sqlite_m002_turn_vectors(conn: Connection) -> None:
    """One vector per turn, its whole text embedded, so a turn is scored as a whole beside its best cue
    (recall/reconstruct.py). Derived data, written at ingest. A database that already has cue vectors gets, for
    each turn, the normalised mean of its sentence-cue vectors (no model is at hand when a database is
    opened; measured a little below embedding the turn itself on LoCoMo: bench/RESULTS.md, "Quality:
    LoCoMo evidence in a 2,000-token context", its table "How the method got here"; re-ingest for the
    exact ones)."""
    import numpy as np

    conn.execute("""CREATE TABLE turn_vectors (
            turn_id INTEGER PRIMARY KEY REFERENCES turns(id),
            embedding BLOB NOT NULL
        )""")
    if not _exists(conn, "cue_vectors"):  # created by m007, or at run time before it existed
        return
    by_turn: dict[int, tuple[list[str], list[bytes]]] = {}
    for tid, kind, blob in conn.execute(
            "SELECT c.turn_id, c.kind, v.embedding FROM cues c JOIN cue_vectors v ON v.cue_id = c.id"
            " ORDER BY c.turn_id, c.id"):
        kinds, blobs = by_turn.setdefault(tid, ([], []))
        kinds.append(kind)
        blobs.append(blob)
    dim = conn.execute("SELECT value FROM meta WHERE key = 'embedding_dim'").fetchone()
    rows = []
    for tid, (kinds, blobs) in by_turn.items():
        vectors = _vectors(blobs, int(dim[0]) if dim else len(blobs[0]) // 4)
        sentences = [i for i, kind in enumerate(kinds) if kind == "statement"]
        mean = (vectors[sentences] if sentences else vectors).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        rows.append((tid, (mean / norm if norm else mean).astype(np.float32).tobytes()))
    conn.executemany("INSERT INTO turn_vectors(turn_id, embedding) VALUES (?, ?)", rows)


def sqlite_m003_cells(conn: Connection) -> None:
    """Coarse cells (an inverted-file index) for conversations too large for vec0's full scan (the cells.py
    of that time, removed with them by m013). A cell's id is its row id here and its partition in the vec0
    table `cue_cells` (m008)."""
    _run(
        conn,
        """CREATE TABLE cell_centroids (
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            centroid BLOB NOT NULL
        )""",
        "CREATE INDEX cell_centroids_conversation ON cell_centroids(conversation_id)",
    )


def sqlite_m004_porter_fts(conn: Connection) -> None:
    """Porter stemming for the lexical search: "dogs" finds "dog", "painting" finds "paint". Measured on
    LoCoMo at 2,000 tokens: more questions with all their evidence, no category lower (bench/RESULTS.md,
    "Quality: LoCoMo evidence in a 2,000-token context", its table "How the method got here"). The index
    is rebuilt from the rows it indexes. (Released, it rebuilt `cues_fts` too; that index is dropped by
    m009, so it is no longer rebuilt only to be dropped.)"""
    _run(
        conn,
        "DROP TABLE turns_fts",
        "DROP TABLE IF EXISTS cues_fts",
        "CREATE VIRTUAL TABLE turns_fts USING fts5(text, content='', contentless_delete=1,"
        " tokenize='porter unicode61')",
        "INSERT INTO turns_fts(rowid, text) SELECT id, text FROM turns",
    )


def sqlite_m005_turn_vector_text(conn: Connection) -> None:
    """From here on a turn's vector is its own tokens as the model reads them with the turn before it in
    its session (ingest.prepare.embed_turns): a reply is read with what it answers. Vectors written before held
    the turn alone; this records that, so they are still read as such (recall/reconstruct.py)."""
    conn.execute("INSERT INTO meta(key, value) SELECT 'turn_vectors', 'turn'"
                 " WHERE EXISTS (SELECT 1 FROM turn_vectors)")


def sqlite_m006_turn_stored_at(conn: Connection) -> None:
    """When each turn was stored, so `ask --as-of T` can leave out undated turns memory did not hold at T
    (dated turns are judged by their own time). Turns stored before this migration get their
    conversation's creation time: the earliest they can have been stored."""
    _run(
        conn,
        "ALTER TABLE turns ADD COLUMN stored_at TEXT",
        "UPDATE turns SET stored_at = (SELECT created_at FROM conversations c WHERE c.id = turns.conversation_id)",
    )


def sqlite_m007_cue_vectors(conn: Connection, dim: int) -> None:
    """A vector per cue, partitioned by conversation so a KNN never leaves it. Databases bound to an
    embedder before this migration existed already have it (it was created at run time)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS cue_vectors USING vec0(cue_id INTEGER PRIMARY KEY,"
        f" conversation_id INTEGER PARTITION KEY, embedding float[{int(dim)}] distance_metric=cosine)")


def sqlite_m008_cue_cells(conn: Connection, dim: int) -> None:
    """The cue vectors of a conversation that has cells (the cells.py of that time, m003), again, partitioned
    by cell. Empty until a conversation grew past cells.py's MIN_CUES; before this migration it was created at that
    point. m013 drops it."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS cue_cells USING vec0(cue_id INTEGER PRIMARY KEY,"
        f" cell INTEGER PARTITION KEY, embedding float[{int(dim)}] distance_metric=cosine)")


def sqlite_m009_drop_cues_fts(conn: Connection) -> None:
    """The lexical index of cues was written on every cue and cleaned by forget, but no search read it
    (the lexical signal is turns_fts, recall/reconstruct.py): it cost ingest time and bytes."""
    conn.execute("DROP TABLE IF EXISTS cues_fts")


VECTOR_CHUNK = 256  # vectors per vec0 chunk; see m010_int8_vectors


def sqlite_m010_int8_vectors(conn: Connection, dim: int) -> None:
    """Vectors as int8 codes (store/vectors.py): cue vectors in vec0 `int8` columns, turn vectors as int8 blobs,
    a quarter of the bytes. And vec0 chunks of VECTOR_CHUNK vectors: vec0 allocates storage a chunk at a
    time per partition (1,024 vectors by default), so every conversation, and every cell of a large
    one, held room it did not use. Existing float32 vectors are encoded as new ones are."""
    from .vectors import encode

    for table, key in (("cue_vectors", "conversation_id"), ("cue_cells", "cell")):
        conn.execute(f"CREATE TEMP TABLE _rows AS SELECT cue_id, {key} AS part, embedding FROM {table}")
        conn.execute(f"DROP TABLE {table}")
        conn.execute(
            f"CREATE VIRTUAL TABLE {table} USING vec0(cue_id INTEGER PRIMARY KEY, {key} INTEGER PARTITION KEY,"
            f" embedding int8[{int(dim)}] distance_metric=cosine, chunk_size={VECTOR_CHUNK})")
        # Grouped by partition: vec0 fills one chunk of a partition at a time.
        cursor = conn.execute("SELECT cue_id, part, embedding FROM temp._rows ORDER BY part, cue_id")
        while rows := cursor.fetchmany(10_000):
            codes = encode(_vectors([r[2] for r in rows], dim))
            conn.executemany(f"INSERT INTO {table}(cue_id, {key}, embedding) VALUES (?, ?, vec_int8(?))",
                             [(r[0], r[1], c.tobytes()) for r, c in zip(rows, codes, strict=True)])
        conn.execute("DROP TABLE temp._rows")
    rows = conn.execute("SELECT turn_id, embedding FROM turn_vectors").fetchall()
    if rows:
        codes = encode(_vectors([r[1] for r in rows], dim))
        conn.executemany("UPDATE turn_vectors SET embedding = ? WHERE turn_id = ?",
                         [(c.tobytes(), r[0]) for r, c in zip(rows, codes, strict=True)])


EDGE_KINDS = ("semantic", "temporal")  # an edge's kind as stored: its index here; see m011_edge_kind_codes


def sqlite_m011_edge_kind_codes(conn: Connection) -> None:
    """An edge's kind as 0 (semantic) or 1 (temporal) instead of its name: SQLite stores the integers 0
    and 1 in no bytes, the names in 9 and 8, once in the table and once in its reverse index, on every
    edge (an eighth of a database's bytes). The order of the codes is the order of the names, so
    everything sorted by kind stays in the same order. store/base.py turns the codes back into names."""
    _run(
        conn,
        """CREATE TABLE edges_coded (
            src INTEGER NOT NULL REFERENCES turns(id),
            dst INTEGER NOT NULL REFERENCES turns(id),
            kind INTEGER NOT NULL CHECK (kind IN (0, 1)),
            weight REAL NOT NULL,
            rank INTEGER NOT NULL,
            PRIMARY KEY (src, kind, dst)
        ) WITHOUT ROWID""",
        "INSERT INTO edges_coded(src, dst, kind, weight, rank)"
        " SELECT src, dst, CASE kind WHEN 'semantic' THEN 0 WHEN 'temporal' THEN 1 ELSE kind END, weight, rank"
        " FROM edges ORDER BY src, kind, dst",  # (codes already there are kept: the step can run twice)
        "DROP TABLE edges",
        "ALTER TABLE edges_coded RENAME TO edges",
        "CREATE INDEX edges_dst ON edges(dst, kind)",
    )



def _title_backfill(json_text: str, is_text: str) -> str:
    """The UPDATE that gives each conversation the title its earliest titled turn kept from an export
    (input/formats/chatgpt.py and claude.py put a chat's title in each turn's extra)."""
    return ("UPDATE conversations SET title = (SELECT " + json_text + " FROM turns t"
            " WHERE t.conversation_id = conversations.id AND t.extra IS NOT NULL AND " + is_text +
            " ORDER BY t.position LIMIT 1)")


def sqlite_m012_conversation_titles(conn: Connection) -> None:
    """A conversation's title (a ChatGPT or Claude chat's name), so people can name a chat by it
    (`ask -c "Lisbon trip"`) and listings show it. Until now it was kept only in each turn's extra."""
    conn.execute("ALTER TABLE conversations ADD COLUMN title TEXT")
    conn.execute(_title_backfill("json_extract(t.extra, '$.title')",
                                 "json_valid(t.extra) AND json_type(t.extra, '$.title') = 'text'"
                                 " AND trim(json_extract(t.extra, '$.title')) <> ''"))


def sqlite_m013_memory_wide_vectors(conn: Connection, dim: int) -> None:
    """One vector table for the whole memory: a question searches every conversation at once (issue 34),
    so the conversation is no longer vec0's partition key but a metadata column, which vec0 filters inside
    its KNN when a question is narrowed to some conversations. Rows are written in cue id order (vec0 fills
    one chunk at a time). The coarse cells of large conversations (`cue_cells`, per conversation) go: a
    memory-wide search never reads them (m014 drops their centroids)."""
    from .vectors import encode

    conn.execute("CREATE TEMP TABLE _rows AS SELECT cue_id, conversation_id, embedding FROM cue_vectors")
    conn.execute("DROP TABLE cue_vectors")
    conn.execute(f"CREATE VIRTUAL TABLE cue_vectors USING vec0(cue_id INTEGER PRIMARY KEY, conversation_id INTEGER,"
                 f" embedding int8[{int(dim)}] distance_metric=cosine, chunk_size={VECTOR_CHUNK})")
    cursor = conn.execute("SELECT cue_id, conversation_id, embedding FROM temp._rows ORDER BY cue_id")
    while rows := cursor.fetchmany(10_000):
        codes = encode(_vectors([r[2] for r in rows], dim))
        conn.executemany("INSERT INTO cue_vectors(cue_id, conversation_id, embedding) VALUES (?, ?, vec_int8(?))",
                         [(r[0], r[1], c.tobytes()) for r, c in zip(rows, codes, strict=True)])
    conn.execute("DROP TABLE temp._rows")
    conn.execute("DROP TABLE IF EXISTS cue_cells")


def sqlite_m014_drop_cell_centroids(conn: Connection) -> None:
    """The centroids of the coarse cells m013 dropped. Measured on real MiniLM cues, the cells' search
    was approximate (bench/experiments/README.md, bench_cells_real.py), and the memory-wide search
    replaces it (recall/view.py)."""
    conn.execute("DROP TABLE IF EXISTS cell_centroids")

def sqlite_m015_cue_signs(conn: Connection, dim: int) -> None:
    """Each cue's sign bits (vectors.signs, 48 bytes for MiniLM), a row per turn, so that a one-question
    process over a large memory ranks every cue by Hamming distance from a few MB instead of scanning
    vec0's int8 codes (8 times the bytes), then scores the best vectors.PREFILTER_CANDIDATES exactly
    (SQLiteStore.knn_cues): the in-memory view's rule, from disk. Written with the vectors, gone with the
    turn (ON DELETE CASCADE)."""
    import numpy as np

    from .vectors import signs_by_turn

    conn.execute("CREATE TABLE cue_signs (turn_id INTEGER PRIMARY KEY REFERENCES turns(id) ON DELETE CASCADE,"
                 " conversation_id INTEGER NOT NULL, cue_ids BLOB NOT NULL, signs BLOB NOT NULL)")
    owners = np.array(conn.execute("SELECT id, turn_id, conversation_id FROM cues ORDER BY id").fetchall(),
                      dtype=np.int64).reshape(-1, 3)
    codes = np.zeros((len(owners), dim), dtype=np.int8)
    held = np.zeros(len(owners), dtype=bool)
    cursor = conn.execute("SELECT cue_id, embedding FROM cue_vectors")
    while rows := cursor.fetchmany(10_000):
        at = np.searchsorted(owners[:, 0], np.array([r[0] for r in rows], dtype=np.int64))
        codes[at] = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8).reshape(len(rows), dim)
        held[at] = True
    owners, codes = owners[held], codes[held]
    conversation = dict(zip(owners[:, 1].tolist(), owners[:, 2].tolist(), strict=True))
    conn.executemany("INSERT INTO cue_signs(turn_id, conversation_id, cue_ids, signs) VALUES (?, ?, ?, ?)",
                     [(turn, conversation[turn], ids, bits) for turn, ids, bits in
                      signs_by_turn(owners[:, 1], owners[:, 0], codes)])


def sqlite_m016_cue_graph(conn: Connection) -> None:
    """The HNSW graph a large memory's ingest finds semantic neighbours with (ingest/graph.py, CueGraph), saved so
    the next ingest does not build it again over every stored cue: its links only (the vectors are the stored
    codes), a few zlib-compressed parts, with a header naming the cues it covers. Derived: any ingest rebuilds
    it when it is missing or stale (a cue deleted since it was saved)."""
    conn.execute("CREATE TABLE IF NOT EXISTS cue_graph (part TEXT PRIMARY KEY, data BLOB NOT NULL)")


def _m017_name_index(integer: str) -> str:
    """m017 in either backend's words (`integer`: its integer type): who is who, kept as turns are stored.
    `name_signs`: how a turn names someone (cues/names.signs: its writer's own name, a greeting, an address at
    a sentence's end), gone with the turn; `learned_names`: each conversation's names learned from them,
    gone with the conversation. A memory with turns already gets them from `cuemem reindex`; one without
    any is complete at once (meta `names_indexed`, store/base.names_indexed)."""
    return f"""
        CREATE TABLE name_signs (
            conversation_id {integer} NOT NULL,
            turn_id {integer} NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            how SMALLINT NOT NULL,
            PRIMARY KEY (conversation_id, turn_id, name, how)
        );
        CREATE INDEX name_signs_turn ON name_signs(turn_id);
        CREATE TABLE learned_names (
            conversation_id {integer} NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            speaker TEXT NOT NULL,
            PRIMARY KEY (conversation_id, name)
        );
        CREATE INDEX learned_names_name ON learned_names(name);
        INSERT INTO meta(key, value) SELECT 'names_indexed', 'm017' WHERE NOT EXISTS (SELECT 1 FROM turns);
    """


def sqlite_m019_turn_kinds(conn: Connection) -> None:
    """The kinds of things each turn names (cues/kinds.py: "basketball" → sport, game), a row per turn and
    kind: ingest writes them, a question gathers the turns of the kind it asks for (recall), `cuemem reindex`
    builds them for the turns of an older memory. Gone with the turn (ON DELETE CASCADE)."""
    _run(conn, "CREATE TABLE turn_kinds (turn_id INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,"
               " kind TEXT NOT NULL, PRIMARY KEY (turn_id, kind)) WITHOUT ROWID",
         "CREATE INDEX turn_kinds_kind ON turn_kinds(kind, turn_id)")


# ------------------------------------------------------------- PostgreSQL bodies
TEXT_SEARCH = "cuemem"  # the text search configuration postgres_m001_initial creates (store/postgres.py searches it)
# Split on ASCII punctuation before PostgreSQL's parser sees the text, as FTS5's unicode61 tokenizer does:
# the parser would keep "advice/assistance" as one file-path token, "3.5" as one number, an e-mail whole.
_ASCII_PUNCTUATION = string.punctuation


def postgres_m001_initial(conn: Connection) -> None:
    """The schema of SQLite's m001-m006 in one step (turn vectors, cells, stemmed full text, stored_at),
    and `_writes`, the commit counter behind `version`.

    Times are ISO text compared as text, so they are COLLATE "C" (byte order, as in SQLite) whatever
    the server's locale. `tokens` is a turn's length in indexed words, BM25's document length."""
    from psycopg import sql

    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute(f"CREATE TEXT SEARCH DICTIONARY {TEXT_SEARCH}_stem (TEMPLATE = snowball, Language = english)")
    conn.execute(f"CREATE TEXT SEARCH CONFIGURATION {TEXT_SEARCH} (PARSER = default)")
    conn.execute(f"ALTER TEXT SEARCH CONFIGURATION {TEXT_SEARCH} ADD MAPPING FOR asciiword, word, numword,"
                 f" hword_asciipart, hword_part, hword_numpart WITH {TEXT_SEARCH}_stem")
    conn.execute(f"ALTER TEXT SEARCH CONFIGURATION {TEXT_SEARCH} ADD MAPPING FOR int, uint WITH simple")
    conn.execute(sql.SQL("CREATE FUNCTION cuemem_words(text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE"
                         " RETURN translate($1, {}, {})").format(
        sql.Literal(_ASCII_PUNCTUATION), sql.Literal(" " * len(_ASCII_PUNCTUATION))))
    conn.execute("CREATE FUNCTION cuemem_tokens(tsvector) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE"
                 " AS 'SELECT coalesce(sum(cardinality(positions)), 0)::integer FROM unnest($1)'")
    for statement in _POSTGRES_M001.split(";"):
        if statement.strip():
            conn.execute(statement)


_POSTGRES_M001 = f"""
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
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('{TEXT_SEARCH}', cuemem_words(text))) STORED,
    tokens integer GENERATED ALWAYS AS (cuemem_tokens(to_tsvector('{TEXT_SEARCH}', cuemem_words(text)))) STORED,
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


def postgres_m007_cue_vectors(conn: Connection, dim: int) -> None:
    """A vector per cue (what its int8 code decodes to, so both backends score a cue alike), with the
    conversation beside it for the exact scan of one conversation. Databases bound before the shared
    migration list have it (bind_embedder created it)."""
    conn.execute("CREATE TABLE IF NOT EXISTS cue_vectors (cue_id bigint PRIMARY KEY REFERENCES cues(id),"
                 f" conversation_id bigint NOT NULL, embedding vector({int(dim)}) NOT NULL)")
    conn.execute("CREATE INDEX IF NOT EXISTS cue_vectors_conversation ON cue_vectors(conversation_id)")


def postgres_m008_cue_cells(conn: Connection, dim: int) -> None:
    """The cue vectors of a conversation that has cells (the cells.py of that time, m003), again, by cell; as
    m007, bind_embedder created it in databases bound before the shared list."""
    conn.execute("CREATE TABLE IF NOT EXISTS cue_cells (cue_id bigint PRIMARY KEY REFERENCES cues(id),"
                 f" cell bigint NOT NULL, embedding vector({int(dim)}) NOT NULL)")
    conn.execute("CREATE INDEX IF NOT EXISTS cue_cells_cell ON cue_cells(cell)")


def postgres_m011_edge_kind_codes(conn: Connection) -> None:
    """Edge kinds as SQLite's codes, 0 semantic and 1 temporal (EDGE_KINDS), instead of their names: one
    form of edge on both backends, so every edge query is written once. The primary key and the reverse
    index are rebuilt by the type change; codes sort as the names did."""
    for (name,) in conn.execute("SELECT conname FROM pg_constraint WHERE conrelid = 'edges'::regclass"
                                " AND contype = 'c'").fetchall():
        conn.execute(f'ALTER TABLE edges DROP CONSTRAINT "{name}"')
    conn.execute("ALTER TABLE edges ALTER COLUMN kind TYPE smallint"
                 " USING CASE kind WHEN 'semantic' THEN 0 WHEN 'temporal' THEN 1 END")
    conn.execute("ALTER TABLE edges ADD CONSTRAINT edges_kind_check CHECK (kind IN (0, 1))")



def postgres_m012_conversation_titles(conn: Connection) -> None:
    """As SQLite's: a conversation's title, backfilled from its turns' extra."""
    conn.execute("ALTER TABLE conversations ADD COLUMN title text")
    conn.execute(_title_backfill("CAST(t.extra AS jsonb) ->> 'title'",
                                 "jsonb_typeof(CAST(t.extra AS jsonb) -> 'title') = 'string'"
                                 " AND trim(CAST(t.extra AS jsonb) ->> 'title') <> ''"))


def postgres_m013_memory_wide_vectors(conn: Connection, dim: int) -> None:
    """`cue_vectors` keeps its conversation column (a question narrowed to some conversations filters on
    it) and is searched memory-wide; the coarse cells go, as in SQLite."""
    conn.execute("DROP TABLE IF EXISTS cue_cells")

CHANGE_KINDS = ("change", "contradiction")  # `changes.kind` codes (m018), the order of cues/changes.KINDS
_CHANGES_TABLE = """CREATE TABLE IF NOT EXISTS changes (
    id {id},
    conversation_id {int} NOT NULL REFERENCES conversations(id),
    older_turn_id {int} NOT NULL REFERENCES turns(id),
    newer_turn_id {int} NOT NULL REFERENCES turns(id),
    subject TEXT NOT NULL,
    relation TEXT NOT NULL,
    older_value TEXT NOT NULL,
    newer_value TEXT NOT NULL,
    kind SMALLINT NOT NULL CHECK (kind IN (0, 1)),
    UNIQUE (older_turn_id, newer_turn_id, subject, relation)
)"""
_CHANGES_INDEXES = ("CREATE INDEX IF NOT EXISTS changes_older ON changes(older_turn_id)",
                    "CREATE INDEX IF NOT EXISTS changes_newer ON changes(newer_turn_id)",
                    "CREATE INDEX IF NOT EXISTS changes_conversation ON changes(conversation_id)")
# Set by m018 in a memory that held turns already: their changes are found by `cuemem reindex`
# (manage/reindex.py), which removes it; a memory that started empty never has it.
CHANGES_PENDING = "changes_pending"


def _changes_pending(conn: Connection, placeholder: str) -> None:
    if conn.execute("SELECT 1 FROM turns LIMIT 1").fetchone() is not None:
        conn.execute(f"INSERT INTO meta (key, value) VALUES ({placeholder}, '1') ON CONFLICT (key) DO NOTHING",
                     (CHANGES_PENDING,))


def sqlite_m018_changes(conn: Connection) -> None:
    """Facts that changed (issue 57): a row per pair of turns of one conversation where the newer states another
    value for what the older stated (cues/changes.py), found at ingest; the turns themselves stay as they were.
    A memory that held turns already gets its pairs from `cuemem reindex` (CHANGES_PENDING says so)."""
    _run(conn, _CHANGES_TABLE.format(id="INTEGER PRIMARY KEY", int="INTEGER"), *_CHANGES_INDEXES)
    _changes_pending(conn, "?")


def postgres_m018_changes(conn: Connection) -> None:
    """As SQLite's."""
    for statement in (_CHANGES_TABLE.format(id="bigserial PRIMARY KEY", int="bigint"), *_CHANGES_INDEXES):
        conn.execute(statement)
    _changes_pending(conn, "%s")


POSTGRES_M019_TURN_KINDS = """
CREATE TABLE turn_kinds (turn_id bigint NOT NULL REFERENCES turns(id) ON DELETE CASCADE, kind text NOT NULL,
                         PRIMARY KEY (turn_id, kind));
CREATE INDEX turn_kinds_kind ON turn_kinds(kind, turn_id)
"""


def already(why: str) -> Callable[..., None]:
    """The body of a migration whose change this backend's schema already had: nothing to do but be recorded."""

    def nothing(conn: Connection, dim: int | None = None) -> None:
        return None

    nothing.__doc__ = why
    return nothing


# ---------------------------------------------------------------- the list
@dataclass(frozen=True)
class Migration:
    """One schema change, written once per backend."""

    name: str
    sqlite: Body
    postgres: Body
    needs_dim: bool = False  # a vector migration: waits until the database has an embedding dimension

    def apply(self, conn: Connection, backend: str, dim: int | None) -> None:
        """Run this backend's body ("sqlite" or "postgres", the store's Dialect.name)."""
        body = self.sqlite if backend == "sqlite" else self.postgres
        if isinstance(body, str):
            if backend == "sqlite":
                _run(conn, *split_sql(body))
            else:
                conn.execute(body)  # psycopg runs a parameterless script as one simple query
        elif self.needs_dim:
            body(conn, dim)
        else:
            body(conn)


IN_POSTGRES_M001 = "PostgreSQL's m001_initial created this with the rest of the schema"

MIGRATIONS: list[Migration] = [
    Migration("m001_initial", sqlite_m001_initial, postgres_m001_initial),
    Migration("m002_turn_vectors", sqlite_m002_turn_vectors, already(IN_POSTGRES_M001)),
    Migration("m003_cells", sqlite_m003_cells, already(IN_POSTGRES_M001)),
    Migration("m004_porter_fts", sqlite_m004_porter_fts,
              already("PostgreSQL's full text was stemmed (Snowball English) from its m001_initial")),
    Migration("m005_turn_vector_text", sqlite_m005_turn_vector_text,
              already("PostgreSQL databases hold turn vectors read with the turn before them from the start")),
    Migration("m006_turn_stored_at", sqlite_m006_turn_stored_at, already(IN_POSTGRES_M001)),
    Migration("m007_cue_vectors", sqlite_m007_cue_vectors, postgres_m007_cue_vectors, needs_dim=True),
    Migration("m008_cue_cells", sqlite_m008_cue_cells, postgres_m008_cue_cells, needs_dim=True),
    Migration("m009_drop_cues_fts", sqlite_m009_drop_cues_fts,
              already("PostgreSQL never had a full-text index of cues")),
    Migration("m010_int8_vectors", sqlite_m010_int8_vectors,
              already("pgvector columns hold what the int8 codes decode to: vectors were stored that way from the"
                      " start, and a vector column has no chunks"), needs_dim=True),
    Migration("m011_edge_kind_codes", sqlite_m011_edge_kind_codes, postgres_m011_edge_kind_codes),
    Migration("m012_conversation_titles", sqlite_m012_conversation_titles, postgres_m012_conversation_titles),
    Migration("m013_memory_wide_vectors", sqlite_m013_memory_wide_vectors, postgres_m013_memory_wide_vectors,
              needs_dim=True),
    Migration("m014_drop_cell_centroids", sqlite_m014_drop_cell_centroids,
              "DROP TABLE IF EXISTS cell_centroids"),
    Migration("m015_cue_signs", sqlite_m015_cue_signs,
              already("pgvector searches its own column (and, at scale, its HNSW index): SQLite's cold"
                      " search needs the sign bits because vec0 only scans"), needs_dim=True),
    Migration("m016_cue_graph", sqlite_m016_cue_graph,
              "CREATE TABLE IF NOT EXISTS cue_graph (part text PRIMARY KEY, data bytea NOT NULL)"),
    Migration("m017_name_index", _m017_name_index("INTEGER"), _m017_name_index("bigint")),
    Migration("m018_changes", sqlite_m018_changes, postgres_m018_changes),
    Migration("m019_turn_kinds", sqlite_m019_turn_kinds, POSTGRES_M019_TURN_KINDS),
]


def steps(entries: Sequence[Migration]) -> list[Migration]:
    """The migrations in order, checked: a repeated name is a programming error."""
    names = [m.name for m in entries]
    if len(set(names)) != len(names):
        raise ValueError(f"migration names repeat: {sorted(n for n in set(names) if names.count(n) > 1)}")
    return list(entries)


def split_sql(script: str) -> list[str]:
    """The statements of an SQL script, cut at each `;` where SQLite says a statement is complete (so a
    `;` inside a string or a trigger body does not cut it)."""
    statements, current = [], ""
    for piece in script.split(";"):
        current += piece + ";"
        if sqlite3.complete_statement(current):
            statements.append(current.strip().removesuffix(";").strip())
            current = ""
    statements.append(current.strip().removesuffix(";").strip())
    return [s for s in statements if s]


def _vectors(blobs: list[bytes], dim: int) -> Any:
    """Stored vectors as float32 rows, whichever way they were stored: float32 before m010, int8 codes
    after it (a migration recorded again, as a restored backup can make it, meets the new form)."""
    import numpy as np

    from .vectors import from_blobs

    if all(len(b) == dim for b in blobs):
        return from_blobs(blobs, dim)
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim)


def _exists(conn: Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None
