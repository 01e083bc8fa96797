"""The store in one SQLite file: what only SQLite does (the queries both backends share are store.SQLStore).

SQLite comes from `pysqlite3` because this Python's stdlib sqlite3 cannot load extensions; sqlite-vec
provides the `vec0` table of the memory's cue vectors (one table, each row's conversation a metadata column
that a narrowed question filters on), holding int8 codes (vectors.py) that are rescored in float. FTS5
(Porter-stemmed, contentless) is the lexical index. Here alone: opening and guarding the file, WAL and
the write lock (BEGIN IMMEDIATE with a busy timeout), the backup before a file's first migration, vec0
KNN and its limit `VEC0_MAX_K`, reading vec0's chunks whole, FTS5 upkeep and BM25, `VACUUM`, and the
page-for-page copy `copy_to`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from . import vectors as vec
from .errors import StoreError
from .files import private_dir
from .records import Cue
from .store import Dialect, SQLStore

BUSY_TIMEOUT = 30.0  # seconds a process waits for another one's write lock before giving up
APPLICATION_ID = 0x43554D45  # "CUME": marks a file as a cuemem store
SQLITE_HEADER = b"SQLite format 3\x00"
VEC0_MAX_K = 4096  # sqlite-vec's limit on k
_TIE_MARGIN = 16


def _connect_module():
    """pysqlite3 where installed (it can load extensions); else a stdlib that can."""
    try:
        from pysqlite3 import dbapi2 as sqlite3
    except ImportError:  # pragma: no cover - depends on the platform
        import sqlite3
    return sqlite3


sqlite3 = _connect_module()


def _candidates(k: int) -> int:
    """How many int8 neighbours to rescore for the float top k: int8 codes move similarities by ~1e-3, so
    the float top k lies well inside the int8 top 2k + 16 (bench/RESULTS.md: same evidence)."""
    return min(2 * k + _TIE_MARGIN, VEC0_MAX_K)


class SQLiteDialect(Dialect):
    """Lists bound as JSON text and read with json_each; vectors stored as int8 code blobs (vec0 `int8`
    columns take them through vec_int8())."""

    name = "sqlite"
    greatest, least = "max", "min"
    table_exists = "SELECT 1 FROM sqlite_master WHERE name = :name"
    find = "instr"

    def within(self, expr: str, param: str) -> str:
        return f"{expr} IN (SELECT value FROM json_each(:{param}))"

    def not_within(self, expr: str, param: str) -> str:
        return f"{expr} NOT IN (SELECT value FROM json_each(:{param}))"

    def array(self, values: Iterable[int | str]) -> str:
        return orjson.dumps([v if isinstance(v, str) else int(v) for v in values]).decode()

    def vector_param(self, param: str) -> str:
        return f"vec_int8(:{param})"

    def codes(self, vectors: np.ndarray) -> list[bytes]:
        return [code.tobytes() for code in vec.encode(vectors)]

    def from_codes(self, stored: Sequence[bytes], dim: int | None) -> np.ndarray:
        return vec.from_blobs(list(stored), dim or (len(stored[0]) if stored else 0))

    def int8_codes(self, stored: Sequence[bytes], dim: int) -> np.ndarray:
        return np.frombuffer(b"".join(stored), dtype=np.int8).reshape(len(stored), dim)


class SQLiteStore(SQLStore):
    """A cuemem SQLite file. Open it with `SQLiteStore.open(path)`; it migrates on open."""

    dialect = SQLiteDialect()
    max_k = VEC0_MAX_K

    def __init__(self, conn, path: str, existed: bool = True):
        super().__init__(conn, path)
        self._existed = existed

    # ----------------------------------------------------------------- opening
    @classmethod
    def open(cls, path: str | os.PathLike, create: bool = True, readonly: bool = False) -> SQLiteStore:
        path = str(path)
        exists = os.path.exists(path) and os.path.getsize(path) > 0
        if exists:
            with open(path, "rb") as fh:
                if fh.read(16) != SQLITE_HEADER:
                    raise StoreError(
                        f"{path} is not a SQLite database; cuemem left it untouched",
                        "point --db (or CUEMEM_DB) at a cuemem database or at a new file",
                    )
        elif not create:
            raise StoreError(f"no cuemem database at {path}", "ingest something first: cuemem ingest FILE")
        else:
            _create_private_file(path)
        try:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT)
            conn.enable_load_extension(True)
            import sqlite_vec

            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {path}: {exc}") from exc
        store = cls(conn, path, exists)
        try:
            store._prepare(wal=not readonly)
        except BaseException:
            conn.close()
            raise
        return store

    def _use_wal(self) -> None:
        """WAL mode: readers never wait for the writer. Switching a new file needs it alone for a moment, so
        a process opening it at the same time makes the switch busy: try again; if it stays busy, go on in
        the default journal mode (correct, only slower) and leave the switch to the next opener."""
        deadline = time.monotonic() + BUSY_TIMEOUT
        while True:
            try:
                if self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal":
                    return
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise StoreError(f"cannot open {self.path}: {exc}") from exc
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)

    def _refuse_foreign(self) -> int:
        """Refuse a file that holds tables but not cuemem's application id; its application id."""
        app_id = self.conn.execute("PRAGMA application_id").fetchone()[0]
        tables = self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if app_id != APPLICATION_ID and self._existed and tables:
            raise StoreError(
                f"{self.path} is a SQLite database but not a cuemem one; cuemem left it untouched",
                "point --db (or CUEMEM_DB) at a cuemem database or at a new file",
            )
        return app_id

    def _prepare(self, wal: bool) -> None:
        """Refuse a file that is not ours or is newer (before changing a byte of it), set the connection up,
        then mark the file as cuemem's and apply pending migrations."""
        with self.snapshot():
            self._refuse_foreign()
            applied = self._recorded()
            pending = self._pending(applied, self._dimension())
        if wal:
            self._use_wal()
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.execute("PRAGMA secure_delete=ON")
        if pending:
            self._migrate(seen=applied)

    def _before_migration(self, applied: list[str], seen: list[str] | None) -> None:
        """Mark the file as cuemem's. A database holding conversations is copied to `.bak-schemaN` before
        its first migration, by the process that applies it: the one that finds the migrations it `seen`
        when it opened the file still unchanged. A database without conversations has nothing to lose,
        which also spares a new file, created by two processes at once, a copy of its first steps."""
        app_id = self._refuse_foreign()
        if seen is not None and applied and applied == seen and self._holds_conversations():
            self._copy_committed(f"{self.path}.bak-schema{len(applied)}")
        if app_id != APPLICATION_ID:
            self.conn.execute(f"PRAGMA application_id={APPLICATION_ID}")

    def _holds_conversations(self) -> bool:
        return self.conn.execute("SELECT EXISTS (SELECT 1 FROM conversations)").fetchone()[0] == 1

    def _copy_committed(self, target: str) -> None:
        """A copy of the committed database (WAL included) while this connection holds the write lock:
        read through a second connection, since SQLite's backup cannot read from a writing one."""
        source = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT)
        try:
            _create_private_file(target)
            copy = sqlite3.connect(target)
            try:
                source.backup(copy)
            finally:
                copy.close()
        finally:
            source.close()

    # ------------------------------------------------------------ transactions
    def transaction(self) -> AbstractContextManager[None]:
        """One atomic unit: everything inside commits together or not at all. It takes the write lock at
        once (BEGIN IMMEDIATE), waiting up to BUSY_TIMEOUT for another writer, so whatever it reads inside
        stays true until it commits."""
        return self._begin("IMMEDIATE")

    def snapshot(self) -> AbstractContextManager[None]:
        """A read transaction: every query inside sees the same committed state (WAL), and takes no write lock."""
        return self._begin("DEFERRED")

    @contextmanager
    def _begin(self, mode: str) -> Iterator[None]:
        if self.conn.in_transaction:
            yield
            return
        try:
            self.conn.execute(f"BEGIN {mode}")
            try:
                yield
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise
            raise StoreError(
                f"{self.path} is busy: another process held its write lock for over {BUSY_TIMEOUT:g} s",
                "let the other cuemem command finish, then run this one again",
            ) from exc

    def data_version(self) -> int:
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    def version(self) -> tuple[int, int]:
        return self.conn.execute("PRAGMA data_version").fetchone()[0], self.conn.total_changes

    # ------------------------------------------------------------- statements
    def _execute(self, query: str, params: Mapping[str, Any] | None = None) -> Any:
        return self.conn.execute(query, params or {})

    def _executemany(self, query: str, rows: Sequence[Mapping[str, Any]]) -> None:
        self.conn.executemany(query, rows)

    def _stream(self, query: str, params: Mapping[str, Any], size: int) -> Iterator[list[tuple]]:
        cursor = self.conn.execute(query, params)
        while rows := cursor.fetchmany(size):
            yield rows

    def map_file(self) -> None:
        """Read the file through mmap from now on: vec0 scans of large partitions run ~2× faster
        without copying pages (measured at 1M cues). Not on by default: mapped pages count in the
        process's RSS, which would then grow with the file during a long ingest."""
        self.conn.execute(f"PRAGMA mmap_size={2**31}")

    # ------------------------------------------------------------ vec0 search
    def knn_cues(self, vector: np.ndarray, k: int,
                 conversation_ids: Sequence[int] | None = None) -> list[tuple[Cue, float]]:
        """Top-k cues of the memory, or of the given conversations (vec0 filters its `conversation_id`
        metadata column inside the scan), by cosine similarity.

        vec0 compares int8 codes (vectors.py) with the question's own code; the `_candidates(k)` it
        returns are rescored with the float question against their decoded vectors, exactly as view.py
        scores them in memory, and the k best kept (equal scores: lowest cue id first). Identical cue
        texts have identical codes, and vec0 keeps an arbitrary few of a tie that straddles its last
        place: while the tie runs to the end of what came back, more are asked for.
        """
        k = min(int(k), VEC0_MAX_K)
        if k <= 0 or (conversation_ids is not None and not len(conversation_ids)):
            return []
        scope = "" if conversation_ids is None else " AND conversation_id IN (SELECT value FROM json_each(?))"
        extra = () if conversation_ids is None else (self.dialect.array(conversation_ids),)
        fetch = _candidates(k)
        while True:
            rows = self.conn.execute(
                "SELECT cue_id, embedding, distance FROM cue_vectors"
                f" WHERE embedding MATCH vec_int8(?) AND k = ?{scope}",
                (vec.blob(vector), fetch, *extra)).fetchall()
            tie_cut = len(rows) == fetch and fetch < VEC0_MAX_K and rows[-1][2] == rows[min(k, len(rows)) - 1][2]
            if not tie_cut:
                return self._rescored([r[:2] for r in rows], vector, k)
            fetch = min(2 * fetch, VEC0_MAX_K)

    def _rescored(self, hits: Sequence[tuple[int, bytes]], vector: np.ndarray, k: int) -> list[tuple[Cue, float]]:
        """(cue id, code) candidates → the k best (cue, similarity to the float `vector`), best first."""
        if not hits:
            return []
        sims = vec.similarities(vec.from_blobs([h[1] for h in hits], len(hits[0][1])), vector)
        best = sorted(zip((h[0] for h in hits), sims.tolist(), strict=True), key=lambda h: (-h[1], h[0]))[:k]
        cues = self.cues_by_id(cid for cid, _ in best)
        return [(cues[cid], sim) for cid, sim in best if cid in cues]

    def _stored_codes(self, dim: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The codes as vec0 keeps them: a blob of `chunk_size` codes per chunk, with the chunk's cue ids
        and a bitmap of its slots in use, read whole from vec0's own tables (sqlite-vec 0.1.9's layout; the
        version is pinned). About 10× faster than reading the virtual table row by row (500 real chats,
        115,247 cues: 0.14 s against 1.5 s), which matters for every ingest and view of a large memory."""
        try:
            rows = self.conn.execute(
                "SELECT c.rowids, c.validity, v.vectors FROM cue_vectors_chunks c"
                " JOIN cue_vectors_vector_chunks00 v ON v.rowid = c.chunk_id ORDER BY c.chunk_id")
        except sqlite3.OperationalError:  # another layout (a newer sqlite-vec): row by row, as any backend
            yield from super()._stored_codes(dim)
            return
        for rowids, validity, vectors in rows:
            ids = np.frombuffer(rowids, dtype=np.int64)
            if len(vectors) != len(ids) * dim:
                raise StoreError(f"{self.path}: a vec0 chunk of cue vectors is not the size sqlite-vec 0.1.9 writes",
                                 "install the sqlite-vec version cuemem pins: pip install 'sqlite-vec==0.1.9'")
            used = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[:len(ids)].astype(bool)
            yield ids[used], np.frombuffer(vectors, dtype=np.int8).reshape(len(ids), dim)[used]

    # -------------------------------------------------------------------- FTS5
    def search_turns_fts(self, query: str, limit: int,
                         conversation_ids: Sequence[int] | None = None) -> list[tuple[int, float]]:
        """FTS5's BM25 (negated: higher is better), its counts taken over the whole file."""
        if conversation_ids is None:
            rows = self.conn.execute("SELECT rowid, -bm25(turns_fts) AS s FROM turns_fts WHERE turns_fts MATCH ?"
                                     " ORDER BY s DESC LIMIT ?", (query, limit))
        else:
            rows = self.conn.execute(
                "SELECT t.id, -bm25(turns_fts) AS s FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid"
                " WHERE turns_fts MATCH ? AND t.conversation_id IN (SELECT value FROM json_each(?))"
                " ORDER BY s DESC LIMIT ?", (query, self.dialect.array(conversation_ids), limit))
        return [(r[0], float(r[1])) for r in rows]

    def browse_search_turns(self, words: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """Every word a quoted FTS5 string (so no word is search syntax), AND-ed; BM25 over the whole file."""
        if not words or limit <= 0:
            return []
        query = " ".join('"' + word.replace('"', '""') + '"' for word in words)
        rows = self.conn.execute(
            "SELECT rowid, -bm25(turns_fts) AS s FROM turns_fts WHERE turns_fts MATCH ? ORDER BY s DESC, rowid"
            " LIMIT ?", (query, limit))
        return [(r[0], float(r[1])) for r in rows]

    def _index_turns(self, rows: Sequence[tuple[int, str]]) -> None:
        self.conn.executemany("INSERT INTO turns_fts(rowid, text) VALUES (?, ?)", rows)

    def _unindex_turns(self, ids: Any) -> None:
        """Delete the turns' entries, then merge the index, so no deleted term survives in it."""
        self.conn.execute("DELETE FROM turns_fts WHERE rowid IN (SELECT value FROM json_each(?))", (ids,))
        self.conn.execute("INSERT INTO turns_fts(turns_fts) VALUES ('optimize')")

    # -------------------------------------------------------- scrub and copy
    def scrub(self) -> None:
        """Leave no deleted byte in the file or its WAL: checkpoint and truncate the WAL, VACUUM, again."""
        if self.conn.in_transaction:
            raise StoreError("cannot scrub the database inside a transaction")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        self.conn.execute("VACUUM")
        busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if busy:
            raise StoreError(
                f"the forgotten data is deleted, but another process has {self.path} open, so its write-ahead "
                "log could not be emptied and may still hold old bytes",
                "close other cuemem processes using this database, then run: cuemem forget --vacuum --yes",
            )

    def copy_to(self, path: str | os.PathLike) -> None:
        """A page-for-page copy of this database into a new private file (SQLite's backup API)."""
        _create_private_file(str(path))
        target = sqlite3.connect(str(path))
        try:
            self.conn.backup(target)
        finally:
            target.close()


def _is_busy(exc: Exception) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED: another connection holds the lock this one needs."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _create_private_file(path: str) -> None:
    """Create the DB file 0600 (and a missing parent 0700) before SQLite touches it."""
    private_dir(Path(path).expanduser().resolve().parent)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)
