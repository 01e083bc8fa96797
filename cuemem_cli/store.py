"""The one place that runs SQL: connection, the migration runner, and every query cuemem makes (the
schema itself is migrations.py).

SQLite comes from `pysqlite3` because this Python's stdlib sqlite3 cannot load extensions; sqlite-vec
provides the `vec0` table of cue vectors, partitioned by conversation so a KNN never leaves it.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, UTC
from pathlib import Path
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal, overload

import numpy as np
import orjson

from . import vectors as vec
from .errors import ModelMismatch, StoreError
from .files import private_dir
from .migrations import EDGE_KINDS, MIGRATIONS, Step, steps
from .records import Cue, Turn

# Edges store their kind as a code (m011); callers see names.
KIND_CODE = {name: code for code, name in enumerate(EDGE_KINDS)}
SEMANTIC, TEMPORAL = KIND_CODE["semantic"], KIND_CODE["temporal"]
KIND_NAME = "CASE e.kind " + " ".join(f"WHEN {code} THEN '{name}'" for name, code in KIND_CODE.items()) + " END"

BUSY_TIMEOUT = 30.0  # seconds a process waits for another one's write lock before giving up
APPLICATION_ID = 0x43554D45  # "CUME": marks a file as a cuemem store
SQLITE_HEADER = b"SQLite format 3\x00"
# What a database's turn vectors were embedded from (meta `turn_vectors`, see m005): the turn read with
# the turn before it in its session (ingest.embed_turns), or (databases written before m005) the turn alone.
TURN_WITH_PREVIOUS = "turn+previous"
TURN_ALONE = "turn"

_TURN_COLUMNS = "t.id, c.name, t.position, t.source_id, t.text, t.session, t.time, t.speaker, t.role"


def _connect_module():
    """pysqlite3 where installed (it can load extensions); else a stdlib that can."""
    try:
        from pysqlite3 import dbapi2 as sqlite3
    except ImportError:  # pragma: no cover - depends on the platform
        import sqlite3
    return sqlite3


sqlite3 = _connect_module()


_TIE_MARGIN = 16


def _candidates(k: int) -> int:
    """How many int8 neighbours to rescore for the float top k: int8 codes move similarities by ~1e-3, so
    the float top k lies well inside the int8 top 2k + 16 (bench/RESULTS.md: same evidence)."""
    return min(2 * k + _TIE_MARGIN, VEC0_MAX_K)
VEC0_MAX_K = 4096  # sqlite-vec's limit on k


def now_iso() -> str:
    return datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="seconds")


def _turn(row: Sequence[Any]) -> Turn:
    return Turn(
        id=row[0], conversation=row[1], position=row[2], source_id=row[3], text=row[4],
        session=row[5], time=row[6], speaker=row[7], role=row[8],
    )


@dataclass(frozen=True)
class NewTurn:
    """A turn ready to insert: ingest has assigned its position and identity."""

    conversation_id: int
    position: int
    source_id: str
    text: str
    content_hash: str
    session: str | None
    time: str | None
    speaker: str | None
    role: str | None
    extra: dict[str, Any]
    status: str = "done"


class Store:
    """A cuemem SQLite file. Open it with `Store.open(path)`; it migrates on open."""

    def __init__(self, conn, path: str):
        self.conn = conn
        self.path = path

    # ----------------------------------------------------------------- opening
    @classmethod
    def open(cls, path: str | os.PathLike, create: bool = True, readonly: bool = False) -> Store:
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
        store = cls(conn, path)
        try:
            store._prepare(exists, wal=not readonly)
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

    def _schema_state(self) -> tuple[int, int, list[str], int | None]:
        """(application id, number of schema objects, migrations recorded, embedding dimension or None)."""
        app_id = self.conn.execute("PRAGMA application_id").fetchone()[0]
        names = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master")}
        applied = [r[0] for r in self.conn.execute("SELECT name FROM _migrations ORDER BY name")] \
            if "_migrations" in names else []
        dim = self.get_meta("embedding_dim") if "meta" in names else None
        return app_id, len(names), applied, int(dim) if dim else None

    def _pending(self, state: tuple[int, int, list[str], int | None], existed: bool) -> list[Step]:
        """The migrations left to apply now (vector ones wait for a dimension); refuses a file that is not
        ours or was written by a newer cuemem."""
        app_id, tables, applied, dim = state
        if app_id != APPLICATION_ID and existed and tables:
            raise StoreError(
                f"{self.path} is a SQLite database but not a cuemem one; cuemem left it untouched",
                "point --db (or CUEMEM_DB) at a cuemem database or at a new file",
            )
        known = steps(MIGRATIONS)
        unknown = [name for name in applied if name not in {step.name for step in known}]
        if unknown:
            raise StoreError(
                f"{self.path} was written by a newer cuemem (schema {len(applied)}, this one knows "
                f"{len(known)}: unknown migration {unknown[0]}); cuemem left it untouched",
                "upgrade cuemem: pip install -U cuemem",
            )
        return [step for step in known if step.name not in applied and (dim is not None or not step.needs_dim)]

    def _prepare(self, existed: bool, wal: bool) -> None:
        """Refuse a file that is not ours (before changing a byte of it), set the connection up, then mark
        the file as cuemem's and apply pending migrations."""
        with self.snapshot():
            state = self._schema_state()
            pending = self._pending(state, existed)
        if wal:
            self._use_wal()
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.execute("PRAGMA secure_delete=ON")
        if pending:
            self._migrate(existed, seen=state[2])

    def _migrate(self, existed: bool, seen: list[str] | None) -> None:
        """Apply the pending migrations (migrations.py) in order, each in its own write transaction with
        its record in `_migrations`.

        Several processes may open a new or an old database at once: each transaction reads the schema
        state again once it holds the write lock, so each migration runs exactly once and the others
        find nothing to do. Inside an open transaction (bind_embedder) they all join it.

        A database holding conversations is copied to `.bak-schemaN` before its first migration, by the
        process that applies it: the one that finds the migrations it `seen` when it opened the file
        still unchanged (`seen` None: no copy). A database without conversations has nothing to lose,
        which also spares a new file, created by two processes at once, a copy of its first steps.
        """
        backup = seen is not None
        while True:
            with self.transaction():
                state = self._schema_state()
                pending = self._pending(state, existed)
                if not pending:
                    return
                app_id, _, applied, dim = state
                if backup and applied and applied == seen and self._holds_conversations():
                    self._copy_committed(f"{self.path}.bak-schema{len(applied)}")
                backup = False
                if app_id != APPLICATION_ID:
                    self.conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                self.conn.execute(
                    "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
                pending[0].apply(self.conn, dim)
                self.conn.execute("INSERT INTO _migrations VALUES (?, ?)", (pending[0].name, now_iso()))

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

    def schema_version(self) -> int:
        return self.conn.execute("SELECT count(*) FROM _migrations").fetchone()[0]

    def close(self) -> None:
        self.conn.close()

    def transaction(self):
        """One atomic unit: everything inside commits together or not at all. It takes the write lock at
        once (BEGIN IMMEDIATE), waiting up to BUSY_TIMEOUT for another writer, so whatever it reads inside
        stays true until it commits."""
        return self._begin("IMMEDIATE")

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

    # ---------------------------------------------------------------- metadata
    @overload
    def get_meta(self, key: str, default: str) -> str: ...
    @overload
    def get_meta(self, key: str, default: str | None = None) -> str | None: ...

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def meta(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, value FROM meta ORDER BY key"))

    def bind_embedder(self, model_id: str, dim: int, backend: str) -> None:
        """Record the embedding model on first use, creating the vector tables for its dimension (the
        vector migrations, migrations.py); refuse a different model afterwards."""
        if self.get_meta("embedding_model") is None:
            with self.transaction():
                if self.get_meta("embedding_model") is not None:  # another process bound it first
                    self.check_embedder(model_id, dim)
                    return
                self.set_meta("embedding_model", model_id)
                self.set_meta("embedding_dim", str(dim))
                self.set_meta("embedding_backend", backend)
                self._migrate(existed=True, seen=None)  # the vector migrations were waiting for `dim`
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
    @overload
    def conversation_id(self, name: str, create: Literal[True]) -> int: ...
    @overload
    def conversation_id(self, name: str, create: bool = False) -> int | None: ...

    def conversation_id(self, name: str, create: bool = False) -> int | None:
        row = self.conn.execute("SELECT id FROM conversations WHERE name = ?", (name,)).fetchone()
        if row:
            return row[0]
        if not create:
            return None
        cur = self.conn.execute("INSERT INTO conversations(name, created_at) VALUES (?, ?)", (name, now_iso()))
        return cur.lastrowid

    def conversation_names(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM conversations ORDER BY id")]

    # ------------------------------------------------------------------- turns
    def stored_texts(self, conversation_id: int, source_ids: Sequence[str]) -> dict[str, tuple[int, int, str]]:
        """source id → (turn id, position, text) of those of `source_ids` the conversation already holds."""
        if not source_ids:
            return {}
        rows = self.conn.execute(
            "SELECT source_id, id, position, text FROM turns WHERE conversation_id = ?"
            " AND source_id IN (SELECT value FROM json_each(?))",
            (conversation_id, orjson.dumps(list(source_ids)).decode()),
        )
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def next_position(self, conversation_id: int) -> int:
        row = self.conn.execute(
            "SELECT coalesce(max(position), -1) + 1 FROM turns WHERE conversation_id = ?", (conversation_id,)
        ).fetchone()
        return row[0]

    def insert_turns(self, turns: Sequence[NewTurn]) -> list[int]:
        ids = []
        stored = now_iso()
        for t in turns:
            cur = self.conn.execute(
                "INSERT INTO turns(conversation_id, position, source_id, session, time, speaker, role, text,"
                " content_hash, extra, status, stored_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (t.conversation_id, t.position, t.source_id, t.session, t.time, t.speaker, t.role, t.text,
                 t.content_hash, orjson.dumps(t.extra).decode() if t.extra else None, t.status, stored),
            )
            ids.append(cur.lastrowid)
            self.conn.execute("INSERT INTO turns_fts(rowid, text) VALUES (?, ?)", (cur.lastrowid, t.text))
        return ids

    def turns(self, conversation_id: int) -> list[Turn]:
        rows = self.conn.execute(
            f"SELECT {_TURN_COLUMNS} FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            " WHERE t.conversation_id = ? ORDER BY t.position",
            (conversation_id,),
        )
        return [_turn(r) for r in rows]

    def turns_by_id(self, turn_ids: Iterable[int]) -> dict[int, Turn]:
        rows = self.conn.execute(
            f"SELECT {_TURN_COLUMNS} FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            " WHERE t.id IN (SELECT value FROM json_each(?))",
            (orjson.dumps(list(turn_ids)).decode(),),
        )
        return {r[0]: _turn(r) for r in rows}

    def turns_not_held_at(self, conversation_id: int, when: str) -> tuple[set[int], int]:
        """Turns memory did not hold at `when` (ISO): said after it, or, undated, stored after it; and
        how many cues they have (what a KNN must fetch beyond top-m to still return top-m held cues)."""
        rows = self.conn.execute(
            "SELECT t.id, (SELECT count(*) FROM cues c WHERE c.turn_id = t.id) FROM turns t"
            " WHERE t.conversation_id = ?1 AND CASE WHEN t.time IS NOT NULL THEN t.time > ?2"
            " ELSE coalesce(t.stored_at, '') > ?2 END",
            (conversation_id, when)).fetchall()
        return {r[0] for r in rows}, sum(r[1] for r in rows)

    def speakers(self, conversation_id: int) -> list[str]:
        return [r[0] for r in self.conn.execute(
            "SELECT DISTINCT speaker FROM turns WHERE conversation_id = ? AND speaker IS NOT NULL", (conversation_id,))]

    def turn_by_source_id(self, conversation_id: int, source_id: str) -> Turn | None:
        row = self.conn.execute(
            f"SELECT {_TURN_COLUMNS} FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            " WHERE t.conversation_id = ? AND t.source_id = ?",
            (conversation_id, source_id),
        ).fetchone()
        return _turn(row) if row else None

    def turns_at_positions(self, conversation_id: int, low: int, high: int) -> list[tuple[int, int]]:
        """(turn id, position) for positions in [low, high], for temporal edges."""
        return self.conn.execute(
            "SELECT id, position FROM turns WHERE conversation_id = ? AND position BETWEEN ? AND ? ORDER BY position",
            (conversation_id, low, high),
        ).fetchall()

    def set_status(self, turn_ids: Sequence[int], status: str) -> None:
        self.conn.execute(
            "UPDATE turns SET status = ? WHERE id IN (SELECT value FROM json_each(?))",
            (status, orjson.dumps(list(turn_ids)).decode()),
        )

    def pending_turns(self, conversation_id: int | None = None) -> list[tuple[Turn, str]]:
        """Turns whose LLM extraction failed, with their content hash."""
        rows = self.conn.execute(
            f"SELECT {_TURN_COLUMNS}, t.content_hash FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            " WHERE t.status = 'pending' AND (?1 IS NULL OR t.conversation_id = ?1)"
            " ORDER BY t.conversation_id, t.position",
            (conversation_id,),
        )
        return [(_turn(r), r[9]) for r in rows]

    def mark_retrieved(self, conversation_id: int, source_ids: Sequence[str], when: str) -> None:
        """Record that `ask` used these turns (the LRU forgetting policy reads it)."""
        self.conn.execute(
            "UPDATE turns SET last_retrieved_at = ? WHERE conversation_id = ? AND source_id IN"
            " (SELECT value FROM json_each(?))",
            (when, conversation_id, orjson.dumps(list(source_ids)).decode()),
        )

    # -------------------------------------------------------------------- cues
    def insert_cues(self, conversation_id: int, rows: Sequence[tuple[int, str, str, str, str]]) -> list[int]:
        """rows: (turn_id, subject, relation, object, kind) → new cue ids, in order."""
        ids = []
        for turn_id, subject, relation, obj, kind in rows:
            cur = self.conn.execute(
                "INSERT INTO cues(turn_id, conversation_id, subject, relation, object, kind) VALUES (?, ?, ?, ?, ?, ?)",
                (turn_id, conversation_id, subject, relation, obj, kind),
            )
            ids.append(cur.lastrowid)
        return ids

    def cues_of_turns(self, turn_ids: Iterable[int]) -> dict[int, list[Cue]]:
        out: dict[int, list[Cue]] = {}
        rows = self.conn.execute(
            "SELECT id, turn_id, subject, relation, object, kind FROM cues"
            " WHERE turn_id IN (SELECT value FROM json_each(?)) ORDER BY id",
            (orjson.dumps(list(turn_ids)).decode(),),
        )
        for r in rows:
            out.setdefault(r[1], []).append(Cue(*r))
        return out

    def statement_vectors(self, turn_ids: Iterable[int]) -> dict[int, list[tuple[str, np.ndarray]]]:
        """Each turn's sentences that are statement cues, with their vectors (for excerpts of long turns)."""
        rows = self.conn.execute(
            "SELECT c.turn_id, c.object, v.embedding FROM cues c JOIN cue_vectors v ON v.cue_id = c.id"
            " WHERE c.kind = 'statement' AND c.turn_id IN (SELECT value FROM json_each(?)) ORDER BY c.id",
            (orjson.dumps(list(turn_ids)).decode(),)).fetchall()
        out: dict[int, list[tuple[str, np.ndarray]]] = {}
        if not rows:
            return out
        for (tid, sentence, _), vector in zip(rows, vec.from_blobs([r[2] for r in rows], len(rows[0][2])), strict=True):
            out.setdefault(tid, []).append((sentence, vector))
        return out

    def insert_vectors(self, conversation_id: int, cue_ids: Sequence[int], matrix: np.ndarray) -> None:
        """Cue vectors, stored as int8 codes (vectors.py)."""
        self._insert_codes("INSERT INTO cue_vectors(cue_id, conversation_id, embedding) VALUES (?, ?, vec_int8(?))",
                           [(cid, conversation_id) for cid in cue_ids], matrix)

    def _insert_codes(self, sql: str, keys: Sequence[tuple[int, int]], matrix: np.ndarray) -> None:
        """Rows of (key columns, int8 code), a block of vectors encoded at a time (a long turn has ~100,000)."""
        for lo in range(0, len(keys), 10_000):
            codes = vec.encode(matrix[lo:lo + 10_000])
            self.conn.executemany(sql, [(*key, code.tobytes())
                                        for key, code in zip(keys[lo:lo + 10_000], codes, strict=True)])

    def insert_turn_vectors(self, rows: Sequence[tuple[int, np.ndarray]]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO turn_vectors(turn_id, embedding) VALUES (?, ?)",
                              [(tid, vec.blob(vector)) for tid, vector in rows])

    def turn_vectors(self, turn_ids: Iterable[int]) -> dict[int, np.ndarray]:
        rows = self.conn.execute(
            "SELECT turn_id, embedding FROM turn_vectors WHERE turn_id IN (SELECT value FROM json_each(?))",
            (orjson.dumps(list(turn_ids)).decode(),)).fetchall()
        if not rows:
            return {}
        return dict(zip((r[0] for r in rows), vec.from_blobs([r[1] for r in rows], len(rows[0][1])), strict=True))

    def previous_turns(self, turn_ids: Iterable[int]) -> dict[int, int]:
        """Each turn's predecessor in its conversation, where both were said in the same session."""
        return dict(self.conn.execute(
            "SELECT t.id, p.id FROM turns t JOIN turns p ON p.id = ("
            "  SELECT q.id FROM turns q WHERE q.conversation_id = t.conversation_id AND q.position < t.position"
            "  ORDER BY q.position DESC LIMIT 1)"
            " WHERE t.id IN (SELECT value FROM json_each(?)) AND p.session IS t.session",
            (orjson.dumps(list(turn_ids)).decode(),)).fetchall())

    def last_turn(self, conversation_id: int) -> tuple[str | None, str] | None:
        """(session, text) of the conversation's latest turn: what a turn appended to it is read after."""
        return self.conn.execute("SELECT session, text FROM turns WHERE conversation_id = ?"
                                 " ORDER BY position DESC LIMIT 1", (conversation_id,)).fetchone()

    def turns_after(self, turn_ids: Iterable[int]) -> list[int]:
        """The turns said right after these in the same session, not among them: the turns whose
        vectors hold these turns' text (TURN_WITH_PREVIOUS)."""
        ids = orjson.dumps(list(turn_ids)).decode()
        return [r[0] for r in self.conn.execute(
            "SELECT DISTINCT n.id FROM turns t JOIN turns n ON n.id = ("
            "  SELECT q.id FROM turns q WHERE q.conversation_id = t.conversation_id AND q.position > t.position"
            "  ORDER BY q.position LIMIT 1)"
            " WHERE t.id IN (SELECT value FROM json_each(?1)) AND n.session IS t.session"
            " AND n.id NOT IN (SELECT value FROM json_each(?1)) ORDER BY n.id", (ids,))]

    def texts_with_previous(self, turn_ids: Iterable[int]) -> list[tuple[int, str, str | None]]:
        """(turn id, text, text of the turn before it in its session or None) for each existing turn."""
        ids = list(turn_ids)
        before = self.previous_turns(ids)
        turns = self.turns_by_id([*ids, *before.values()])
        return [(tid, turns[tid].text, turns[before[tid]].text if tid in before else None)
                for tid in ids if tid in turns]

    def turn_vector_text(self) -> str:
        """What this database's turn vectors hold: TURN_WITH_PREVIOUS, or TURN_ALONE if written before m005."""
        return self.get_meta("turn_vectors") or TURN_WITH_PREVIOUS

    def conversation_vectors(self, conversation_id: int,
                             dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """All cue vectors of a conversation: (cue ids, turn ids, turn positions, matrix).

        Read in chunks into one preallocated matrix, so a 1M-cue conversation costs its 1.5 GB once
        rather than again as row objects.
        """
        cursor = self.conn.execute(
            "SELECT v.cue_id, c.turn_id, t.position, v.embedding FROM cue_vectors v"
            " JOIN cues c ON c.id = v.cue_id JOIN turns t ON t.id = c.turn_id"
            " WHERE v.conversation_id = ? ORDER BY v.cue_id",
            (conversation_id,),
        )
        matrix = np.empty((self.cue_count(conversation_id), dim), dtype=np.float32)
        ids: list[tuple[int, int, int]] = []
        while rows := cursor.fetchmany(10_000):
            block = vec.from_blobs([r[3] for r in rows], dim)
            if len(ids) + len(rows) > len(matrix):  # cues without vectors never exist; be safe anyway
                matrix = np.vstack([matrix, np.empty((len(rows), dim), dtype=np.float32)])
            matrix[len(ids):len(ids) + len(rows)] = block
            ids.extend((r[0], r[1], r[2]) for r in rows)
        columns = np.array(ids, dtype=np.int64).reshape(len(ids), 3)
        return columns[:, 0].copy(), columns[:, 1].copy(), columns[:, 2].copy(), matrix[:len(ids)]

    def conversation_cues(self, conversation_id: int) -> list[Cue]:
        rows = self.conn.execute(
            "SELECT id, turn_id, subject, relation, object, kind FROM cues WHERE conversation_id = ? ORDER BY id",
            (conversation_id,))
        return [Cue(*r) for r in rows]

    def conversation_turn_vectors(self, conversation_id: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """(turn ids, matrix) of every turn vector of a conversation."""
        rows = self.conn.execute(
            "SELECT v.turn_id, v.embedding FROM turn_vectors v JOIN turns t ON t.id = v.turn_id"
            " WHERE t.conversation_id = ? ORDER BY v.turn_id", (conversation_id,)).fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        return ids, vec.from_blobs([r[1] for r in rows], dim)

    def map_file(self) -> None:
        """Read the file through mmap from now on: vec0 scans of large partitions run ~2× faster
        without copying pages (measured at 1M cues). Not on by default: mapped pages count in the
        process's RSS, which would then grow with the file during a long ingest."""
        self.conn.execute(f"PRAGMA mmap_size={2**31}")

    def cue_count(self, conversation_id: int) -> int:
        return self.conn.execute("SELECT count(*) FROM cues WHERE conversation_id = ?",
                                 (conversation_id,)).fetchone()[0]

    def data_version(self) -> int:
        """Changes when another connection (another process) commits; this connection's own commits leave it."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    def version(self) -> tuple[int, int]:
        """Changes whenever anything is committed, by this connection or another: what caches key on."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0], self.conn.total_changes

    # ------------------------------------------------------------------- cells
    def cell_centroids(self, conversation_id: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """(cell ids, centroid matrix) of a conversation's coarse cells; empty when it has none."""
        rows = self.conn.execute("SELECT id, centroid FROM cell_centroids WHERE conversation_id = ? ORDER BY id",
                                 (conversation_id,)).fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        return ids, np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)

    def replace_cells(self, conversation_id: int, centroids: np.ndarray, cue_ids: np.ndarray, cells: np.ndarray,
                      vectors: np.ndarray) -> np.ndarray:
        """Swap a conversation's cells for new ones; call inside `transaction()`. Returns the cell ids.

        `cells[i]` is the row of `centroids` that cue `cue_ids[i]` belongs to. Rows go into vec0
        grouped by cell: vec0 appends to one chunk per partition, so cell order writes each chunk
        once (measured: 1M rows in ~65 s, against ~400 s in arrival order).
        """
        old = orjson.dumps([r[0] for r in self.conn.execute(
            "SELECT id FROM cell_centroids WHERE conversation_id = ?", (conversation_id,))]).decode()
        self.conn.execute("DELETE FROM cue_cells WHERE cell IN (SELECT value FROM json_each(?))", (old,))
        self.conn.execute("DELETE FROM cell_centroids WHERE conversation_id = ?", (conversation_id,))
        ids = np.array([self.conn.execute(
            "INSERT INTO cell_centroids(conversation_id, centroid) VALUES (?, ?)",
            (conversation_id, c.astype(np.float32).tobytes())).lastrowid for c in centroids], dtype=np.int64)
        order = np.argsort(cells, kind="stable")
        for lo in range(0, len(order), 50_000):
            self.insert_cell_vectors(cue_ids[order[lo:lo + 50_000]], ids[cells[order[lo:lo + 50_000]]],
                                     vectors[order[lo:lo + 50_000]])
        return ids

    def insert_cell_vectors(self, cue_ids: np.ndarray, cell_ids: np.ndarray, matrix: np.ndarray) -> None:
        self._insert_codes("INSERT INTO cue_cells(cue_id, cell, embedding) VALUES (?, ?, vec_int8(?))",
                           [(int(c), int(cell)) for c, cell in zip(cue_ids, cell_ids, strict=True)], matrix)

    def knn_cues_in_cells(self, cell_ids: Sequence[int], vector: np.ndarray, k: int) -> list[tuple[Cue, float]]:
        """Top-k cues among the given cells (vec0 returns candidates per cell; the best k of all are kept)."""
        k = min(int(k), VEC0_MAX_K)
        if k <= 0 or not len(cell_ids):
            return []
        cells = ",".join(str(int(c)) for c in cell_ids)
        hits = self.conn.execute(
            f"SELECT cue_id, embedding FROM cue_cells WHERE embedding MATCH vec_int8(?) AND k = ?"
            f" AND cell IN ({cells})",
            (vec.blob(vector), _candidates(k))).fetchall()
        return self._rescored(hits, vector, k)

    def knn_cues(self, conversation_id: int, vector: np.ndarray, k: int) -> list[tuple[Cue, float]]:
        """Top-k cues of one conversation by cosine similarity (vec0 partition search).

        vec0 compares int8 codes (vectors.py) with the question's own code; the `_candidates(k)` it
        returns are rescored with the float question against their decoded vectors, exactly as view.py
        scores them in memory, and the k best kept (equal scores: lowest cue id first). Identical cue
        texts have identical codes, and vec0 keeps an arbitrary few of a tie that straddles its last
        place: while the tie runs to the end of what came back, more are asked for.
        """
        k = min(int(k), VEC0_MAX_K)
        if k <= 0:
            return []
        fetch = _candidates(k)
        while True:
            rows = self.conn.execute(
                "SELECT cue_id, embedding, distance FROM cue_vectors"
                " WHERE embedding MATCH vec_int8(?) AND k = ? AND conversation_id = ?",
                (vec.blob(vector), fetch, conversation_id)).fetchall()
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
        rows = self.conn.execute(
            "SELECT id, turn_id, subject, relation, object, kind FROM cues"
            " WHERE id IN (SELECT value FROM json_each(?))", (orjson.dumps([h[0] for h in best]).decode(),)).fetchall()
        cues = {r[0]: Cue(*r) for r in rows}
        return [(cues[cid], sim) for cid, sim in best if cid in cues]

    def search_turns_fts(self, conversation_id: int, query: str, limit: int) -> list[tuple[int, float]]:
        """Lexical turn search (BM25; higher is better), limited to one conversation."""
        rows = self.conn.execute(
            "SELECT t.id, -bm25(turns_fts) AS s FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid"
            " WHERE turns_fts MATCH ? AND t.conversation_id = ? ORDER BY s DESC LIMIT ?",
            (query, conversation_id, limit),
        )
        return [(r[0], float(r[1])) for r in rows]

    # ------------------------------------------------------------------- edges
    def insert_edges(self, rows: Iterable[tuple[int, int, str, float, int]]) -> int:
        """rows: (src, dst, kind, weight, rank). A repeated edge keeps its best weight and rank."""
        cur = self.conn.executemany(
            "INSERT INTO edges(src, dst, kind, weight, rank) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (src, kind, dst) DO UPDATE SET weight = max(weight, excluded.weight),"
            " rank = min(rank, excluded.rank)",
            [(src, dst, KIND_CODE[kind], weight, rank) for src, dst, kind, weight, rank in rows],
        )
        return cur.rowcount

    def neighbours(self, turn_ids: Sequence[int], window: int, sem_k: int) -> list[tuple[int, int, str, float]]:
        """One hop from `turn_ids`: (anchor, neighbour, kind, weight).

        Temporal edges of rank (distance in positions) ≤ `window`; semantic edges of rank ≤ `sem_k`, followed in both
        directions (see graph.py for why).
        """
        return self.conn.execute(
            "WITH a(id) AS (SELECT value FROM json_each(?1))"
            f" SELECT e.src, e.dst, {KIND_NAME}, e.weight FROM edges e JOIN a ON e.src = a.id"
            f"  WHERE e.rank <= CASE e.kind WHEN {TEMPORAL} THEN ?2 ELSE ?3 END"
            " UNION ALL"
            f" SELECT e.dst, e.src, {KIND_NAME}, e.weight FROM edges e JOIN a ON e.dst = a.id"
            f"  WHERE e.kind = {SEMANTIC} AND e.rank <= ?3",
            (orjson.dumps(list(turn_ids)).decode(), window, sem_k),
        ).fetchall()

    def edges_of(self, turn_id: int) -> list[tuple[int, int, str, float, int]]:
        return self.conn.execute(
            f"SELECT e.src, e.dst, {KIND_NAME}, e.weight, e.rank FROM edges e WHERE e.src = ?1 OR e.dst = ?1"
            " ORDER BY e.kind, e.weight DESC",
            (turn_id,),
        ).fetchall()

    def all_edges(self, conversation_id: int) -> list[tuple[int, int, str, float, int]]:
        return self.conn.execute(
            f"SELECT e.src, e.dst, {KIND_NAME}, e.weight, e.rank FROM edges e JOIN turns t ON t.id = e.src"
            " WHERE t.conversation_id = ? ORDER BY e.src, e.kind, e.dst",
            (conversation_id,),
        ).fetchall()

    # ------------------------------------------------------------------- stats
    def conversation_stats(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            f"""
            SELECT c.name,
                   (SELECT count(*) FROM turns t WHERE t.conversation_id = c.id),
                   (SELECT count(*) FROM cues q WHERE q.conversation_id = c.id),
                   (SELECT count(*) FROM edges e JOIN turns t ON t.id = e.src
                      WHERE t.conversation_id = c.id AND e.kind = {TEMPORAL}),
                   (SELECT count(*) FROM edges e JOIN turns t ON t.id = e.src
                      WHERE t.conversation_id = c.id AND e.kind = {SEMANTIC}),
                   (SELECT count(*) FROM turns t WHERE t.conversation_id = c.id
                      AND NOT EXISTS (SELECT 1 FROM cues q WHERE q.turn_id = t.id)),
                   (SELECT count(*) FROM turns t WHERE t.conversation_id = c.id AND t.status = 'pending'),
                   (SELECT min(time) FROM turns t WHERE t.conversation_id = c.id),
                   (SELECT max(time) FROM turns t WHERE t.conversation_id = c.id)
            FROM conversations c ORDER BY c.id
            """
        ).fetchall()
        keys = ("conversation", "turns", "cues", "temporal_edges", "semantic_edges", "turns_without_cues",
                "pending_turns", "first_time", "last_time")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def degree_stats(self, conversation_id: int | None) -> dict[str, float]:
        """Undirected degree over both edge kinds: min, mean, max per turn (zeros for None: a conversation
        forgotten since it was listed)."""
        row = self.conn.execute(
            """
            WITH deg AS (
              SELECT t.id, (SELECT count(*) FROM edges e WHERE e.src = t.id OR e.dst = t.id) AS d
              FROM turns t WHERE t.conversation_id = ?)
            SELECT coalesce(min(d), 0), coalesce(avg(d), 0.0), coalesce(max(d), 0) FROM deg
            """,
            (conversation_id,),
        ).fetchone()
        return {"min": row[0], "mean": round(row[1], 2), "max": row[2]}

    # ------------------------------------------------------------------ browse
    # Only `cuemem browse` asks these (browse/pages.py); together so that they move as one.
    def browse_conversations(self, search: str | None, name: str | None, offset: int,
                             limit: int) -> tuple[int, list[dict[str, Any]]]:
        """(how many conversations match, one page of them, most recently said first): each with its name,
        `title` (the one its turns kept from an export, else None), first and last time, turn and cue
        counts. `search` matches name or title (case-insensitive substring); `name` picks one conversation.
        Counts come from the indexes, never a scan of another conversation's rows."""
        matched = (
            "WITH listed AS (SELECT c.id, c.name, c.created_at,"
            "  (SELECT json_extract(t.extra, '$.title') FROM turns t WHERE t.conversation_id = c.id"
            "    AND t.extra IS NOT NULL AND json_extract(t.extra, '$.title') IS NOT NULL"
            "    ORDER BY t.position LIMIT 1) AS title,"
            "  (SELECT min(t.time) FROM turns t WHERE t.conversation_id = c.id) AS first_time,"
            "  (SELECT max(t.time) FROM turns t WHERE t.conversation_id = c.id) AS last_time"
            " FROM conversations c WHERE ?2 IS NULL OR c.name = ?2),"
            " matched AS (SELECT * FROM listed WHERE ?1 IS NULL OR instr(lower(name), lower(?1)) > 0"
            "  OR instr(lower(coalesce(title, '')), lower(?1)) > 0)")
        total = self.conn.execute(f"{matched} SELECT count(*) FROM matched", (search, name)).fetchone()[0]
        rows = self.conn.execute(
            f"{matched} SELECT name, title, first_time, last_time,"
            " (SELECT count(*) FROM turns t WHERE t.conversation_id = matched.id),"
            " (SELECT count(*) FROM cues q WHERE q.conversation_id = matched.id)"
            " FROM matched ORDER BY coalesce(last_time, created_at) DESC, id DESC LIMIT ?3 OFFSET ?4",
            (search, name, limit, offset)).fetchall()
        keys = ("conversation", "title", "first_time", "last_time", "turns", "cues")
        return total, [dict(zip(keys, r, strict=True)) for r in rows]

    def browse_search_turns(self, words: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """(turn id, BM25: higher is better) of turns in any conversation holding every one of `words`, each
        word stemmed as the lexical index stems it, best first."""
        if not words or limit <= 0:
            return []
        query = " ".join('"' + word.replace('"', '""') + '"' for word in words)
        rows = self.conn.execute(
            "SELECT rowid, -bm25(turns_fts) AS s FROM turns_fts WHERE turns_fts MATCH ? ORDER BY s DESC, rowid"
            " LIMIT ?", (query, limit))
        return [(r[0], float(r[1])) for r in rows]

    # ------------------------------------------------------- extraction cache
    def cached_triples(self, model: str, prompt_version: str, turn_hash: str) -> list[list[str]] | None:
        row = self.conn.execute(
            "SELECT triples FROM extraction_cache WHERE model = ? AND prompt_version = ? AND turn_hash = ?",
            (model, prompt_version, turn_hash),
        ).fetchone()
        return orjson.loads(row[0]) if row else None

    def cache_triples(self, model: str, prompt_version: str, turn_hash: str, triples: list[list[str]]) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO extraction_cache VALUES (?, ?, ?, ?)",
            (model, prompt_version, turn_hash, orjson.dumps(triples).decode()),
        )

    # ------------------------------------------------- forget, scrub, export
    def snapshot(self):
        """A read transaction: every query inside sees the same committed state (WAL), and takes no write lock."""
        return self._begin("DEFERRED")

    def forget_selection(self, conversation_id: int | None, session: str | None, source_ids: Sequence[str] | None,
                         before: str | None, decay_cutoff: str | None, lru: int | None) -> list[tuple[int, str]]:
        """(turn id, conversation name) of the turns a forget selects; see forget.py for the policies.

        Selectors combine with AND; LRU ranks within what they select, per conversation: the `lru` most
        recently retrieved turns are kept (never-retrieved ones rank last, newer positions first).
        """
        return self.conn.execute(
            """
            WITH candidates AS (
              SELECT t.id, t.conversation_id, t.position, t.last_retrieved_at FROM turns t
              JOIN conversations c ON c.id = t.conversation_id
              WHERE (?1 IS NULL OR t.conversation_id = ?1)
                AND (?2 IS NULL OR t.session = ?2)
                AND (?3 IS NULL OR t.source_id IN (SELECT value FROM json_each(?3)))
                AND (?4 IS NULL OR t.time < ?4)
                AND (?5 IS NULL OR (coalesce(t.time, c.created_at) < ?5
                                    AND (t.last_retrieved_at IS NULL OR t.last_retrieved_at < ?5)))),
            ranked AS (
              SELECT id, conversation_id, row_number() OVER (
                PARTITION BY conversation_id
                ORDER BY last_retrieved_at IS NULL, last_retrieved_at DESC, position DESC) AS recency
              FROM candidates)
            SELECT r.id, c.name FROM ranked r JOIN conversations c ON c.id = r.conversation_id
            WHERE ?6 IS NULL OR r.recency > ?6 ORDER BY r.conversation_id, r.id
            """,
            (conversation_id, session, orjson.dumps(list(source_ids)).decode() if source_ids is not None else None,
             before, decay_cutoff, lru),
        ).fetchall()

    def forget_counts(self, turn_ids: Sequence[int]) -> dict[str, int]:
        """What deleting these turns would take with it (a dry run)."""
        ids = orjson.dumps(list(turn_ids)).decode()
        one = lambda sql: self.conn.execute(sql, (ids,)).fetchone()[0]  # noqa: E731
        return {
            "cues": one("SELECT count(*) FROM cues WHERE turn_id IN (SELECT value FROM json_each(?1))"),
            "vectors": one("SELECT count(*) FROM cue_vectors WHERE cue_id IN"
                           " (SELECT id FROM cues WHERE turn_id IN (SELECT value FROM json_each(?1)))")
            if self.has_vectors() else 0,
            "edges": one("SELECT count(*) FROM edges WHERE src IN (SELECT value FROM json_each(?1))"
                         " OR dst IN (SELECT value FROM json_each(?1))"),
            "extraction_cache": one(
                "SELECT count(*) FROM extraction_cache WHERE turn_hash IN"
                " (SELECT content_hash FROM turns WHERE id IN (SELECT value FROM json_each(?1)))"
                " AND turn_hash NOT IN"
                " (SELECT content_hash FROM turns WHERE id NOT IN (SELECT value FROM json_each(?1)))"),
        }

    def delete_turns(self, turn_ids: Sequence[int], keep_conversations: bool = False) -> dict[str, Any]:
        """Remove turns and all that is theirs; call inside `transaction()`.

        Order respects the foreign keys: cue vectors (and their cell copies), cues, edges (either end),
        turn FTS entries, turns, extraction-cache entries no remaining turn shares, then conversations
        left empty (unless `keep_conversations`: a replaced turn's successor is stored next). The FTS
        index is merged afterwards so no deleted term survives in it.
        """
        counts: dict[str, Any] = {"turns": 0, "cues": 0, "vectors": 0, "edges": 0, "extraction_cache": 0,
                                  "conversations": {}, "conversations_removed": []}
        if not turn_ids:
            return counts
        ids = orjson.dumps(list(turn_ids)).decode()
        run = self.conn.execute
        counts["conversations"] = dict(run(
            "SELECT c.name, count(*) FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            " WHERE t.id IN (SELECT value FROM json_each(?)) GROUP BY c.id ORDER BY c.id", (ids,)).fetchall())
        conversation_ids = orjson.dumps([r[0] for r in run(
            "SELECT DISTINCT conversation_id FROM turns WHERE id IN (SELECT value FROM json_each(?))",
            (ids,))]).decode()
        hashes = orjson.dumps([r[0] for r in run(
            "SELECT DISTINCT content_hash FROM turns WHERE id IN (SELECT value FROM json_each(?))",
            (ids,))]).decode()
        cue_ids = orjson.dumps([r[0] for r in run(
            "SELECT id FROM cues WHERE turn_id IN (SELECT value FROM json_each(?))", (ids,))]).decode()
        if self.has_vectors():
            counts["vectors"] = run("SELECT count(*) FROM cue_vectors WHERE cue_id IN"
                                    " (SELECT value FROM json_each(?))", (cue_ids,)).fetchone()[0]
            run("DELETE FROM cue_vectors WHERE cue_id IN (SELECT value FROM json_each(?))", (cue_ids,))
            run("DELETE FROM cue_cells WHERE cue_id IN (SELECT value FROM json_each(?))", (cue_ids,))
        counts["cues"] = run("DELETE FROM cues WHERE id IN (SELECT value FROM json_each(?))", (cue_ids,)).rowcount
        counts["edges"] = run("DELETE FROM edges WHERE src IN (SELECT value FROM json_each(?1))"
                              " OR dst IN (SELECT value FROM json_each(?1))", (ids,)).rowcount
        run("DELETE FROM turn_vectors WHERE turn_id IN (SELECT value FROM json_each(?))", (ids,))
        run("DELETE FROM turns_fts WHERE rowid IN (SELECT value FROM json_each(?))", (ids,))
        counts["turns"] = run("DELETE FROM turns WHERE id IN (SELECT value FROM json_each(?))", (ids,)).rowcount
        counts["extraction_cache"] = run(
            "DELETE FROM extraction_cache WHERE turn_hash IN (SELECT value FROM json_each(?))"
            " AND turn_hash NOT IN (SELECT content_hash FROM turns)", (hashes,)).rowcount
        if not keep_conversations:
            counts["conversations_removed"] = sorted(r[0] for r in run(
                "DELETE FROM conversations WHERE id IN (SELECT value FROM json_each(?))"
                " AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.conversation_id = conversations.id) RETURNING name",
                (conversation_ids,)).fetchall())
        self.conn.execute("INSERT INTO turns_fts(turns_fts) VALUES ('optimize')")
        return counts

    def copy_to(self, path: str | os.PathLike) -> None:
        """A page-for-page copy of this database into a new private file (SQLite's backup API)."""
        _create_private_file(str(path))
        target = sqlite3.connect(str(path))
        try:
            self.conn.backup(target)
        finally:
            target.close()

    def turn_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM turns").fetchone()[0]

    def all_turn_texts(self) -> list[tuple[int, str]]:
        return self.conn.execute("SELECT id, text FROM turns ORDER BY id").fetchall()

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

    def export_turns(self, conversation_id: int | None) -> Iterator[tuple]:
        """(id, conversation, source_id, session, time, speaker, role, text, extra, status) of every turn,
        conversation by conversation, in position order."""
        cursor = self.conn.execute(
            "SELECT t.id, c.name, t.source_id, t.session, t.time, t.speaker, t.role, t.text, t.extra, t.status"
            " FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            " WHERE ?1 IS NULL OR t.conversation_id = ?1 ORDER BY t.conversation_id, t.position",
            (conversation_id,),
        )
        while rows := cursor.fetchmany(512):
            yield from rows


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
