"""The store in one SQLite file: what only SQLite does (the queries both backends share are store.sql.SQLStore).

SQLite comes from `pysqlite3` because this Python's stdlib sqlite3 cannot load extensions; sqlite-vec
provides the `vec0` table of the memory's cue vectors (one table, each row's conversation a metadata column
that a narrowed question filters on), holding int8 codes (store/vectors.py) that are rescored in float. FTS5
(Porter-stemmed, contentless) is the lexical index. Here alone: opening and guarding the file, WAL and
the write lock (BEGIN IMMEDIATE with a busy timeout), the backup before a file's first migration, vec0
KNN and its limit `VEC0_MAX_K`, reading vec0's chunks whole, FTS5 upkeep and BM25, `VACUUM`, and the
page-for-page copy `copy_to`.

Faults of a real machine arrive as cuemem's errors, not the driver's: every statement runs through
`_Connection`/`_Cursor` (store/sql/faults.py, as in PostgreSQL), which turn SQLite's storage errors (a full
disk, a read-only file, an I/O error, a damaged file, a lock held too long) into `StoreError`s with a hint
(`_translated`); other driver errors (a bug in a query) stay as they are. A file that cannot be written
here (a read-only mount or folder, a read-only file, a full disk that leaves no room for SQLite's `-shm`
index) is opened for reading only (`_connect`, docs/your-data.md): reads work, writes are refused before
they start.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ..errors import DiskFull, NoDatabase, ReadOnlyStore, StoreBusy, StoreError
from ..files import private_dir
from ..records import Cue
from . import vectors as vec
from .base import Version
from .sql import SQLStore
from .sql.core import Dialect
from .sql.faults import raise_storage_error, translating_cursor

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

# SQLite's primary result codes (https://sqlite.org/rescode.html) that say something about storage
_PERM, _BUSY, _LOCKED, _NOMEM, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _AUTH, _NOTADB = (
    3, 5, 6, 7, 8, 10, 11, 13, 14, 23, 26)
_NEARLY_FULL = 1 << 20  # bytes free under which an I/O error while writing is taken for a full disk


_DriverConnection: Any = sqlite3.Connection
_Cursor = translating_cursor(sqlite3.Cursor, sqlite3.Error)


class _Connection(_DriverConnection):
    """The store's connection: its cursors (`conn.execute` included) and backups report storage errors
    through `storage_error` (store/sql/faults.py), set once the store exists (until then, while opening,
    errors stay raw)."""

    storage_error: Callable[[Exception], StoreError | None] | None = None

    def cursor(self, factory: Any = None) -> Any:
        return super().cursor(factory or _Cursor)

    def backup(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().backup(*args, **kwargs)
        except sqlite3.Error as exc:
            raise_storage_error(self, exc)
            raise


def _candidates(k: int) -> int:
    """How many int8 neighbours to rescore for the float top k: int8 codes move similarities by < 0.003, so
    the float top k lies well inside the int8 top 2k + 16 (bench/RESULTS.md, "Ingest at scale": same
    evidence)."""
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
    max_k: int | None = VEC0_MAX_K
    read_only_hint = ("to change it, make it writable, or copy it (with its -wal file, if any) to a folder you "
                      "may write and open the copy")

    def __init__(self, conn, path: str, existed: bool = True):
        super().__init__(conn, path)
        self._existed = existed

    # ----------------------------------------------------------------- opening
    @classmethod
    def open(cls, path: str | os.PathLike, create: bool = True, readonly: bool = False) -> SQLiteStore:
        """Open (creating it when `create`) and migrate the file. It is opened for reading only when
        `readonly`, or when it cannot be written where it is (`_unwritable`); then `read_only` says why."""
        path = str(path)
        try:
            exists = os.path.exists(path) and os.path.getsize(path) > 0
            if exists:
                with open(path, "rb") as fh:
                    header = fh.read(16)
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror}",
                             "check that you may read the file and its folder") from exc
        if exists and header != SQLITE_HEADER:
            raise StoreError(
                f"{path} is not a SQLite database; cuemem left it untouched",
                "name a cuemem database or a new file instead", fields=("db",),
            )
        reason = "it was opened for reading only, as asked" if readonly else _unwritable(path)
        if not exists:
            if not create:
                raise NoDatabase(f"no cuemem database at {path}", "add a dialogue first", fields=("add",))
            if reason is not None:
                raise ReadOnlyStore(f"cannot create {path}: {reason}",
                                    "name a file in a folder you may write", fields=("db",))
            try:
                _create_private_file(path)
            except OSError as exc:
                raise StoreError(f"cannot create {path}: {exc.strerror}",
                                 "name a file in a folder you may write", fields=("db",)) from exc
        conn, reason = _connect(path, reason)
        try:
            conn.enable_load_extension(True)
            import sqlite_vec

            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"cannot open {path}: {exc}") from exc
        store = cls(conn, path, exists)
        store.read_only = reason
        conn.storage_error = store._storage_error
        try:
            store._prepare()
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
            with suppress(StoreBusy):
                if self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal":
                    return
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
                "name a cuemem database or a new file instead", fields=("db",),
            )
        return app_id

    def _prepare(self) -> None:
        """Refuse a file that is not ours or is newer (before changing a byte of it), set the connection up,
        then mark the file as cuemem's and apply pending migrations (a file read only cannot take them)."""
        with self.snapshot():
            self._refuse_foreign()
            applied = self._recorded()
            pending = self._pending(applied, self._dimension())
        if pending and self.read_only is not None and applied:
            raise ReadOnlyStore(
                f"{self.path} was written by an older cuemem and must be upgraded ({len(pending)} schema "
                f"migration(s)) before it can be read, which writes to it; but {self.read_only}",
                "copy it (with its -wal file, if any) to a folder you may write and open the copy: cuemem "
                "upgrades the copy",
            )
        if self.read_only is None:
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
            except sqlite3.Error as exc:  # a full disk: no room for the copy, nothing migrated yet
                raise (_translated(exc, target) or exc) from exc
            finally:
                copy.close()
        finally:
            source.close()

    # ------------------------------------------------------------ transactions
    def transaction(self) -> AbstractContextManager[None]:
        """One atomic unit: everything inside commits together or not at all. It takes the write lock at
        once (BEGIN IMMEDIATE), waiting up to BUSY_TIMEOUT for another writer, so whatever it reads inside
        stays true until it commits. A file opened for reading only refuses it (`read_only`)."""
        self.check_writable()
        return self._begin("IMMEDIATE")

    def snapshot(self) -> AbstractContextManager[None]:
        """A read transaction: every query inside sees the same committed state (WAL), and takes no write lock."""
        return self._begin("DEFERRED")

    @contextmanager
    def _begin(self, mode: str) -> Iterator[None]:
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute(f"BEGIN {mode}")
        try:
            yield
            self.conn.execute("COMMIT")
        except BaseException:
            # A failed COMMIT (a full disk) can leave the transaction open: end it, or the next one would join it.
            if self.conn.in_transaction:
                with suppress(StoreError):  # the error that stopped the transaction is the one to report
                    self.conn.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------------ faults
    def _storage_error(self, exc: Exception) -> StoreError | None:
        """cuemem's error for a SQLite error about storage (None: another kind, a bug, left as it is)."""
        if _code(exc) == _READONLY:
            if self.read_only is not None:
                return self._read_only_error()
            return ReadOnlyStore(f"{self.path} cannot be written (SQLite: {exc})",
                                 "check that you may write the file, its folder, and any -wal or -shm file "
                                 "beside it")
        return _translated(exc, self.path)

    def _read_only_error(self) -> StoreError:
        if self.read_only == _FULL_DISK:
            return DiskFull(f"{self.path} cannot be written: {self.read_only}; cuemem can read it but not change it",
                            f"free space on that disk (df -h {_folder(self.path)}), then run the command again")
        return super()._read_only_error()

    def version(self) -> Version:
        """Other connections' commits (PRAGMA data_version), and the rows this connection changed."""
        return Version(self.conn.execute("PRAGMA data_version").fetchone()[0], self.conn.total_changes)

    # ------------------------------------------------------------- statements
    def _execute(self, query: str, params: Mapping[str, Any] | None = None) -> Any:
        return self.conn.execute(query, params or {})

    def _executemany(self, query: str, rows: Sequence[Mapping[str, Any]]) -> None:
        self.conn.executemany(query, rows)

    def _stream(self, query: str, params: Mapping[str, Any], size: int) -> Iterator[list[tuple]]:
        cursor = self.conn.execute(query, params)
        while rows := cursor.fetchmany(size):
            yield rows

    # ------------------------------------------------------------ vec0 search
    def insert_vectors(self, conversation_id: int, cue_ids: Sequence[int], vectors: np.ndarray) -> None:
        """Cue vectors into vec0, and their sign bits into `cue_signs` (m015), a row per turn (a turn whose
        cues arrive in two calls gets them appended)."""
        super().insert_vectors(conversation_id, cue_ids, vectors)
        if not len(cue_ids):
            return
        owner = dict(self._rows("SELECT id, turn_id FROM cues WHERE id IN (SELECT value FROM json_each(:ids))",
                                ids=self.dialect.array(cue_ids)))
        turns = np.array([owner[int(c)] for c in cue_ids], dtype=np.int64)
        rows = vec.signs_by_turn(turns, np.asarray(cue_ids, dtype=np.int64), vec.encode(vectors))
        held = {r[0]: r[1:] for r in self._rows(
            "SELECT turn_id, cue_ids, signs FROM cue_signs WHERE turn_id IN (SELECT value FROM json_each(:t))",
            t=self.dialect.array(turns.tolist()))}
        self._executemany(
            "INSERT OR REPLACE INTO cue_signs(turn_id, conversation_id, cue_ids, signs) VALUES (:t, :c, :i, :s)",
            [{"t": turn, "c": int(conversation_id), "i": held.get(turn, (b"", b""))[0] + cue_bytes,
              "s": held.get(turn, (b"", b""))[1] + sign_bytes} for turn, cue_bytes, sign_bytes in rows])

    def knn_cues(self, vector: np.ndarray, k: int,
                 conversation_ids: Sequence[int] | None = None) -> list[tuple[Cue, float]]:
        """Top-k cues of the memory, or of the given conversations, by cosine similarity.

        Up to vectors.EXACT_CUES cues in scope, vec0 scans every code (filtering its `conversation_id`
        metadata column inside the scan for a narrowed question). Above, the scope's sign bits are read
        from `cue_signs` and the PREFILTER_CANDIDATES cues nearest by Hamming distance (vectors.nearest_signs,
        the in-memory view's rule) are the only ones vec0 compares: at 500,000 cues that reads 28 MB
        instead of scanning 190 MB of codes.

        vec0 compares int8 codes (store/vectors.py) with the question's own code; the `_candidates(k)` it
        returns are rescored with the float question against their decoded vectors, exactly as recall/view.py
        scores them in memory, and the k best kept (equal scores: lowest cue id first). Identical cue
        texts have identical codes, and vec0 keeps an arbitrary few of a tie that straddles its last
        place: while the tie runs to the end of what came back, more are asked for.
        """
        k = min(int(k), VEC0_MAX_K)
        if k <= 0 or (conversation_ids is not None and not len(conversation_ids)):
            return []
        candidates = self._sign_candidates(vector, k, conversation_ids)
        within: tuple[str, ...] = ()
        scope = ""
        if candidates is not None:
            scope, within = " AND cue_id IN (SELECT value FROM json_each(?))", (self.dialect.array(candidates),)
        elif conversation_ids is not None:
            scope = " AND conversation_id IN (SELECT value FROM json_each(?))"
            within = (self.dialect.array(conversation_ids),)
        fetch = _candidates(k)
        while True:
            rows = self.conn.execute(
                "SELECT cue_id, embedding, distance FROM cue_vectors"
                f" WHERE embedding MATCH vec_int8(?) AND k = ?{scope}",
                (vec.blob(vector), fetch, *within)).fetchall()
            tie_cut = len(rows) == fetch and fetch < VEC0_MAX_K and rows[-1][2] == rows[min(k, len(rows)) - 1][2]
            if not tie_cut:
                return self._rescored([r[:2] for r in rows], vector, k)
            fetch = min(2 * fetch, VEC0_MAX_K)

    def _sign_candidates(self, vector: np.ndarray, k: int, conversation_ids: Sequence[int] | None) -> list[int] | None:
        """The cue ids the sign-bit prefilter keeps, or None where vec0 should scan every code in scope (up
        to EXACT_CUES cues)."""
        scope = "" if conversation_ids is None else " WHERE conversation_id IN (SELECT value FROM json_each(:c))"
        rows = self._rows(f"SELECT cue_ids, signs FROM cue_signs{scope}",
                          c=None if conversation_ids is None else self.dialect.array(conversation_ids))
        ids = np.frombuffer(b"".join(r[0] for r in rows), dtype="<i8")
        if len(ids) <= vec.EXACT_CUES:
            return None
        table = np.frombuffer(b"".join(r[1] for r in rows), dtype="<u8").reshape(len(ids), -1)
        return ids[vec.nearest_signs(table, ids, vector, max(vec.PREFILTER_CANDIDATES, k))].tolist()

    def _rescored(self, hits: Sequence[tuple[int, bytes]], vector: np.ndarray, k: int) -> list[tuple[Cue, float]]:
        """(cue id, code) candidates → the k best (cue, similarity to the float `vector`), best first."""
        if not hits:
            return []
        sims = vec.similarities(vec.from_blobs([h[1] for h in hits], len(hits[0][1])), vector)
        best = sorted(zip((h[0] for h in hits), sims.tolist(), strict=True), key=lambda h: (-h[1], h[0]))[:k]
        cues = self.cues_by_id(cid for cid, _ in best)
        return [(cues[cid], sim) for cid, sim in best if cid in cues]

    def _stored_codes(self, dim: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The codes as vec0 keeps them: a blob of `chunk_size` codes per chunk, with the chunk's cue ids and
        a bitmap of its slots in use, read whole from vec0's own tables (sqlite-vec 0.1.9's layout; the
        version is pinned). Many times faster than reading the virtual table row by row
        (bench/design-notes.md, "Measured choices elsewhere in the code"), which matters for every ingest and
        view of a large memory."""
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
                "close other cuemem processes using this database, then scrub it again", fields=("vacuum",),
            )

    def copy_to(self, path: str | os.PathLike) -> None:
        """A page-for-page copy of this database into a new private file (SQLite's backup API)."""
        _create_private_file(str(path))
        target = sqlite3.connect(str(path))
        try:
            self.conn.backup(target)
        finally:
            target.close()


_FULL_DISK = "the disk it is on is full (SQLite needs room for its -shm index even to read)"


def _code(exc: Exception) -> int:
    """SQLite's primary result code of a driver error (0: none)."""
    return (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF


def _folder(path: str) -> Path:
    return Path(path).absolute().parent


def _nearly_full(path: str) -> bool:
    """Whether the disk holding `path` has (almost) no room left: what an I/O error there most likely means."""
    try:
        stat = os.statvfs(_folder(path))
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize < _NEARLY_FULL


def _translated(exc: Exception, path: str) -> StoreError | None:
    """cuemem's error for a SQLite error about storage, with what to do; None for any other (a query's bug)."""
    code, said = _code(exc), f"SQLite: {exc}"
    if code == _FULL or (code == _IOERR and _nearly_full(path)):
        return DiskFull(f"{path}: the disk is full ({said}); what this command was writing was not stored",
                        f"free space on that disk (df -h {_folder(path)}), then run the command again; what "
                        "was stored before is intact")
    if code in (_BUSY, _LOCKED):
        return StoreBusy(f"{path} is busy: another process held its write lock for over {BUSY_TIMEOUT:g} s",
                         "let the other cuemem process finish, then run this one again")
    if code in (_CORRUPT, _NOTADB):
        return StoreError(f"{path} is damaged ({said})",
                          "restore it from a copy: a .bak-schemaN file beside it (made before each upgrade), or "
                          "an export of it, imported again", fields=("export",))
    if code == _IOERR:
        return StoreError(f"{path}: the disk reported an input/output error ({said})",
                          "check that the disk or share holding it is still there and healthy, then run the "
                          "command again")
    if code in (_CANTOPEN, _PERM, _AUTH):
        return StoreError(f"cannot open {path} ({said})",
                          "check that the file and its folder exist and that you may read them")
    if code == _NOMEM:
        return StoreError(f"{path}: out of memory ({said})", "close other programs, then run the command again")
    return None


def _unwritable(path: str) -> str | None:
    """Why SQLite cannot write `path` where it is (None: it can). Asked before opening: SQLite itself
    finds out only at the first write, or, for a WAL file whose -shm it cannot create, fails every read."""
    target = Path(path).absolute()
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    with suppress(OSError):
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "the file system it is on is mounted read-only"
    if target.exists() and not os.access(target, os.W_OK):
        return "you may not write the file (its permissions)"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"you may not write its folder {folder}, where SQLite keeps its -wal and -shm files"
    return None


def _connect(path: str, read_only: str | None) -> tuple[Any, str | None]:
    """A connection to `path` that can read it, and why it cannot write (None: it can).

    A file that can be written is opened as it is. One that cannot is opened with SQLite's `mode=ro`,
    which still reads the write-ahead log through the `-shm` index; where that index cannot be created
    (a read-only folder, a full disk), with `immutable=1` as well, which reads the file alone: only when
    no `-wal` beside it holds changes, which it would silently miss. A full disk is found at the first
    read, which needs room for the `-shm` index: the file is then read as if it were read-only."""
    if read_only is None:
        conn = _connection(path)
        problem = _first_read(conn)
        if problem is None:
            return conn, None
        conn.close()
        if _code(problem) not in (_FULL, _IOERR, _CANTOPEN) or not _nearly_full(path):
            raise _translated(problem, path) or problem
        read_only = _FULL_DISK
    uri = Path(path).absolute().as_uri()
    conn = _connection(f"{uri}?mode=ro", uri=True)
    problem = _first_read(conn)
    if problem is None:
        return conn, read_only
    conn.close()
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise ReadOnlyStore(
            f"cannot read {path}: its write-ahead log {wal.name} holds changes not yet in the file, and SQLite "
            f"cannot create the {Path(path).name}-shm index it needs to read them, since {read_only}",
            "copy the file with its -wal to a folder you may write and open the copy there, or open it once "
            "where it can be written, which folds the log into the file")
    conn = _connection(f"{uri}?mode=ro&immutable=1", uri=True)
    problem = _first_read(conn)
    if problem is not None:
        conn.close()
        raise _translated(problem, path) or problem
    return conn, read_only


def _connection(target: str, uri: bool = False) -> Any:
    """A connection with the store's settings to a path, or (`uri`) a `file:` URI for the read-only modes."""
    return sqlite3.connect(target, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT,
                           uri=uri, factory=_Connection)


def _first_read(conn: Any) -> Exception | None:
    """Read the schema once: the moment SQLite opens the write-ahead log and its index. The error, if any."""
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        return exc
    return None


def _create_private_file(path: str) -> None:
    """Create the DB file 0600 (and a missing parent 0700) before SQLite touches it."""
    private_dir(Path(path).expanduser().resolve().parent)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)
