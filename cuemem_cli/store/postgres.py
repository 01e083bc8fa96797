"""The store on PostgreSQL + pgvector: what only PostgreSQL does (the queries both backends share are
store.sql.SQLStore; the schema, both backends' bodies of each migration, is store/migrations.py).

Chosen by a `postgresql://` (or `postgres://`) URL as --db or $CUEMEM_DB (store/open.py). The
pipeline above never knows which store it has: both satisfy the `store.base.Store` Protocol.

What differs here, and why:
- Vectors are pgvector `vector` columns holding what SQLite's int8 codes decode to (store/vectors.py), so both
  stores score a cue alike; a question's KNN is an exact scan of the memory's rows
  (`ORDER BY embedding <=> q, cue_id`, with `WHERE conversation_id = ANY(…)` when it is narrowed), as
  vec0's scan is in SQLite up to vectors.EXACT_CUES cues (above, SQLite ranks by its `cue_signs` first),
  with no limit on k (sqlite-vec's VEC0_MAX_K is SQLite's own).
- The lexical index is PostgreSQL's full text (a generated `tsvector` per turn, GIN index, the `cuemem`
  text search configuration: words split at punctuation and no stop words dropped, as FTS5's
  `porter unicode61` indexes them, but stemmed by Snowball English, not Porter). Turns are ranked by the
  same BM25 as FTS5's `bm25()` (k1 = 1.2, b = 0.75), with the counts taken inside the memory, or inside
  the conversations a question is narrowed to (in SQLite over the whole file). The index keeps itself up
  to date, so `_index_turns` and `_unindex_turns` have nothing to do.
- A memory is a schema: the first of the connection's `search_path` (`?schema=NAME` in the URL, or libpq's
  `?options=-csearch_path%3DNAME`; else the server's default, usually `public`), created if missing. Every
  table, the text search configuration and the functions are the memory's own, found through that
  schema; existence is looked up in that schema only, so a memory never reads a table another schema on
  its path holds. pgvector is installed once per database (in `public` unless it already is elsewhere)
  and its schema appended to the path, so every memory reaches the `vector` type (docs/postgres.md).
- Writers: `transaction()` takes one advisory lock per memory (keyed by the schema's oid; what BEGIN
  IMMEDIATE is in SQLite), so concurrent ingests into one memory serialise their short write phases and
  each re-reads what it decided under the lock, while other memories on the server write freely;
  readers never wait (MVCC). `snapshot()` is a REPEATABLE READ, READ ONLY transaction. Migrations run
  under the same lock, one transaction each (store.sql.SQLStore._migrate); no file to back up.
- `scrub()` (forget --vacuum) runs VACUUM on the tables a forget touches: see docs/postgres.md for what
  PostgreSQL still keeps after it.
- Faults arrive as cuemem's errors: the connection's cursors turn the server's storage errors (a full disk,
  a read-only transaction, a missing privilege, a lost connection, a lock held too long) into
  `StoreError`s with a hint (`_storage_error`). A database this connection cannot write (a standby,
  `default_transaction_read_only`, a role without INSERT, or `readonly=True`) is opened for reading:
  `read_only` says why and `transaction()` refuses before it starts.

psycopg is imported when a store is opened, never by `cuemem --help`.
"""

from __future__ import annotations

import itertools
import re
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import numpy as np

from ..errors import DiskFull, NoDatabase, ReadOnlyStore, StoreBusy, StoreError
from ..records import Cue
from .base import Version, has_vectors
from .sql import SQLStore
from .sql.core import Dialect
from .sql.faults import translating_cursor
from .migrations import TEXT_SEARCH
from .vectors import encode, roundtrip

LOCK_TIMEOUT = "30s"  # how long a writer waits for another's write lock (BUSY_TIMEOUT in SQLite)
WRITE_LOCK = 0x43554D45  # advisory lock key of the write lock ("CUME", as SQLite's application id)
EXTENSION_SCHEMA = "public"  # where cuemem installs pgvector when the database has none yet
_K1, _B = 1.2, 0.75  # FTS5's bm25() constants
_PARAMETER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")  # `:name`, not the `::` of a cast


def redacted(url: str) -> str:
    """The URL without its password, for messages and `inspect-graph`."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


def split_schema(url: str) -> tuple[str, str | None]:
    """The URL libpq is given and the memory's schema from cuemem's `schema=NAME` query parameter (libpq
    refuses parameters it does not know, so cuemem takes it out); None when the URL names none."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [value for key, value in pairs if key == "schema"]
    if not schemas:
        return url, None
    if len(schemas) > 1 or not schemas[0]:
        raise StoreError(f"{redacted(url)}: name one schema (schema=NAME once)", "e.g. postgresql://host/db?schema=alice")
    rest = urlencode([(key, value) for key, value in pairs if key != "schema"], quote_via=quote)
    return urlunsplit(parts._replace(query=rest)), schemas[0]


def search_path_schemas(setting: str) -> list[str]:
    """The schema names of a `search_path` setting, unquoted (`"$user", public` → ['$user', 'public'])."""
    names, name, quoted, i = [], "", False, 0
    while i < len(setting):
        char = setting[i]
        if quoted and char == '"' and setting[i + 1:i + 2] == '"':
            name, i = name + '"', i + 2
            continue
        if char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            names.append(name.strip())
            name = ""
        else:
            name += char
        i += 1
    names.append(name.strip())
    return [n for n in names if n]


def _signed32(value: int) -> int:
    """An unsigned 32-bit oid as the signed integer pg_advisory_xact_lock(int, int) takes."""
    return value - (1 << 32) if value >= 1 << 31 else value


@lru_cache(maxsize=512)
def _pyformat(query: str) -> str:
    """`:name` parameters as psycopg's `%(name)s` (a literal % doubled)."""
    return _PARAMETER.sub(r"%(\1)s", query.replace("%", "%%"))


class PostgresDialect(Dialect):
    """Lists bound as arrays and tested with ANY/ALL; vectors as pgvector floats."""

    name = "postgres"
    greatest, least = "greatest", "least"
    # in the memory's own schema only: a table of the same name further along the search_path (another
    # memory's, in `public`) is not this memory's
    table_exists = "SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = :name"
    find = "strpos"

    def sql(self, query: str) -> str:
        return _pyformat(query)

    def within(self, expr: str, param: str) -> str:
        return f"{expr} = ANY(:{param})"

    def not_within(self, expr: str, param: str) -> str:
        return f"{expr} <> ALL(:{param})"

    def array(self, values: Iterable[int | str]) -> list[int | str]:
        return [v if isinstance(v, str) else int(v) for v in values]

    def vector_param(self, param: str) -> str:
        return f":{param}"

    def codes(self, vectors: np.ndarray) -> list[np.ndarray]:
        return list(roundtrip(vectors))

    def from_codes(self, stored: Sequence[np.ndarray], dim: int | None) -> np.ndarray:
        return np.vstack(stored) if len(stored) else np.zeros((0, dim or 0), dtype=np.float32)

    def int8_codes(self, stored: Sequence[np.ndarray], dim: int) -> np.ndarray:
        return encode(self.from_codes(stored, dim)) if len(stored) else np.zeros((0, dim), dtype=np.int8)


@lru_cache(maxsize=1)
def _driver_classes() -> tuple[Any, type, type]:
    """psycopg's connection and its client and server cursors, the cursors reporting storage errors as
    cuemem's (store/sql/faults.py, through the connection's `storage_error`, set by the store); made on
    first use, since psycopg is imported only then."""
    import psycopg

    class Connection(psycopg.Connection):
        storage_error: Any = None  # the store's `_storage_error`

    return (Connection, translating_cursor(psycopg.Cursor, psycopg.Error),
            translating_cursor(psycopg.ServerCursor, psycopg.Error))


def register_vector(conn) -> None:
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


class PostgresStore(SQLStore):
    """A cuemem memory in a PostgreSQL database. Open it with `PostgresStore.open(url)`; it migrates on open."""

    dialect = PostgresDialect()
    max_k: int | None = None  # an exact scan: no limit on k
    read_only_hint = ("to change it, use a database this role may write: the primary server rather than a "
                      "standby, or ask the server's administrator")

    def __init__(self, conn, url: str):
        super().__init__(conn, redacted(url))  # the path is what messages and `inspect-graph` show
        self.url = url
        self.schema = ""  # the memory's schema (_place)
        self._lock_key = 0  # the schema's oid: the second key of the write lock
        self._own_writes = 0  # write transactions this connection committed (see version)
        self._cursors = itertools.count()

    # ----------------------------------------------------------------- opening
    @classmethod
    def open(cls, url: str, create: bool = True, readonly: bool = False) -> PostgresStore:
        try:
            import psycopg
        except ImportError as exc:
            raise StoreError("a postgresql:// database needs the PostgreSQL client",
                             "pip install 'cuemem[postgres]'") from exc
        connection, cursor, server_cursor = _driver_classes()
        libpq_url, schema = split_schema(url)
        try:
            conn = connection.connect(libpq_url, autocommit=True)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {redacted(url)}: {str(exc).strip()}",
                             "check the URL and that the server is running") from exc
        store = cls(conn, url)
        conn.cursor_factory, conn.server_cursor_factory = cursor, server_cursor
        conn.storage_error = store._storage_error
        try:
            if readonly:
                conn.execute("SET default_transaction_read_only = on")
            store._place(schema, create and not readonly)
            store.read_only = "it was opened for reading only, as asked" if readonly else store._unwritable()
            store._prepare(create)
            register_vector(conn)
        except BaseException:
            conn.close()
            raise
        return store

    def _unwritable(self) -> str | None:
        """Why this connection cannot write the database (None: it can), asked before the first write."""
        read_only, standby, user = self._one(
            "SELECT current_setting('transaction_read_only'), pg_is_in_recovery(), current_user") or ("", False, "")
        if standby:
            return "the server is a standby (a read-only replica)"
        if read_only == "on":
            return "the server starts every transaction read-only (default_transaction_read_only)"
        if self._has_table("turns") and not self._value("SELECT has_table_privilege('turns', 'INSERT')"):
            return f"the role {user} may not write its tables (no INSERT privilege on turns)"
        return None

    def _place(self, schema: str | None, create: bool) -> None:
        """Settle which schema is this memory (`schema`, else the first on the connection's search_path),
        creating it when missing, and put pgvector's schema on the path after it, installing pgvector
        in EXTENSION_SCHEMA when the database has none yet."""
        import psycopg
        from psycopg import sql

        if schema is not None:
            self.conn.execute("SELECT set_config('search_path', %s, false)",
                              (sql.Identifier(schema).as_string(self.conn),))
        path = search_path_schemas(self._value("SHOW search_path"))
        named = path[0] if path and path[0] != "$user" else None
        if named is not None and self._one("SELECT 1 FROM pg_namespace WHERE nspname = :n", n=named) is None:
            if not create:
                raise NoDatabase(f"no cuemem database at {self.path} (no schema {named})",
                                 "add a dialogue first", fields=("add",))
            try:
                with suppress(psycopg.errors.UniqueViolation):  # another process created it after the check
                    self.conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(named)))
            except (psycopg.Error, StoreError) as exc:  # StoreError: the driver's error as _Connection words it
                raise StoreError(f"cannot create the schema {named} in {self.path}: {str(exc).strip()}",
                                 f"have an administrator run once: CREATE SCHEMA {named} AUTHORIZATION <your role>"
                                 ) from exc
        current = self._one("SELECT current_schema()")
        if current is None or current[0] is None or (named is not None and current[0] != named):
            raise StoreError(f"{self.path}: the memory's schema {named or '(none on the search_path)'} is not usable",
                             "name a schema cuemem may create and use: ?schema=NAME")
        self.schema = current[0]
        self._lock_key = _signed32(int(self._value("SELECT CAST(oid AS bigint) FROM pg_namespace WHERE nspname = :n",
                                                   n=self.schema)))
        extension = self._one("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
                              " WHERE e.extname = 'vector'")
        if extension is None and create:
            try:
                self.conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS vector SCHEMA {}").format(
                    sql.Identifier(EXTENSION_SCHEMA)))
            except psycopg.errors.UniqueViolation:
                pass  # another process installed it between the two statements
            except (psycopg.Error, StoreError) as exc:
                raise StoreError(f"cannot install pgvector in {redacted(self.url)}: {str(exc).strip()}",
                                 f"have an administrator run once: CREATE EXTENSION vector SCHEMA {EXTENSION_SCHEMA}"
                                 ) from exc
            extension = (EXTENSION_SCHEMA,)
        if extension is not None and extension[0] not in self._value("SELECT current_schemas(false)"):
            self.conn.execute("SELECT set_config('search_path', current_setting('search_path') || ', ' || %s, false)",
                              (sql.Identifier(extension[0]).as_string(self.conn),))

    def _prepare(self, create: bool) -> None:
        """Refuse a database that holds other tables, or a newer cuemem's schema; apply pending migrations
        (under the write lock, so that of several processes opening a new database one migrates). A
        database that cannot be written must have its schema already."""
        if not self._has_table("_migrations"):
            others = self._value("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()")
            # another process may have committed the schema between the two reads
            if others and not self._has_table("_migrations"):
                raise StoreError(f"{self.path} holds tables but no cuemem schema; cuemem left it untouched",
                                 "name a database (or schema) of its own", fields=("db",))
            if not others and not create:
                raise NoDatabase(f"no cuemem database at {self.path}", "add a dialogue first", fields=("add",))
        applied = self._recorded()
        pending = self._pending(applied, self._dimension())
        if pending and self.read_only is not None:
            what = ("was written by an older cuemem and must be upgraded before it can be read" if applied
                    else "has no cuemem schema yet, and creating it")
            raise ReadOnlyStore(f"{self.path} {what}, which writes to it; but {self.read_only}",
                                self.read_only_hint, fields=("db",))
        if pending:
            self._migrate(seen=None)

    # ------------------------------------------------------------ transactions
    def transaction(self) -> AbstractContextManager[None]:
        """One atomic unit holding the memory's write lock (an advisory lock, waited for up to
        LOCK_TIMEOUT): writers run one at a time, and what one reads inside stays true until it commits.
        A memory this connection cannot write refuses it (`read_only`)."""
        self.check_writable()
        return self._begin(write=True)

    def snapshot(self) -> AbstractContextManager[None]:
        """A read transaction: every query inside sees the same committed state and takes no lock."""
        return self._begin(write=False)

    def _in_transaction(self) -> bool:
        import psycopg

        return self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    @contextmanager
    def _begin(self, write: bool) -> Iterator[None]:
        if self._in_transaction():
            yield
            return
        self.conn.execute("BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            if write:
                self.conn.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
                self.conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (WRITE_LOCK, self._lock_key))
            yield
            if write and self._has_table("_writes"):
                self.conn.execute("UPDATE _writes SET n = n + 1")
                self._own_writes += 1
            self.conn.execute("COMMIT")
        except BaseException:
            if self._in_transaction():
                with suppress(StoreError):  # a lost connection: the error that stopped the transaction is the one
                    self.conn.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------------ faults
    def _storage_error(self, exc: Exception) -> StoreError | None:
        """cuemem's error for a server or connection error about storage, by its SQLSTATE (None: another
        kind, a bug in a query, left as it is)."""
        import psycopg

        state = getattr(exc, "sqlstate", None) or ""
        said = f"PostgreSQL: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
        if state == "53100":  # disk_full
            return DiskFull(f"{self.path}: the server's disk is full ({said}); what this command was writing was "
                            "not stored", "free space on the database server's disk (or ask its administrator), then "
                            "run the command again; what was stored before is intact")
        if state in ("25006", "42501") and self.read_only is not None:  # read-only transaction, no privilege
            return self._read_only_error()
        if state == "25006":
            return ReadOnlyStore(f"{self.path} cannot be written: the server ran this transaction read-only ({said})",
                                 self.read_only_hint, fields=("db",))
        if state == "42501":
            return StoreError(f"{self.path}: this role is not allowed to do that ({said})",
                              "grant it SELECT, INSERT, UPDATE and DELETE on cuemem's tables, or use the role that "
                              "created them")
        if state == "55P03":  # lock_not_available: the write lock, after lock_timeout
            return StoreBusy(f"{self.path} is busy: another process held its write lock for over {LOCK_TIMEOUT}",
                             "let the other cuemem process finish, then run this one again")
        if state == "57014":  # query_canceled
            return StoreError(f"{self.path}: the server cancelled a statement ({said})",
                              "a statement_timeout or an administrator stopped it: run the command again, or raise "
                              "statement_timeout for this role")
        if state.startswith("53"):
            return StoreError(f"{self.path}: the server is out of resources ({said})",
                              "run the command again later, or ask the server's administrator")
        if state in ("XX001", "XX002"):
            return StoreError(f"{self.path} is damaged ({said})",
                              "ask the server's administrator to restore it, or import an export of it again",
                              fields=("export",))
        if state.startswith(("08", "57", "58")) or (isinstance(exc, psycopg.OperationalError) and not state):
            return StoreError(f"{self.path}: the connection to the server failed ({said})",
                              "check that the server is running and reachable, then run the command again")
        return None

    def version(self) -> Version:
        """Other connections' write transactions (as SQLite's PRAGMA data_version counts them: the commits on
        record less this connection's own), and this connection's own."""
        return Version(self._value("SELECT n FROM _writes") - self._own_writes, self._own_writes)

    # ------------------------------------------------------------- statements
    def _execute(self, query: str, params: Mapping[str, Any] | None = None) -> Any:
        """Binary results: vectors arrive as numpy arrays (register_vector), the rest as Python values."""
        return self.conn.execute(self.dialect.sql(query), params or None, binary=True)

    def _executemany(self, query: str, rows: Sequence[Mapping[str, Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(self.dialect.sql(query), rows)

    def _stream(self, query: str, params: Mapping[str, Any], size: int) -> Iterator[list[tuple]]:
        """Inside a transaction the rows stream from a server-side cursor; outside one, a client cursor."""
        name = f"cuemem_stream_{next(self._cursors)}"
        with self.conn.cursor(name=name, binary=True) if self._in_transaction() \
                else self.conn.cursor(binary=True) as cur:
            cur.execute(self.dialect.sql(query), params)
            while rows := cur.fetchmany(size):
                yield rows

    # ------------------------------------------------------------- KNN: exact scan
    def knn_cues(self, vector: np.ndarray, k: int,
                 conversation_ids: Sequence[int] | None = None) -> list[tuple[Cue, float]]:
        """An exact scan of the memory's rows (or of the given conversations'), ties broken by the lowest
        cue id (as SQLite and recall/view.py)."""
        if int(k) <= 0 or (conversation_ids is not None and not len(conversation_ids)):
            return []
        where = "" if conversation_ids is None else f"WHERE {self.dialect.within('conversation_id', 'scope')}"
        rows = self._rows(
            f"WITH hits AS (SELECT cue_id, embedding <=> :q AS distance FROM cue_vectors {where}"
            "  ORDER BY distance, cue_id LIMIT :k)"
            " SELECT c.id, c.turn_id, c.subject, c.relation, c.object, c.kind, hits.distance"
            " FROM hits JOIN cues c ON c.id = hits.cue_id ORDER BY hits.distance, c.id",
            q=vector.astype(np.float32), k=int(k),
            scope=None if conversation_ids is None else self.dialect.array(conversation_ids))
        return [(Cue(*r[:6]), 1.0 - float(r[6])) for r in rows]

    # ---------------------------------------------------------------- full text
    def search_turns_fts(self, query: str, limit: int,
                         conversation_ids: Sequence[int] | None = None) -> list[tuple[int, float]]:
        """BM25 as FTS5 ranks it, its counts taken within the memory (or the given conversations).

        Each quoted word of `query` is a phrase of the lexemes the text search configuration makes of it;
        a turn's frequency for a phrase of several lexemes is that of its rarest lexeme (an upper bound of
        FTS5's phrase count)."""
        words = [w.replace('""', '"') for w in re.findall(r'"((?:[^"]|"")*)"', query)]
        if not words or limit <= 0:
            return []
        scope, params = self._scope("conversation_id", conversation_ids)
        rows = self._rows(
            f"""
            WITH terms AS (
              SELECT i, phraseto_tsquery('{TEXT_SEARCH}', cuemem_words(word)) AS q,
                     tsvector_to_array(to_tsvector('{TEXT_SEARCH}', cuemem_words(word))) AS lexemes
              FROM unnest(CAST(:words AS text[])) WITH ORDINALITY AS w(word, i)),
            docs AS (SELECT id, tsv, tokens FROM turns WHERE {scope}),
            stats AS (SELECT CAST(count(*) AS float8) AS n, CAST(greatest(avg(tokens), 1e-9) AS float8) AS avgdl
                      FROM docs),
            hits AS (
              SELECT t.i, d.id, d.tokens,
                     (SELECT min(cardinality(u.positions)) FROM unnest(d.tsv) u WHERE u.lexeme = ANY(t.lexemes)) AS tf
              FROM terms t JOIN docs d ON d.tsv @@ t.q WHERE numnode(t.q) > 0),
            df AS (SELECT i, CAST(count(*) AS float8) AS hit FROM hits GROUP BY i)
            SELECT h.id, sum(greatest(ln((s.n - df.hit + 0.5) / (df.hit + 0.5)), 1e-6)
                             * h.tf * {_K1 + 1} / (h.tf + {_K1} * (1 - {_B} + {_B} * h.tokens / s.avgdl))) AS score
            FROM hits h JOIN df USING (i) CROSS JOIN stats s
            GROUP BY h.id ORDER BY score DESC, h.id LIMIT :limit
            """, words=words, limit=limit, **params)
        return [(r[0], float(r[1])) for r in rows]

    def browse_search_turns(self, words: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """Each word a phrase of the lexemes the text search configuration makes of it, AND-ed; ranked by
        ts_rank (SQLite: BM25), which orders the hits and nothing else."""
        if not words or limit <= 0:
            return []
        every = " && ".join(f"phraseto_tsquery('{TEXT_SEARCH}', cuemem_words(:w{i}))" for i in range(len(words)))
        rows = self._rows(
            f"WITH q AS (SELECT {every} AS q) SELECT t.id, ts_rank(t.tsv, q.q) AS s FROM turns t, q"
            " WHERE t.tsv @@ q.q ORDER BY s DESC, t.id LIMIT :limit",
            limit=limit, **{f"w{i}": word for i, word in enumerate(words)})
        return [(r[0], float(r[1])) for r in rows]

    def _index_turns(self, rows: Sequence[tuple[int, str]]) -> None:
        """Nothing: `turns.tsv` is a generated column."""

    def _unindex_turns(self, ids: Any) -> None:
        """Nothing: a deleted turn's `tsv` goes with its row."""

    # -------------------------------------------------------------------- scrub
    def scrub(self) -> None:
        """VACUUM the tables a forget deletes from: dead rows and their index entries are removed and their
        space made reusable. It does not overwrite the freed bytes, nor WAL, replicas or backups (docs/postgres.md)."""
        if self._in_transaction():
            raise StoreError("cannot vacuum the database inside a transaction")
        tables = ["turns", "cues", "edges", "turn_vectors", "extraction_cache", "conversations"]
        if has_vectors(self):
            tables += ["cue_vectors"]
        self.conn.execute(f"VACUUM {', '.join(tables)}")
