"""The same store on PostgreSQL + pgvector: every query `Store` (store.py) answers, in PostgreSQL's SQL.

Chosen by a `postgresql://` (or `postgres://`) URL as --db or $CUEMEM_DB (stores.open_store). The
pipeline above never knows which store it has: methods, arguments and results are `Store`'s.

What differs inside, and why:
- Vectors are pgvector `vector` columns holding what SQLite's int8 codes decode to (vectors.py), so both
  stores score a cue alike; a conversation's KNN is an exact scan of its rows
  (`WHERE conversation_id = … ORDER BY embedding <=> q, cue_id`), as vec0's partition scan is in SQLite.
  Very large conversations get the same coarse cells (cells.py) as there.
- The lexical index is PostgreSQL's full text (a `tsvector` per turn, GIN index, the `cuemem` text search
  configuration: words split at punctuation and no stop words dropped, as FTS5's `porter unicode61` indexes
  them, but stemmed by Snowball English, not Porter). Turns are ranked by the same BM25 as FTS5's `bm25()`
  (k1 = 1.2, b = 0.75), with the counts taken inside the asked conversation (in SQLite over the whole
  file): a conversation's ranking never depends on another's turns. Cue texts get no full-text index: only
  turns are searched lexically (Store.search_cues_fts has no caller).
- Writers: `transaction()` takes one advisory lock per database (what BEGIN IMMEDIATE is in SQLite), so
  concurrent ingests serialise their short write phases and each re-reads what it decided under the lock;
  readers never wait (MVCC). `snapshot()` is a REPEATABLE READ, READ ONLY transaction.
- Migrations are Python functions `mNNN_name(conn)` in MIGRATIONS, applied in order under the same lock
  and recorded in `_migrations`, in the same transaction as their DDL.
- `scrub()` (forget --vacuum) runs VACUUM on the tables a forget touches: see docs/postgres.md for what
  PostgreSQL still keeps after it.

psycopg is imported when a store is opened, never by `cuemem --help`.
"""

from __future__ import annotations

import re
import string
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import orjson

from .errors import ModelMismatch, StoreError
from .vectors import roundtrip
from .records import Cue, Turn
from .store import TURN_WITH_PREVIOUS, VEC0_MAX_K, NewTurn, _turn, now_iso

LOCK_TIMEOUT = "30s"  # how long a writer waits for another's write lock (Store.BUSY_TIMEOUT in SQLite)
WRITE_LOCK = 0x43554D45  # advisory lock key of the write lock ("CUME", as SQLite's application id)
TEXT_SEARCH = "cuemem"  # the text search configuration m001 creates
_TURN_COLUMNS = "t.id, c.name, t.position, t.source_id, t.text, t.session, t.time, t.speaker, t.role"
_K1, _B = 1.2, 0.75  # FTS5's bm25() constants
# Split on ASCII punctuation before PostgreSQL's parser sees the text, as FTS5's unicode61 tokenizer does:
# the parser would keep "advice/assistance" as one file-path token, "3.5" as one number, an e-mail whole.
_ASCII_PUNCTUATION = string.punctuation


def redacted(url: str) -> str:
    """The URL without its password, for messages and `inspect-graph`."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


# ------------------------------------------------------------------ migrations
def m001_initial(conn) -> None:
    """The schema of store.py's m001-m006 in one step (turn vectors, cells, stemmed full text, stored_at).

    Times are ISO text compared as text, so they are COLLATE "C" (byte order, as in SQLite) whatever
    the server's locale. `tokens` is a turn's length in indexed words, BM25's document length."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute(f"CREATE TEXT SEARCH DICTIONARY {TEXT_SEARCH}_stem (TEMPLATE = snowball, Language = english)")
    conn.execute(f"CREATE TEXT SEARCH CONFIGURATION {TEXT_SEARCH} (PARSER = default)")
    conn.execute(f"ALTER TEXT SEARCH CONFIGURATION {TEXT_SEARCH} ADD MAPPING FOR asciiword, word, numword,"
                 f" hword_asciipart, hword_part, hword_numpart WITH {TEXT_SEARCH}_stem")
    conn.execute(f"ALTER TEXT SEARCH CONFIGURATION {TEXT_SEARCH} ADD MAPPING FOR int, uint WITH simple")
    from psycopg import sql

    conn.execute(sql.SQL("CREATE FUNCTION cuemem_words(text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE"
                         " RETURN translate($1, {}, {})").format(
        sql.Literal(_ASCII_PUNCTUATION), sql.Literal(" " * len(_ASCII_PUNCTUATION))))
    conn.execute("CREATE FUNCTION cuemem_tokens(tsvector) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE"
                 " AS 'SELECT coalesce(sum(cardinality(positions)), 0)::integer FROM unnest($1)'")
    for statement in _M001.split(";"):
        if statement.strip():
            conn.execute(statement)


_M001 = f"""
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

MIGRATIONS: list[tuple[str, Callable[[Any], None]]] = [("m001_initial", m001_initial)]


# --------------------------------------------------------------- vector codec
def _register_vector(conn) -> None:
    """numpy arrays in and out of pgvector's binary format (a 2-byte dimension, 2 unused bytes, big-endian
    float32s): no text formatting of 384 floats per row."""
    from psycopg.adapt import Dumper, Loader
    from psycopg.pq import Format
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        raise StoreError("the server has no pgvector", "install pgvector on it (CREATE EXTENSION vector)")

    class VectorDumper(Dumper):
        format = Format.BINARY
        oid = info.oid

        def dump(self, obj):
            vector = np.ascontiguousarray(obj, dtype=">f4")
            return struct.pack(">HH", len(vector), 0) + vector.tobytes()

    class VectorLoader(Loader):
        format = Format.BINARY

        def load(self, data):
            return np.frombuffer(data, dtype=">f4", offset=4).astype(np.float32)

    conn.adapters.register_dumper(np.ndarray, VectorDumper)
    conn.adapters.register_loader(info.oid, VectorLoader)


class PostgresStore:
    """A cuemem memory in a PostgreSQL database. Open it with `PostgresStore.open(url)`; it migrates on open."""

    def __init__(self, conn, url: str):
        self.conn = conn
        self.url = url
        self.path = redacted(url)  # what messages and `inspect-graph` show
        self._own_writes = 0  # write transactions this connection committed (see data_version)
        self._dim: int | None = None

    # ----------------------------------------------------------------- opening
    @classmethod
    def open(cls, url: str, create: bool = True, readonly: bool = False) -> PostgresStore:
        try:
            import psycopg
        except ImportError as exc:
            raise StoreError("a postgresql:// database needs the PostgreSQL client",
                             "pip install 'cuemem[postgres]'") from exc
        try:
            conn = psycopg.connect(url, autocommit=True)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {redacted(url)}: {str(exc).strip()}",
                             "check the URL and that the server is running") from exc
        store = cls(conn, url)
        try:
            store._prepare(create)
            _register_vector(conn)
        except BaseException:
            conn.close()
            raise
        return store

    def _applied(self) -> list[str] | None:
        """Migrations recorded, or None when this database has no cuemem schema."""
        if self.conn.execute("SELECT to_regclass('_migrations')").fetchone()[0] is None:
            return None
        return [r[0] for r in self.conn.execute("SELECT name FROM _migrations ORDER BY name")]

    def _prepare(self, create: bool) -> None:
        """Refuse a database that holds other tables or a newer cuemem's schema; apply pending migrations
        under the write lock, so that of several processes opening a new database one migrates."""
        if self._check(self._applied(), create):
            return
        with self.transaction():
            applied = self._applied()
            if self._check(applied, create):
                return
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS _migrations (name text PRIMARY KEY, applied_at text NOT NULL)")
            for name, migrate in MIGRATIONS:
                if name not in (applied or []):
                    migrate(self.conn)
                    self.conn.execute("INSERT INTO _migrations VALUES (%s, %s)", (name, now_iso()))

    def _check(self, applied: list[str] | None, create: bool) -> bool:
        """True when the schema is up to date; raises for a database that is not (or not yet) ours."""
        known = [name for name, _ in MIGRATIONS]
        if applied is None:
            others = self.conn.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").fetchone()[0]
            if others:
                again = self._applied()  # another process may have committed the schema between the two reads
                if again is not None:
                    return self._check(again, create)
                raise StoreError(f"{self.path} holds tables but no cuemem schema; cuemem left it untouched",
                                 "point --db (or CUEMEM_DB) at a database (or schema) of its own")
            if not create:
                raise StoreError(f"no cuemem database at {self.path}", "ingest something first: cuemem ingest FILE")
            return False
        unknown = [name for name in applied if name not in known]
        if unknown:
            raise StoreError(
                f"{self.path} was written by a newer cuemem (unknown migration {unknown[0]}); cuemem left it untouched",
                "upgrade cuemem: pip install -U cuemem")
        return len(applied) == len(known)

    def schema_version(self) -> int:
        return self.conn.execute("SELECT count(*) FROM _migrations").fetchone()[0]

    def close(self) -> None:
        self.conn.close()

    def transaction(self):
        """One atomic unit holding the database's write lock (an advisory lock, waited for up to
        LOCK_TIMEOUT): writers run one at a time, and what one reads inside stays true until it commits."""
        return self._begin(write=True)

    def snapshot(self):
        """A read transaction: every query inside sees the same committed state and takes no lock."""
        return self._begin(write=False)

    @contextmanager
    def _begin(self, write: bool) -> Iterator[None]:
        import psycopg

        if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            yield
            return
        self.conn.execute("BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            if write:
                self.conn.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
                self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            yield
            if write and self.conn.execute("SELECT to_regclass('_writes')").fetchone()[0] is not None:
                self.conn.execute("UPDATE _writes SET n = n + 1")
                self._own_writes += 1
            self.conn.execute("COMMIT")
        except psycopg.errors.LockNotAvailable as exc:
            self.conn.execute("ROLLBACK")
            raise StoreError(
                f"{self.path} is busy: another process held its write lock for over {LOCK_TIMEOUT}",
                "let the other cuemem command finish, then run this one again") from exc
        except BaseException:
            if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                self.conn.execute("ROLLBACK")
            raise

    def _rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = (), binary: bool = False) -> list[tuple]:
        return self.conn.execute(sql, params, binary=binary).fetchall()

    def _one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> tuple | None:
        return self.conn.execute(sql, params).fetchone()

    def _value(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        """The first column of a query that returns exactly one row (a count, a RETURNING id)."""
        row = self.conn.execute(sql, params).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: a query that always returns a row returned none")
        return row[0]

    # ---------------------------------------------------------------- metadata
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self._one("SELECT value FROM meta WHERE key = %s", (key,))
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                          (key, value))

    def meta(self) -> dict[str, str]:
        return dict(self._rows("SELECT key, value FROM meta ORDER BY key"))

    def bind_embedder(self, model_id: str, dim: int, backend: str) -> None:
        """Record the embedding model on first use (and make the cue-vector table of its dimension);
        refuse a different one afterwards."""
        if self.get_meta("embedding_model") is None:
            with self.transaction():
                if self.get_meta("embedding_model") is not None:
                    self.check_embedder(model_id, dim)
                    return
                self.set_meta("embedding_model", model_id)
                self.set_meta("embedding_dim", str(dim))
                self.set_meta("embedding_backend", backend)
                self.conn.execute(
                    "CREATE TABLE IF NOT EXISTS cue_vectors (cue_id bigint PRIMARY KEY REFERENCES cues(id),"
                    f" conversation_id bigint NOT NULL, embedding vector({int(dim)}) NOT NULL)")
                self.conn.execute("CREATE INDEX IF NOT EXISTS cue_vectors_conversation ON cue_vectors(conversation_id)")
                self.conn.execute(
                    "CREATE TABLE IF NOT EXISTS cue_cells (cue_id bigint PRIMARY KEY REFERENCES cues(id),"
                    f" cell bigint NOT NULL, embedding vector({int(dim)}) NOT NULL)")
                self.conn.execute("CREATE INDEX IF NOT EXISTS cue_cells_cell ON cue_cells(cell)")
            return
        self.check_embedder(model_id, dim)

    def check_embedder(self, model_id: str, dim: int) -> None:
        stored = self.get_meta("embedding_model")
        stored_dim = int(self.get_meta("embedding_dim") or 0)
        if stored is not None and (stored != model_id or stored_dim != dim):
            raise ModelMismatch(
                f"{self.path} was built with the embedding model {stored} ({stored_dim}-d); "
                f"this run uses {model_id} ({dim}-d), whose vectors are not comparable",
                f"use an embedder for {stored}, or ingest into a new database with --db",
            )

    def has_vectors(self) -> bool:
        return self.get_meta("embedding_model") is not None

    # ----------------------------------------------------------- conversations
    def conversation_id(self, name: str, create: bool = False) -> int | None:
        row = self._one("SELECT id FROM conversations WHERE name = %s", (name,))
        if row:
            return row[0]
        if not create:
            return None
        return self._value("INSERT INTO conversations(name, created_at) VALUES (%s, %s) RETURNING id",
                         (name, now_iso()))

    def conversation_names(self) -> list[str]:
        return [r[0] for r in self._rows("SELECT name FROM conversations ORDER BY id")]

    # ------------------------------------------------------------------- turns
    def stored_texts(self, conversation_id: int, source_ids: Sequence[str]) -> dict[str, tuple[int, int, str]]:
        if not source_ids:
            return {}
        rows = self._rows("SELECT source_id, id, position, text FROM turns WHERE conversation_id = %s"
                          " AND source_id = ANY(%s)", (conversation_id, list(source_ids)))
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def next_position(self, conversation_id: int) -> int:
        return self._value("SELECT coalesce(max(position), -1) + 1 FROM turns WHERE conversation_id = %s",
                         (conversation_id,))

    def insert_turns(self, turns: Sequence[NewTurn]) -> list[int]:
        stored = now_iso()
        return [self._value(
            "INSERT INTO turns(conversation_id, position, source_id, session, time, speaker, role, text,"
            " content_hash, extra, status, stored_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
            " RETURNING id",
            (t.conversation_id, t.position, t.source_id, t.session, t.time, t.speaker, t.role, t.text,
             t.content_hash, orjson.dumps(t.extra).decode() if t.extra else None, t.status, stored))
            for t in turns]

    def turns(self, conversation_id: int) -> list[Turn]:
        return [_turn(r) for r in self._rows(
            f"SELECT {_TURN_COLUMNS} FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            " WHERE t.conversation_id = %s ORDER BY t.position", (conversation_id,))]

    def turns_by_id(self, turn_ids: Iterable[int]) -> dict[int, Turn]:
        rows = self._rows(f"SELECT {_TURN_COLUMNS} FROM turns t JOIN conversations c ON c.id = t.conversation_id"
                          " WHERE t.id = ANY(%s)", (_ids(turn_ids),))
        return {r[0]: _turn(r) for r in rows}

    def turns_not_held_at(self, conversation_id: int, when: str) -> tuple[set[int], int]:
        rows = self._rows(
            "SELECT t.id, (SELECT count(*) FROM cues c WHERE c.turn_id = t.id) FROM turns t"
            " WHERE t.conversation_id = %(cid)s AND CASE WHEN t.time IS NOT NULL THEN t.time > %(when)s"
            " ELSE coalesce(t.stored_at, '') > %(when)s END", {"cid": conversation_id, "when": when})
        return {r[0] for r in rows}, sum(r[1] for r in rows)

    def speakers(self, conversation_id: int) -> list[str]:
        return [r[0] for r in self._rows("SELECT DISTINCT speaker FROM turns WHERE conversation_id = %s"
                                         " AND speaker IS NOT NULL", (conversation_id,))]

    def turn_by_source_id(self, conversation_id: int, source_id: str) -> Turn | None:
        row = self._one(f"SELECT {_TURN_COLUMNS} FROM turns t JOIN conversations c ON c.id = t.conversation_id"
                        " WHERE t.conversation_id = %s AND t.source_id = %s", (conversation_id, source_id))
        return _turn(row) if row else None

    def turns_at_positions(self, conversation_id: int, low: int, high: int) -> list[tuple[int, int]]:
        return self._rows("SELECT id, position FROM turns WHERE conversation_id = %s AND position BETWEEN %s AND %s"
                          " ORDER BY position", (conversation_id, low, high))

    def set_status(self, turn_ids: Sequence[int], status: str) -> None:
        self.conn.execute("UPDATE turns SET status = %s WHERE id = ANY(%s)", (status, _ids(turn_ids)))

    def pending_turns(self, conversation_id: int | None = None) -> list[tuple[Turn, str]]:
        rows = self._rows(
            f"SELECT {_TURN_COLUMNS}, t.content_hash FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            " WHERE t.status = 'pending' AND (%(cid)s::bigint IS NULL OR t.conversation_id = %(cid)s)"
            " ORDER BY t.conversation_id, t.position", {"cid": conversation_id})
        return [(_turn(r), r[9]) for r in rows]

    def mark_retrieved(self, conversation_id: int, source_ids: Sequence[str], when: str) -> None:
        self.conn.execute("UPDATE turns SET last_retrieved_at = %s WHERE conversation_id = %s AND source_id = ANY(%s)",
                          (when, conversation_id, list(source_ids)))

    # -------------------------------------------------------------------- cues
    def insert_cues(self, conversation_id: int, rows: Sequence[tuple[int, str, str, str, str]]) -> list[int]:
        return [self._value("INSERT INTO cues(turn_id, conversation_id, subject, relation, object, kind)"
                          " VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
                          (turn_id, conversation_id, subject, relation, obj, kind))
                for turn_id, subject, relation, obj, kind in rows]

    def cues_of_turns(self, turn_ids: Iterable[int]) -> dict[int, list[Cue]]:
        out: dict[int, list[Cue]] = {}
        for r in self._rows("SELECT id, turn_id, subject, relation, object, kind FROM cues WHERE turn_id = ANY(%s)"
                            " ORDER BY id", (_ids(turn_ids),)):
            out.setdefault(r[1], []).append(Cue(*r))
        return out

    def statement_vectors(self, turn_ids: Iterable[int]) -> dict[int, list[tuple[str, np.ndarray]]]:
        rows = self._rows("SELECT c.turn_id, c.object, v.embedding FROM cues c JOIN cue_vectors v ON v.cue_id = c.id"
                          " WHERE c.kind = 'statement' AND c.turn_id = ANY(%s) ORDER BY c.id", (_ids(turn_ids),),
                          binary=True)
        out: dict[int, list[tuple[str, np.ndarray]]] = {}
        for tid, sentence, vector in rows:
            out.setdefault(tid, []).append((sentence, vector))
        return out

    def insert_vectors(self, conversation_id: int, cue_ids: Sequence[int], vectors: np.ndarray) -> None:
        with self.conn.cursor() as cur:
            cur.executemany("INSERT INTO cue_vectors(cue_id, conversation_id, embedding) VALUES (%s, %s, %s)",
                            [(cid, conversation_id, vec) for cid, vec in zip(cue_ids, roundtrip(vectors), strict=True)])

    def insert_turn_vectors(self, rows: Sequence[tuple[int, np.ndarray]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany("INSERT INTO turn_vectors(turn_id, embedding) VALUES (%s, %s)"
                            " ON CONFLICT (turn_id) DO UPDATE SET embedding = excluded.embedding",
                            [(tid, roundtrip(vector)[0]) for tid, vector in rows])

    def turn_vectors(self, turn_ids: Iterable[int]) -> dict[int, np.ndarray]:
        return dict(self._rows("SELECT turn_id, embedding FROM turn_vectors WHERE turn_id = ANY(%s)",
                               (_ids(turn_ids),), binary=True))

    def previous_turns(self, turn_ids: Iterable[int]) -> dict[int, int]:
        return dict(self._rows(
            "SELECT t.id, p.id FROM turns t JOIN turns p ON p.id = ("
            "  SELECT q.id FROM turns q WHERE q.conversation_id = t.conversation_id AND q.position < t.position"
            "  ORDER BY q.position DESC LIMIT 1)"
            " WHERE t.id = ANY(%s) AND p.session IS NOT DISTINCT FROM t.session", (_ids(turn_ids),)))

    def last_turn(self, conversation_id: int) -> tuple[str | None, str] | None:
        return self._one("SELECT session, text FROM turns WHERE conversation_id = %s ORDER BY position DESC LIMIT 1",
                         (conversation_id,))

    def turns_after(self, turn_ids: Iterable[int]) -> list[int]:
        ids = _ids(turn_ids)
        return [r[0] for r in self._rows(
            "SELECT DISTINCT n.id FROM turns t JOIN turns n ON n.id = ("
            "  SELECT q.id FROM turns q WHERE q.conversation_id = t.conversation_id AND q.position > t.position"
            "  ORDER BY q.position LIMIT 1)"
            " WHERE t.id = ANY(%(ids)s) AND n.session IS NOT DISTINCT FROM t.session"
            " AND n.id <> ALL(%(ids)s) ORDER BY n.id", {"ids": ids})]

    def texts_with_previous(self, turn_ids: Iterable[int]) -> list[tuple[int, str, str | None]]:
        ids = list(turn_ids)
        before = self.previous_turns(ids)
        turns = self.turns_by_id([*ids, *before.values()])
        return [(tid, turns[tid].text, turns[before[tid]].text if tid in before else None)
                for tid in ids if tid in turns]

    def turn_vector_text(self) -> str:
        return self.get_meta("turn_vectors") or TURN_WITH_PREVIOUS

    def conversation_vectors(self, conversation_id: int,
                             dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """All cue vectors of a conversation: (cue ids, turn ids, turn positions, matrix), streamed in chunks
        into one preallocated matrix."""
        matrix = np.empty((self.cue_count(conversation_id), dim), dtype=np.float32)
        ids: list[tuple[int, int, int]] = []
        with self.conn.cursor(binary=True) as cur:
            cur.execute("SELECT v.cue_id, c.turn_id, t.position, v.embedding FROM cue_vectors v"
                        " JOIN cues c ON c.id = v.cue_id JOIN turns t ON t.id = c.turn_id"
                        " WHERE v.conversation_id = %s ORDER BY v.cue_id", (conversation_id,))
            while rows := cur.fetchmany(10_000):
                if len(ids) + len(rows) > len(matrix):
                    matrix = np.vstack([matrix, np.empty((len(rows), dim), dtype=np.float32)])
                matrix[len(ids):len(ids) + len(rows)] = np.vstack([r[3] for r in rows])
                ids.extend((r[0], r[1], r[2]) for r in rows)
        columns = np.array(ids, dtype=np.int64).reshape(len(ids), 3)
        return columns[:, 0].copy(), columns[:, 1].copy(), columns[:, 2].copy(), matrix[:len(ids)]

    def conversation_cues(self, conversation_id: int) -> list[Cue]:
        return [Cue(*r) for r in self._rows(
            "SELECT id, turn_id, subject, relation, object, kind FROM cues WHERE conversation_id = %s ORDER BY id",
            (conversation_id,))]

    def conversation_turn_vectors(self, conversation_id: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
        rows = self._rows("SELECT v.turn_id, v.embedding FROM turn_vectors v JOIN turns t ON t.id = v.turn_id"
                          " WHERE t.conversation_id = %s ORDER BY v.turn_id", (conversation_id,), binary=True)
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        return ids, (np.vstack([r[1] for r in rows]) if rows else np.zeros((0, dim), dtype=np.float32))

    def map_file(self) -> None:
        """SQLite's mmap switch; the server manages its own memory."""

    def cue_count(self, conversation_id: int) -> int:
        return self._value("SELECT count(*) FROM cues WHERE conversation_id = %s", (conversation_id,))

    def data_version(self) -> int:
        """Changes when another connection commits a write transaction; this connection's own leave it
        (SQLite's PRAGMA data_version)."""
        return self._value("SELECT n FROM _writes") - self._own_writes

    def version(self) -> tuple[int, int]:
        """Changes whenever a write transaction commits, by this connection or another."""
        return self._value("SELECT n FROM _writes"), 0

    # ------------------------------------------------------------------- cells
    def cell_centroids(self, conversation_id: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
        rows = self._rows("SELECT id, centroid FROM cell_centroids WHERE conversation_id = %s ORDER BY id",
                          (conversation_id,), binary=True)
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        return ids, (np.vstack([r[1] for r in rows]) if rows else np.zeros((0, dim), dtype=np.float32))

    def replace_cells(self, conversation_id: int, centroids: np.ndarray, cue_ids: np.ndarray, cells: np.ndarray,
                      vectors: np.ndarray) -> np.ndarray:
        """Swap a conversation's cells for new ones; call inside `transaction()`. Returns the cell ids."""
        self.conn.execute("DELETE FROM cue_cells WHERE cell IN"
                          " (SELECT id FROM cell_centroids WHERE conversation_id = %s)", (conversation_id,))
        self.conn.execute("DELETE FROM cell_centroids WHERE conversation_id = %s", (conversation_id,))
        ids = np.array([self._value("INSERT INTO cell_centroids(conversation_id, centroid) VALUES (%s, %s)"
                                    " RETURNING id", (conversation_id, c.astype(np.float32))) for c in centroids],
                       dtype=np.int64)
        self.insert_cell_vectors(cue_ids, ids[cells], vectors)
        return ids

    def insert_cell_vectors(self, cue_ids: np.ndarray, cell_ids: np.ndarray, vectors: np.ndarray) -> None:
        with self.conn.cursor() as cur:
            cur.executemany("INSERT INTO cue_cells(cue_id, cell, embedding) VALUES (%s, %s, %s)",
                            [(int(c), int(cell), v)
                             for c, cell, v in zip(cue_ids, cell_ids, roundtrip(vectors), strict=True)])

    def knn_cues_in_cells(self, cell_ids: Sequence[int], vector: np.ndarray, k: int) -> list[tuple[Cue, float]]:
        k = min(int(k), VEC0_MAX_K)
        if k <= 0 or not len(cell_ids):
            return []
        rows = self._rows(
            "WITH hits AS (SELECT cue_id, embedding <=> %s AS distance FROM cue_cells WHERE cell = ANY(%s)"
            "  ORDER BY distance, cue_id LIMIT %s)"
            " SELECT c.id, c.turn_id, c.subject, c.relation, c.object, c.kind, hits.distance"
            " FROM hits JOIN cues c ON c.id = hits.cue_id ORDER BY hits.distance, c.id",
            (vector.astype(np.float32), [int(c) for c in cell_ids], k))
        return [(Cue(*r[:6]), 1.0 - float(r[6])) for r in rows]

    def knn_cues(self, conversation_id: int, vector: np.ndarray, k: int) -> list[tuple[Cue, float]]:
        """Top-k cues of one conversation by cosine similarity: an exact scan of its rows, ties broken by
        the lowest cue id (as Store.knn_cues and view.py)."""
        k = min(int(k), VEC0_MAX_K)
        if k <= 0:
            return []
        rows = self._rows(
            "WITH hits AS (SELECT cue_id, embedding <=> %s AS distance FROM cue_vectors WHERE conversation_id = %s"
            "  ORDER BY distance, cue_id LIMIT %s)"
            " SELECT c.id, c.turn_id, c.subject, c.relation, c.object, c.kind, hits.distance"
            " FROM hits JOIN cues c ON c.id = hits.cue_id ORDER BY hits.distance, c.id",
            (vector.astype(np.float32), conversation_id, k))
        return [(Cue(*r[:6]), 1.0 - float(r[6])) for r in rows]

    def search_turns_fts(self, conversation_id: int, query: str, limit: int) -> list[tuple[int, float]]:
        """Lexical turn search, BM25 (higher is better) as FTS5 ranks it, within one conversation.

        `query` is what reconstruct.fts_query writes: quoted words OR-ed. Each word is a phrase of the
        lexemes the text search configuration makes of it; a turn's frequency for a phrase of several
        lexemes is that of its rarest lexeme (an upper bound of FTS5's phrase count)."""
        words = [w.replace('""', '"') for w in re.findall(r'"((?:[^"]|"")*)"', query)]
        if not words or limit <= 0:
            return []
        rows = self._rows(
            f"""
            WITH terms AS (
              SELECT i, phraseto_tsquery('{TEXT_SEARCH}', cuemem_words(word)) AS q,
                     tsvector_to_array(to_tsvector('{TEXT_SEARCH}', cuemem_words(word))) AS lexemes
              FROM unnest(%(words)s::text[]) WITH ORDINALITY AS w(word, i)),
            docs AS (SELECT id, tsv, tokens FROM turns WHERE conversation_id = %(cid)s),
            stats AS (SELECT count(*)::float8 AS n, greatest(avg(tokens), 1e-9)::float8 AS avgdl FROM docs),
            hits AS (
              SELECT t.i, d.id, d.tokens,
                     (SELECT min(cardinality(u.positions)) FROM unnest(d.tsv) u WHERE u.lexeme = ANY(t.lexemes)) AS tf
              FROM terms t JOIN docs d ON d.tsv @@ t.q WHERE numnode(t.q) > 0),
            df AS (SELECT i, count(*)::float8 AS hit FROM hits GROUP BY i)
            SELECT h.id, sum(greatest(ln((s.n - df.hit + 0.5) / (df.hit + 0.5)), 1e-6)
                             * h.tf * {_K1 + 1} / (h.tf + {_K1} * (1 - {_B} + {_B} * h.tokens / s.avgdl))) AS score
            FROM hits h JOIN df USING (i) CROSS JOIN stats s
            GROUP BY h.id ORDER BY score DESC, h.id LIMIT %(limit)s
            """, {"words": words, "cid": conversation_id, "limit": limit})
        return [(r[0], float(r[1])) for r in rows]

    # ------------------------------------------------------------------- edges
    def insert_edges(self, rows: Iterable[tuple[int, int, str, float, int]]) -> int:
        rows = [(int(a), int(b), kind, float(w), int(r)) for a, b, kind, w, r in rows]
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO edges(src, dst, kind, weight, rank) VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT (src, kind, dst) DO UPDATE SET weight = greatest(edges.weight, excluded.weight),"
                " rank = least(edges.rank, excluded.rank)", rows)
        return len(rows)

    def neighbours(self, turn_ids: Sequence[int], window: int, sem_k: int) -> list[tuple[int, int, str, float]]:
        return self._rows(
            "SELECT e.src, e.dst, e.kind, e.weight FROM edges e WHERE e.src = ANY(%(ids)s)"
            "  AND e.rank <= CASE e.kind WHEN 'temporal' THEN %(w)s ELSE %(k)s END"
            " UNION ALL"
            " SELECT e.dst, e.src, e.kind, e.weight FROM edges e WHERE e.dst = ANY(%(ids)s)"
            "  AND e.kind = 'semantic' AND e.rank <= %(k)s",
            {"ids": _ids(turn_ids), "w": window, "k": sem_k})

    def edges_of(self, turn_id: int) -> list[tuple[int, int, str, float, int]]:
        return self._rows("SELECT src, dst, kind, weight, rank FROM edges WHERE src = %(t)s OR dst = %(t)s"
                          " ORDER BY kind, weight DESC, src, dst", {"t": turn_id})

    def all_edges(self, conversation_id: int) -> list[tuple[int, int, str, float, int]]:
        return self._rows("SELECT e.src, e.dst, e.kind, e.weight, e.rank FROM edges e JOIN turns t ON t.id = e.src"
                          " WHERE t.conversation_id = %s ORDER BY e.src, e.kind, e.dst", (conversation_id,))

    # ------------------------------------------------------------------- stats
    def conversation_stats(self) -> list[dict[str, Any]]:
        rows = self._rows(
            """
            SELECT c.name,
                   (SELECT count(*) FROM turns t WHERE t.conversation_id = c.id),
                   (SELECT count(*) FROM cues q WHERE q.conversation_id = c.id),
                   (SELECT count(*) FROM edges e JOIN turns t ON t.id = e.src
                      WHERE t.conversation_id = c.id AND e.kind = 'temporal'),
                   (SELECT count(*) FROM edges e JOIN turns t ON t.id = e.src
                      WHERE t.conversation_id = c.id AND e.kind = 'semantic'),
                   (SELECT count(*) FROM turns t WHERE t.conversation_id = c.id
                      AND NOT EXISTS (SELECT 1 FROM cues q WHERE q.turn_id = t.id)),
                   (SELECT count(*) FROM turns t WHERE t.conversation_id = c.id AND t.status = 'pending'),
                   (SELECT min(time) FROM turns t WHERE t.conversation_id = c.id),
                   (SELECT max(time) FROM turns t WHERE t.conversation_id = c.id)
            FROM conversations c ORDER BY c.id
            """)
        keys = ("conversation", "turns", "cues", "temporal_edges", "semantic_edges", "turns_without_cues",
                "pending_turns", "first_time", "last_time")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def degree_stats(self, conversation_id: int) -> dict[str, float]:
        row = self._one(
            """
            WITH deg AS (
              SELECT t.id, (SELECT count(*) FROM edges e WHERE e.src = t.id OR e.dst = t.id) AS d
              FROM turns t WHERE t.conversation_id = %s)
            SELECT coalesce(min(d), 0), coalesce(avg(d), 0.0)::float8, coalesce(max(d), 0) FROM deg
            """, (conversation_id,))
        low, mean, high = row if row is not None else (0, 0.0, 0)  # one row always: an aggregate
        return {"min": low, "mean": round(mean, 2), "max": high}

    # ------------------------------------------------------- extraction cache
    # ------------------------------------------------------------------ browse
    def browse_conversations(self, search: str | None, name: str | None, offset: int,
                             limit: int) -> tuple[int, list[dict[str, Any]]]:
        """As Store.browse_conversations."""
        matched = (
            "WITH listed AS (SELECT c.id, c.name, c.created_at,"
            "  (SELECT t.extra::jsonb ->> 'title' FROM turns t WHERE t.conversation_id = c.id"
            "    AND t.extra IS NOT NULL AND (t.extra::jsonb ->> 'title') IS NOT NULL"
            "    ORDER BY t.position LIMIT 1) AS title,"
            "  (SELECT min(t.time) FROM turns t WHERE t.conversation_id = c.id) AS first_time,"
            "  (SELECT max(t.time) FROM turns t WHERE t.conversation_id = c.id) AS last_time"
            " FROM conversations c WHERE %(name)s::text IS NULL OR c.name = %(name)s),"
            " matched AS (SELECT * FROM listed WHERE %(q)s::text IS NULL OR strpos(lower(name), lower(%(q)s)) > 0"
            "  OR strpos(lower(coalesce(title, '')), lower(%(q)s)) > 0)")
        params = {"q": search, "name": name, "limit": limit, "offset": offset}
        total = self._value(f"{matched} SELECT count(*) FROM matched", params)
        rows = self._rows(
            f"{matched} SELECT name, title, first_time, last_time,"
            " (SELECT count(*) FROM turns t WHERE t.conversation_id = matched.id),"
            " (SELECT count(*) FROM cues q WHERE q.conversation_id = matched.id)"
            " FROM matched ORDER BY coalesce(last_time, created_at) DESC, id DESC LIMIT %(limit)s OFFSET %(offset)s",
            params)
        keys = ("conversation", "title", "first_time", "last_time", "turns", "cues")
        return total, [dict(zip(keys, r, strict=True)) for r in rows]

    def browse_search_turns(self, words: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """As Store.browse_search_turns; ranked by ts_rank (SQLite: BM25), the same turns found."""
        if not words or limit <= 0:
            return []
        every = " && ".join([f"phraseto_tsquery('{TEXT_SEARCH}', cuemem_words(%s))"] * len(words))
        rows = self._rows(
            f"WITH q AS (SELECT {every} AS q) SELECT t.id, ts_rank(t.tsv, q.q) AS s FROM turns t, q"
            " WHERE t.tsv @@ q.q ORDER BY s DESC, t.id LIMIT %s", (*words, limit))
        return [(r[0], float(r[1])) for r in rows]

    def cached_triples(self, model: str, prompt_version: str, turn_hash: str) -> list[list[str]] | None:
        row = self._one("SELECT triples FROM extraction_cache WHERE model = %s AND prompt_version = %s"
                        " AND turn_hash = %s", (model, prompt_version, turn_hash))
        return orjson.loads(row[0]) if row else None

    def cache_triples(self, model: str, prompt_version: str, turn_hash: str, triples: list[list[str]]) -> None:
        self.conn.execute("INSERT INTO extraction_cache VALUES (%s, %s, %s, %s) ON CONFLICT (model, prompt_version,"
                          " turn_hash) DO UPDATE SET triples = excluded.triples",
                          (model, prompt_version, turn_hash, orjson.dumps(triples).decode()))

    # ------------------------------------------------- forget, scrub, export
    def forget_selection(self, conversation_id: int | None, session: str | None, source_ids: Sequence[str] | None,
                         before: str | None, decay_cutoff: str | None, lru: int | None) -> list[tuple[int, str]]:
        """As Store.forget_selection: selectors AND-ed, LRU ranked per conversation within them."""
        return self._rows(
            """
            WITH candidates AS (
              SELECT t.id, t.conversation_id, t.position, t.last_retrieved_at FROM turns t
              JOIN conversations c ON c.id = t.conversation_id
              WHERE (%(cid)s::bigint IS NULL OR t.conversation_id = %(cid)s)
                AND (%(session)s::text IS NULL OR t.session = %(session)s)
                AND (%(ids)s::text[] IS NULL OR t.source_id = ANY(%(ids)s))
                AND (%(before)s::text IS NULL OR t.time < %(before)s)
                AND (%(decay)s::text IS NULL OR (coalesce(t.time, c.created_at) < %(decay)s
                                    AND (t.last_retrieved_at IS NULL OR t.last_retrieved_at < %(decay)s)))),
            ranked AS (
              SELECT id, conversation_id, row_number() OVER (
                PARTITION BY conversation_id
                ORDER BY last_retrieved_at IS NULL, last_retrieved_at DESC, position DESC) AS recency
              FROM candidates)
            SELECT r.id, c.name FROM ranked r JOIN conversations c ON c.id = r.conversation_id
            WHERE %(lru)s::bigint IS NULL OR r.recency > %(lru)s ORDER BY r.conversation_id, r.id
            """,
            {"cid": conversation_id, "session": session, "ids": list(source_ids) if source_ids is not None else None,
             "before": before, "decay": decay_cutoff, "lru": lru})

    def forget_counts(self, turn_ids: Sequence[int]) -> dict[str, int]:
        p = {"ids": _ids(turn_ids)}
        def one(sql: str) -> int:
            return self._value(sql, p)

        return {
            "cues": one("SELECT count(*) FROM cues WHERE turn_id = ANY(%(ids)s)"),
            "vectors": one("SELECT count(*) FROM cue_vectors WHERE cue_id IN"
                           " (SELECT id FROM cues WHERE turn_id = ANY(%(ids)s))") if self.has_vectors() else 0,
            "edges": one("SELECT count(*) FROM edges WHERE src = ANY(%(ids)s) OR dst = ANY(%(ids)s)"),
            "extraction_cache": one(
                "SELECT count(*) FROM extraction_cache WHERE turn_hash IN"
                " (SELECT content_hash FROM turns WHERE id = ANY(%(ids)s)) AND turn_hash NOT IN"
                " (SELECT content_hash FROM turns WHERE id <> ALL(%(ids)s))"),
        }

    def delete_turns(self, turn_ids: Sequence[int], keep_conversations: bool = False) -> dict[str, Any]:
        """Remove turns and all that is theirs; call inside `transaction()` (see Store.delete_turns)."""
        counts: dict[str, Any] = {"turns": 0, "cues": 0, "vectors": 0, "edges": 0, "extraction_cache": 0,
                                  "conversations": {}, "conversations_removed": []}
        if not turn_ids:
            return counts
        ids = _ids(turn_ids)
        run = self.conn.execute
        counts["conversations"] = dict(self._rows(
            "SELECT c.name, count(*) FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            " WHERE t.id = ANY(%s) GROUP BY c.id ORDER BY c.id", (ids,)))
        conversation_ids = [r[0] for r in self._rows(
            "SELECT DISTINCT conversation_id FROM turns WHERE id = ANY(%s)", (ids,))]
        hashes = [r[0] for r in self._rows("SELECT DISTINCT content_hash FROM turns WHERE id = ANY(%s)", (ids,))]
        cue_ids = [r[0] for r in self._rows("SELECT id FROM cues WHERE turn_id = ANY(%s)", (ids,))]
        if self.has_vectors():
            counts["vectors"] = run("DELETE FROM cue_vectors WHERE cue_id = ANY(%s)", (cue_ids,)).rowcount
            run("DELETE FROM cue_cells WHERE cue_id = ANY(%s)", (cue_ids,))
        counts["cues"] = run("DELETE FROM cues WHERE id = ANY(%s)", (cue_ids,)).rowcount
        counts["edges"] = run("DELETE FROM edges WHERE src = ANY(%(ids)s) OR dst = ANY(%(ids)s)", {"ids": ids}).rowcount
        run("DELETE FROM turn_vectors WHERE turn_id = ANY(%s)", (ids,))
        counts["turns"] = run("DELETE FROM turns WHERE id = ANY(%s)", (ids,)).rowcount
        counts["extraction_cache"] = run(
            "DELETE FROM extraction_cache WHERE turn_hash = ANY(%s)"
            " AND turn_hash NOT IN (SELECT content_hash FROM turns)", (hashes,)).rowcount
        if not keep_conversations:
            counts["conversations_removed"] = sorted(r[0] for r in self._rows(
                "DELETE FROM conversations WHERE id = ANY(%s)"
                " AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.conversation_id = conversations.id) RETURNING name",
                (conversation_ids,)))
        return counts

    def turn_count(self) -> int:
        return self._value("SELECT count(*) FROM turns")

    def all_turn_texts(self) -> list[tuple[int, str]]:
        return self._rows("SELECT id, text FROM turns ORDER BY id")

    def scrub(self) -> None:
        """VACUUM the tables a forget deletes from: dead rows and their index entries are removed and their
        space made reusable. It does not overwrite the freed bytes, nor WAL, replicas or backups (docs/postgres.md)."""
        import psycopg

        if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            raise StoreError("cannot vacuum the database inside a transaction")
        tables = ["turns", "cues", "edges", "turn_vectors", "extraction_cache", "conversations", "cell_centroids"]
        if self.has_vectors():
            tables += ["cue_vectors", "cue_cells"]
        self.conn.execute(f"VACUUM {', '.join(tables)}")

    def export_turns(self, conversation_id: int | None) -> Iterator[tuple]:
        """As Store.export_turns; inside `snapshot()` the rows stream from a server-side cursor."""
        with self.conn.cursor(name="export_turns") if self._in_transaction() else self.conn.cursor() as cur:
            cur.execute(
                "SELECT t.id, c.name, t.source_id, t.session, t.time, t.speaker, t.role, t.text, t.extra, t.status"
                " FROM turns t JOIN conversations c ON c.id = t.conversation_id"
                " WHERE %(cid)s::bigint IS NULL OR t.conversation_id = %(cid)s ORDER BY t.conversation_id, t.position",
                {"cid": conversation_id})
            while rows := cur.fetchmany(512):
                yield from rows

    def _in_transaction(self) -> bool:
        import psycopg

        return self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE


def _ids(turn_ids: Iterable[int]) -> list[int]:
    return [int(i) for i in turn_ids]

