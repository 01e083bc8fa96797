"""`SQLStore`: the queries both backends share, written once over a `Dialect` (what differs in SQL text).

A backend (sqlite.py, postgres.py) supplies only what truly differs: its connection, transactions and write
lock, the details of its migration runner (how it refuses a database that is not cuemem's, backups), KNN,
the full-text index and its search, `scrub`, its change counter (`data_version`, `version`), and a `Dialect`.
Everything else — turns, cues, vectors, edges, statistics, forgetting, the extraction cache, the migration
loop — is a method here, so a changed query or a third backend is written once.

Shared SQL is written in the form both accept (SQLite ≥ 3.39, PostgreSQL): named parameters `:name`,
`ON CONFLICT … DO UPDATE`, `RETURNING`, `IS NOT DISTINCT FROM`, `CAST`. The dialect fills in the rest:
how a list of ids is bound and tested, greatest/least, finding a substring, the stored form of a
vector.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Literal, overload

import numpy as np
import orjson

from ..errors import ModelMismatch, ReadOnlyStore, StoreError
from ..records import Cue, Turn
from . import migrations
from .base import (CUE_COLUMNS, STREAM_ROWS, KIND_CODE, KIND_NAME, SEMANTIC, TEMPORAL, TURN_COLUMNS,
                   TURN_WITH_PREVIOUS, CueCodes, NewTurn, now_iso, turn_from_row)
from .migrations import Migration


class Dialect(ABC):
    """What differs between the backends in the text of a shared query, and in how values are bound."""

    name: ClassVar[str]  # which body of each migration runs (migrations.Migration)
    greatest: ClassVar[str]  # the larger of two values: max(a, b) in SQLite, greatest(a, b) in PostgreSQL
    least: ClassVar[str]
    table_exists: ClassVar[str]  # a query with :name that returns a row when that table exists
    find: ClassVar[str]  # where text a holds b (0: nowhere): instr(a, b) in SQLite, strpos(a, b) in PostgreSQL

    def sql(self, query: str) -> str:
        """A shared query (`:name` parameters) as the driver takes it."""
        return query

    @abstractmethod
    def within(self, expr: str, param: str) -> str:
        """SQL true when `expr` is one of the list bound (by `array`) as `param`."""

    @abstractmethod
    def not_within(self, expr: str, param: str) -> str:
        """SQL true when `expr` is none of the list bound as `param`."""

    @abstractmethod
    def array(self, values: Iterable[int | str]) -> Any:
        """A list of ids (or texts) as one parameter, for `within` / `not_within`."""

    @abstractmethod
    def vector_param(self, param: str) -> str:
        """The SQL for a stored code vector (`codes`) bound as `param` into a vector search table."""

    @abstractmethod
    def codes(self, vectors: np.ndarray) -> list[Any]:
        """Rows of unit vectors as each row is stored: the int8 codes of store/vectors.py, or what they decode to."""

    @abstractmethod
    def from_codes(self, stored: Sequence[Any], dim: int | None) -> np.ndarray:
        """Stored code vectors back as unit float32 rows (`dim` for an empty result)."""

    @abstractmethod
    def int8_codes(self, stored: Sequence[Any], dim: int) -> np.ndarray:
        """Stored code vectors as their int8 codes (vectors.encode of what they decode to)."""


class SQLStore(ABC):
    """The queries both backends share; a backend subclass supplies the abstract methods and a Dialect."""

    dialect: ClassVar[Dialect]
    max_k: int | None = None
    read_only_hint: ClassVar[str]  # what to do about a memory that cannot be written

    def __init__(self, conn: Any, path: str):
        self.conn = conn
        self.path = path
        self.read_only: str | None = None

    def check_writable(self) -> None:
        """Raise the error a write would meet (ReadOnlyStore, DiskFull) now, before work it would waste;
        `transaction()` calls it first."""
        if self.read_only is not None:
            raise self._read_only_error()

    def _read_only_error(self) -> StoreError:
        return ReadOnlyStore(f"{self.path} is read-only: {self.read_only}; cuemem can read it but not change it",
                             self.read_only_hint, fields=("db",))

    # ------------------------------------------------------- what a backend gives
    @abstractmethod
    def _execute(self, query: str, params: Mapping[str, Any] | None = None) -> Any:
        """Run one statement (shared SQL, `:name` parameters); the driver's cursor."""

    @abstractmethod
    def _executemany(self, query: str, rows: Sequence[Mapping[str, Any]]) -> None: ...

    @abstractmethod
    def _stream(self, query: str, params: Mapping[str, Any], size: int) -> Iterator[list[tuple]]:
        """A large result `size` rows at a time, without holding all of it at once."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """One atomic unit holding the database's write lock; nested ones join it."""

    @abstractmethod
    def snapshot(self) -> AbstractContextManager[None]:
        """A read transaction: every query inside sees the same committed state, and takes no write lock."""

    @abstractmethod
    def data_version(self) -> int:
        """Changes when another connection (another process) commits; this connection's own commits leave it."""

    @abstractmethod
    def version(self) -> tuple[int, int]:
        """Changes whenever anything is committed, by this connection or another: what caches key on."""

    @abstractmethod
    def knn_cues(self, vector: np.ndarray, k: int,
                 conversation_ids: Sequence[int] | None = None) -> list[tuple[Cue, float]]:
        """Top-k cues of the memory (or of the given conversations) by cosine similarity, best first, equal
        scores lowest cue id first."""

    @abstractmethod
    def search_turns_fts(self, query: str, limit: int,
                         conversation_ids: Sequence[int] | None = None) -> list[tuple[int, float]]:
        """Lexical turn search over the memory (or the given conversations): (turn id, BM25 score, higher is
        better), best first. `query` is what reconstruct.fts_query writes: quoted words OR-ed."""

    @abstractmethod
    def browse_search_turns(self, words: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """Turns of any conversation holding every one of `words` (each stemmed as the full-text index
        stems it): (turn id, score, higher is better), best first. The turns found are the same on every
        backend; the score is the backend's own (`cuemem browse` only orders by it)."""

    @abstractmethod
    def _index_turns(self, rows: Sequence[tuple[int, str]]) -> None:
        """Add new turns (id, text) to the full-text index (where the backend does not do it itself)."""

    @abstractmethod
    def _unindex_turns(self, ids: Any) -> None:
        """Remove turns (an `array` of ids) from the full-text index, leaving none of their terms in it."""

    @abstractmethod
    def scrub(self) -> None:
        """After a forget: leave as little of the deleted data in the database's files as the backend can."""

    def _before_migration(self, applied: list[str], seen: list[str] | None) -> None:
        """Called in the write transaction of each migration before it runs (SQLite: mark the file as
        cuemem's, back it up before its first migration)."""
        return None

    def map_file(self) -> None:
        """Read the database through mmap from now on, where the backend can (SQLite); a server manages
        its own memory."""
        return None

    # ----------------------------------------------------------------- helpers
    def _rows(self, query: str, **params: Any) -> list[tuple]:
        return self._execute(query, params).fetchall()

    def _one(self, query: str, **params: Any) -> tuple | None:
        return self._execute(query, params).fetchone()

    def _value(self, query: str, **params: Any) -> Any:
        """The first column of a statement that returns exactly one row (a count, a RETURNING id)."""
        rows = self._execute(query, params).fetchall()  # fetched to the end: an INSERT … RETURNING completes
        if not rows:
            raise StoreError(f"{self.path}: a query that always returns a row returned none")
        return rows[0][0]

    def close(self) -> None:
        self.conn.close()

    # -------------------------------------------------------------- migrations
    def _has_table(self, name: str) -> bool:
        return self._one(self.dialect.table_exists, name=name) is not None

    def _recorded(self) -> list[str]:
        """The migrations this database has applied, by name ([] before the first)."""
        if not self._has_table("_migrations"):
            return []
        return [r[0] for r in self._rows("SELECT name FROM _migrations ORDER BY name")]

    def _dimension(self) -> int | None:
        dim = self.get_meta("embedding_dim") if self._has_table("meta") else None
        return int(dim) if dim else None

    def _pending(self, applied: list[str], dim: int | None) -> list[Migration]:
        """The migrations left to apply now (vector ones wait for a dimension); refuses a database written
        by a newer cuemem."""
        known = migrations.steps(migrations.MIGRATIONS)
        unknown = [name for name in applied if name not in {m.name for m in known}]
        if unknown:
            raise StoreError(
                f"{self.path} was written by a newer cuemem (schema {len(applied)}, this one knows "
                f"{len(known)}: unknown migration {unknown[0]}); cuemem left it untouched",
                "upgrade cuemem: pip install -U cuemem",
            )
        return [m for m in known if m.name not in applied and (dim is not None or not m.needs_dim)]

    def _migrate(self, seen: list[str] | None) -> None:
        """Apply the pending migrations (store/migrations.py) in order, each in its own write transaction with
        its record in `_migrations`.

        Several processes may open a new or an old database at once: each transaction reads the schema
        state again once it holds the write lock, so each migration runs exactly once and the others
        find nothing to do. Inside an open transaction (bind_embedder) they all join it. `seen`: the
        migrations recorded when this process opened the database (None: no backup, `_before_migration`).
        """
        first = True
        while True:
            with self.transaction():
                applied, dim = self._recorded(), self._dimension()
                pending = self._pending(applied, dim)
                if not pending:
                    return
                self._before_migration(applied, seen if first else None)
                first = False
                self._execute("CREATE TABLE IF NOT EXISTS _migrations"
                              " (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
                pending[0].apply(self.conn, self.dialect.name, dim)
                self._execute("INSERT INTO _migrations(name, applied_at) VALUES (:name, :at)",
                              {"name": pending[0].name, "at": now_iso()})

    def schema_version(self) -> int:
        return self._value("SELECT count(*) FROM _migrations")

    # ---------------------------------------------------------------- metadata
    @overload
    def get_meta(self, key: str, default: str) -> str: ...
    @overload
    def get_meta(self, key: str, default: str | None = None) -> str | None: ...

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self._one("SELECT value FROM meta WHERE key = :key", key=key)
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self._execute("INSERT INTO meta(key, value) VALUES (:key, :value)"
                      " ON CONFLICT (key) DO UPDATE SET value = excluded.value", {"key": key, "value": value})

    def meta(self) -> dict[str, str]:
        return dict(self._rows("SELECT key, value FROM meta ORDER BY key"))

    def bind_embedder(self, model_id: str, dim: int, backend: str) -> None:
        """Record the embedding model on first use, creating the vector tables for its dimension (the
        vector migrations, store/migrations.py); refuse a different model afterwards."""
        if self.get_meta("embedding_model") is None:
            with self.transaction():
                if self.get_meta("embedding_model") is not None:  # another process bound it first
                    self.check_embedder(model_id, dim)
                    return
                self.set_meta("embedding_model", model_id)
                self.set_meta("embedding_dim", str(dim))
                self.set_meta("embedding_backend", backend)
                self._migrate(seen=None)  # the vector migrations were waiting for `dim`
            return
        self.check_embedder(model_id, dim)

    def check_embedder(self, model_id: str, dim: int) -> None:
        stored = self.get_meta("embedding_model")
        stored_dim = int(self.get_meta("embedding_dim") or 0)
        if stored is not None and (stored != model_id or stored_dim != dim):
            raise ModelMismatch(
                f"{self.path} was built with the embedding model {stored} ({stored_dim}-d); "
                f"this run uses {model_id} ({dim}-d), whose vectors are not comparable",
                f"use an embedder for {stored}, or add to a new database", fields=("embedder", "db"),
            )

    def has_vectors(self) -> bool:
        return self.get_meta("embedding_model") is not None

    # ----------------------------------------------------------- conversations
    @overload
    def conversation_id(self, name: str, create: Literal[True]) -> int: ...
    @overload
    def conversation_id(self, name: str, create: bool = False) -> int | None: ...

    def conversation_id(self, name: str, create: bool = False) -> int | None:
        row = self._one("SELECT id FROM conversations WHERE name = :name", name=name)
        if row:
            return row[0]
        if not create:
            return None
        return self._value("INSERT INTO conversations(name, created_at) VALUES (:name, :at) RETURNING id",
                           name=name, at=now_iso())

    def conversation_names(self) -> list[str]:
        return [r[0] for r in self._rows("SELECT name FROM conversations ORDER BY id")]

    def conversations(self) -> list[tuple[int, str, str | None]]:
        """(id, name, title) of every conversation, oldest first."""
        return self._rows("SELECT id, name, title FROM conversations ORDER BY id")

    def set_title(self, conversation_id: int, title: str) -> None:
        """Give a conversation its title, unless it has one: the first message that carries one names it."""
        self._execute("UPDATE conversations SET title = :title WHERE id = :cid AND title IS NULL",
                      {"title": title, "cid": conversation_id})

    # ------------------------------------------------------------------- turns
    def stored_texts(self, conversation_id: int, source_ids: Sequence[str]) -> dict[str, tuple[int, int, str]]:
        """source id → (turn id, position, text) of those of `source_ids` the conversation already holds."""
        if not source_ids:
            return {}
        rows = self._rows("SELECT source_id, id, position, text FROM turns WHERE conversation_id = :cid"
                          f" AND {self.dialect.within('source_id', 'ids')}",
                          cid=conversation_id, ids=self.dialect.array(source_ids))
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def next_position(self, conversation_id: int) -> int:
        return self._value("SELECT coalesce(max(position), -1) + 1 FROM turns WHERE conversation_id = :cid",
                           cid=conversation_id)

    def insert_turns(self, turns: Sequence[NewTurn]) -> list[int]:
        stored = now_iso()
        ids = [self._value(
            "INSERT INTO turns(conversation_id, position, source_id, session, time, speaker, role, text,"
            " content_hash, extra, status, stored_at) VALUES (:cid, :position, :source_id, :session, :time,"
            " :speaker, :role, :text, :hash, :extra, :status, :stored) RETURNING id",
            cid=t.conversation_id, position=t.position, source_id=t.source_id, session=t.session, time=t.time,
            speaker=t.speaker, role=t.role, text=t.text, hash=t.content_hash,
            extra=orjson.dumps(t.extra).decode() if t.extra else None, status=t.status, stored=stored)
            for t in turns]
        self._index_turns([(tid, t.text) for tid, t in zip(ids, turns, strict=True)])
        return ids

    def turns(self, conversation_id: int) -> list[Turn]:
        return [turn_from_row(r) for r in self._rows(
            f"SELECT {TURN_COLUMNS} FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            " WHERE t.conversation_id = :cid ORDER BY t.position", cid=conversation_id)]

    def turns_by_id(self, turn_ids: Iterable[int]) -> dict[int, Turn]:
        rows = self._rows(f"SELECT {TURN_COLUMNS} FROM turns t JOIN conversations c ON c.id = t.conversation_id"
                          f" WHERE {self.dialect.within('t.id', 'ids')}", ids=self.dialect.array(turn_ids))
        return {r[0]: turn_from_row(r) for r in rows}

    def _scope(self, column: str, conversation_ids: Sequence[int] | None) -> tuple[str, dict[str, Any]]:
        """A WHERE condition limiting `column` to the given conversations (None: the whole memory), and
        its parameter."""
        if conversation_ids is None:
            return "1 = 1", {}
        return self.dialect.within(column, "scope"), {"scope": self.dialect.array(conversation_ids)}

    def turns_not_held_at(self, when: str, conversation_ids: Sequence[int] | None = None) -> tuple[set[int], int]:
        """Turns memory did not hold at `when` (ISO): said after it, or, undated, stored after it; and
        how many cues they have (what a KNN must fetch beyond top-m to still return top-m held cues)."""
        scope, params = self._scope("t.conversation_id", conversation_ids)
        rows = self._rows(
            "SELECT t.id, (SELECT count(*) FROM cues c WHERE c.turn_id = t.id) FROM turns t"
            f" WHERE {scope} AND CASE WHEN t.time IS NOT NULL THEN t.time > :when"
            " ELSE coalesce(t.stored_at, '') > :when END", when=when, **params)
        return {r[0] for r in rows}, sum(r[1] for r in rows)

    def speakers(self, conversation_ids: Sequence[int] | None = None) -> list[str]:
        """The names turns were said by, in the memory or the given conversations."""
        scope, params = self._scope("conversation_id", conversation_ids)
        return [r[0] for r in self._rows(f"SELECT DISTINCT speaker FROM turns WHERE {scope}"
                                         " AND speaker IS NOT NULL ORDER BY speaker", **params)]

    def conversations_with_speakers(self, names: Iterable[str],
                                    conversation_ids: Sequence[int] | None = None) -> dict[int, str]:
        """The conversations (id → name) in which any of `names` said a turn, within the given ones."""
        names = list(names)
        if not names:
            return {}
        scope, params = self._scope("t.conversation_id", conversation_ids)
        return dict(self._rows(
            "SELECT DISTINCT c.id, c.name FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            f" WHERE {scope} AND {self.dialect.within('t.speaker', 'names')} ORDER BY c.id",
            names=self.dialect.array(names), **params))

    def speaker_sets(self, conversation_ids: Sequence[int] | None = None) -> dict[int, frozenset[str]]:
        """Each conversation's speakers (a turn without a speaker name counts its role, or "")."""
        scope, params = self._scope("conversation_id", conversation_ids)
        out: dict[int, set[str]] = {}
        for cid, who in self._rows("SELECT DISTINCT conversation_id, coalesce(speaker, role, '') FROM turns"
                                   f" WHERE {scope}", **params):
            out.setdefault(cid, set()).add(who)
        return {cid: frozenset(people) for cid, people in out.items()}

    def turns_with_source_id(self, source_id: str, conversation_id: int | None = None) -> list[Turn]:
        """The turns with this source id: one at most in a conversation, one per conversation in the memory
        (source ids are the input's, unique only within their conversation)."""
        scope, params = self._scope("t.conversation_id", None if conversation_id is None else [conversation_id])
        rows = self._rows(f"SELECT {TURN_COLUMNS} FROM turns t JOIN conversations c ON c.id = t.conversation_id"
                          f" WHERE t.source_id = :source_id AND {scope} ORDER BY t.conversation_id",
                          source_id=source_id, **params)
        return [turn_from_row(row) for row in rows]

    def turns_at_positions(self, conversation_id: int, low: int, high: int) -> list[tuple[int, int]]:
        """(turn id, position) for positions in [low, high], for temporal edges."""
        return self._rows("SELECT id, position FROM turns WHERE conversation_id = :cid"
                          " AND position BETWEEN :low AND :high ORDER BY position",
                          cid=conversation_id, low=low, high=high)

    def set_status(self, turn_ids: Sequence[int], status: str) -> None:
        self._execute(f"UPDATE turns SET status = :status WHERE {self.dialect.within('id', 'ids')}",
                      {"status": status, "ids": self.dialect.array(turn_ids)})

    def pending_turns(self, conversation_id: int | None = None) -> list[tuple[Turn, str]]:
        """Turns whose LLM extraction failed, with their content hash."""
        rows = self._rows(
            f"SELECT {TURN_COLUMNS}, t.content_hash FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            " WHERE t.status = 'pending'" + ("" if conversation_id is None else " AND t.conversation_id = :cid")
            + " ORDER BY t.conversation_id, t.position", cid=conversation_id)
        return [(turn_from_row(r), r[11]) for r in rows]

    def mark_retrieved(self, conversation_id: int, source_ids: Sequence[str], when: str) -> None:
        """Record that `ask` used these turns (the LRU forgetting policy reads it)."""
        self._execute("UPDATE turns SET last_retrieved_at = :when WHERE conversation_id = :cid"
                      f" AND {self.dialect.within('source_id', 'ids')}",
                      {"when": when, "cid": conversation_id, "ids": self.dialect.array(source_ids)})

    def previous_turns(self, turn_ids: Iterable[int]) -> dict[int, int]:
        """Each turn's predecessor in its conversation, where both were said in the same session."""
        return dict(self._rows(
            "SELECT t.id, p.id FROM turns t JOIN turns p ON p.id = ("
            "  SELECT q.id FROM turns q WHERE q.conversation_id = t.conversation_id AND q.position < t.position"
            "  ORDER BY q.position DESC LIMIT 1)"
            f" WHERE {self.dialect.within('t.id', 'ids')} AND p.session IS NOT DISTINCT FROM t.session",
            ids=self.dialect.array(turn_ids)))

    def last_turn(self, conversation_id: int) -> tuple[str | None, str] | None:
        """(session, text) of the conversation's latest turn: what a turn appended to it is read after."""
        return self._one("SELECT session, text FROM turns WHERE conversation_id = :cid ORDER BY position DESC LIMIT 1",
                         cid=conversation_id)

    def turns_after(self, turn_ids: Iterable[int]) -> list[int]:
        """The turns said right after these in the same session, not among them: the turns whose
        vectors hold these turns' text (TURN_WITH_PREVIOUS)."""
        return [r[0] for r in self._rows(
            "SELECT DISTINCT n.id FROM turns t JOIN turns n ON n.id = ("
            "  SELECT q.id FROM turns q WHERE q.conversation_id = t.conversation_id AND q.position > t.position"
            "  ORDER BY q.position LIMIT 1)"
            f" WHERE {self.dialect.within('t.id', 'ids')} AND n.session IS NOT DISTINCT FROM t.session"
            f" AND {self.dialect.not_within('n.id', 'ids')} ORDER BY n.id", ids=self.dialect.array(turn_ids))]

    def texts_with_previous(self, turn_ids: Iterable[int]) -> list[tuple[int, str, str | None]]:
        """(turn id, text, text of the turn before it in its session or None) for each existing turn."""
        ids = list(turn_ids)
        before = self.previous_turns(ids)
        turns = self.turns_by_id([*ids, *before.values()])
        return [(tid, turns[tid].text, turns[before[tid]].text if tid in before else None)
                for tid in ids if tid in turns]

    def turn_count(self) -> int:
        return self._value("SELECT count(*) FROM turns")

    def all_turn_texts(self) -> list[tuple[int, str]]:
        return self._rows("SELECT id, text FROM turns ORDER BY id")

    # -------------------------------------------------------------------- cues
    def insert_cues(self, conversation_id: int, rows: Sequence[tuple[int, str, str, str, str]]) -> list[int]:
        """rows: (turn_id, subject, relation, object, kind) → new cue ids, in order."""
        return [self._value("INSERT INTO cues(turn_id, conversation_id, subject, relation, object, kind)"
                            " VALUES (:tid, :cid, :subject, :relation, :object, :kind) RETURNING id",
                            tid=turn_id, cid=conversation_id, subject=subject, relation=relation, object=obj, kind=kind)
                for turn_id, subject, relation, obj, kind in rows]

    def cues_of_turns(self, turn_ids: Iterable[int]) -> dict[int, list[Cue]]:
        out: dict[int, list[Cue]] = {}
        for r in self._rows(f"SELECT {CUE_COLUMNS} FROM cues WHERE {self.dialect.within('turn_id', 'ids')}"
                            " ORDER BY id", ids=self.dialect.array(turn_ids)):
            out.setdefault(r[1], []).append(Cue(*r))
        return out

    def cues_by_id(self, cue_ids: Iterable[int]) -> dict[int, Cue]:
        rows = self._rows(f"SELECT {CUE_COLUMNS} FROM cues WHERE {self.dialect.within('id', 'ids')}",
                          ids=self.dialect.array(cue_ids))
        return {r[0]: Cue(*r) for r in rows}

    def conversation_cues(self, conversation_id: int) -> list[Cue]:
        return [Cue(*r) for r in self._rows(
            f"SELECT {CUE_COLUMNS} FROM cues WHERE conversation_id = :cid ORDER BY id", cid=conversation_id)]

    def cue_count(self, conversation_id: int | None = None) -> int:
        """Cues of one conversation, or of the memory."""
        if conversation_id is None:
            return self._value("SELECT count(*) FROM cues")
        return self._value("SELECT count(*) FROM cues WHERE conversation_id = :cid", cid=conversation_id)

    # ----------------------------------------------------------------- vectors
    def insert_vectors(self, conversation_id: int, cue_ids: Sequence[int], vectors: np.ndarray) -> None:
        """Cue vectors, stored as codes (store/vectors.py)."""
        self._insert_codes("INSERT INTO cue_vectors(cue_id, conversation_id, embedding)"
                           f" VALUES (:id, :part, {self.dialect.vector_param('e')})",
                           [(int(cid), int(conversation_id)) for cid in cue_ids], vectors)

    def _insert_codes(self, query: str, keys: Sequence[tuple[int, int]], vectors: np.ndarray) -> None:
        """Rows of (id, partition, code), a block of vectors encoded at a time (a long turn has ~100,000)."""
        for lo in range(0, len(keys), 10_000):
            codes = self.dialect.codes(vectors[lo:lo + 10_000])
            self._executemany(query, [{"id": key, "part": part, "e": code}
                                      for (key, part), code in zip(keys[lo:lo + 10_000], codes, strict=True)])

    def statement_vectors(self, turn_ids: Iterable[int]) -> dict[int, list[tuple[str, np.ndarray]]]:
        """Each turn's sentences that are statement cues, with their vectors (for excerpts of long turns)."""
        rows = self._rows("SELECT c.turn_id, c.object, v.embedding FROM cues c JOIN cue_vectors v ON v.cue_id = c.id"
                          f" WHERE c.kind = 'statement' AND {self.dialect.within('c.turn_id', 'ids')} ORDER BY c.id",
                          ids=self.dialect.array(turn_ids))
        out: dict[int, list[tuple[str, np.ndarray]]] = {}
        for (tid, sentence, _), vector in zip(rows, self.dialect.from_codes([r[2] for r in rows], None), strict=True):
            out.setdefault(tid, []).append((sentence, vector))
        return out

    def insert_turn_vectors(self, rows: Sequence[tuple[int, np.ndarray]]) -> None:
        if not rows:
            return
        codes = self.dialect.codes(np.vstack([vector for _, vector in rows]))
        self._executemany("INSERT INTO turn_vectors(turn_id, embedding) VALUES (:tid, :e)"
                          " ON CONFLICT (turn_id) DO UPDATE SET embedding = excluded.embedding",
                          [{"tid": int(tid), "e": code} for (tid, _), code in zip(rows, codes, strict=True)])

    def turn_vectors(self, turn_ids: Iterable[int]) -> dict[int, np.ndarray]:
        rows = self._rows(f"SELECT turn_id, embedding FROM turn_vectors WHERE {self.dialect.within('turn_id', 'ids')}",
                          ids=self.dialect.array(turn_ids))
        return dict(zip((r[0] for r in rows), self.dialect.from_codes([r[1] for r in rows], None), strict=True))

    def turn_vector_text(self) -> str:
        """What this database's turn vectors hold: TURN_WITH_PREVIOUS, or TURN_ALONE if written before m005."""
        return self.get_meta("turn_vectors") or TURN_WITH_PREVIOUS

    def cue_codes(self, dim: int) -> CueCodes:
        """Every cue vector of the memory as its int8 code, with its cue, turn and conversation ids, in
        cue id order. Read a block at a time into one preallocated matrix (`_stored_codes`): 500,000 cues
        are 190 MB of codes, never float rows or row objects."""
        columns = np.array(self._rows("SELECT id, turn_id, conversation_id FROM cues ORDER BY id"),
                           dtype=np.int64).reshape(-1, 3)
        codes = np.zeros((len(columns), dim), dtype=np.int8)
        have = np.zeros(len(columns), dtype=bool)
        for cue_ids, block in self._stored_codes(dim):
            rows = np.searchsorted(columns[:, 0], cue_ids)
            rows = np.minimum(rows, max(len(columns) - 1, 0))
            known = (columns[rows, 0] == cue_ids) if len(columns) else np.zeros(len(cue_ids), dtype=bool)
            codes[rows[known]] = block[known]
            have[rows[known]] = True
        if not have.all():  # a cue without a vector: ingest never leaves one, but only what is held is returned
            columns, codes = columns[have], codes[have]
        return CueCodes(columns[:, 0].copy(), columns[:, 1].copy(), columns[:, 2].copy(), codes)

    def _stored_codes(self, dim: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(cue ids, int8 codes) of the stored cue vectors, a block at a time, in no particular order."""
        for rows in self._stream("SELECT cue_id, embedding FROM cue_vectors", {}, STREAM_ROWS):
            yield (np.array([r[0] for r in rows], dtype=np.int64),
                   self.dialect.int8_codes([r[1] for r in rows], dim))

    def turn_codes(self, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """(turn ids, int8 codes) of every turn vector of the memory, in turn id order."""
        ids: list[int] = []
        blocks = []
        for rows in self._stream("SELECT turn_id, embedding FROM turn_vectors ORDER BY turn_id", {}, STREAM_ROWS):
            ids.extend(r[0] for r in rows)
            blocks.append(self.dialect.int8_codes([r[1] for r in rows], dim))
        codes = np.vstack(blocks) if blocks else np.zeros((0, dim), dtype=np.int8)
        return np.array(ids, dtype=np.int64), codes

    # ------------------------------------------------------------------- edges
    def insert_edges(self, rows: Iterable[tuple[int, int, str, float, int]]) -> int:
        """rows: (src, dst, kind, weight, rank). A repeated edge keeps its best weight and rank."""
        params = [{"src": int(src), "dst": int(dst), "kind": KIND_CODE[kind], "weight": float(weight),
                   "rank": int(rank)} for src, dst, kind, weight, rank in rows]
        self._executemany(
            "INSERT INTO edges(src, dst, kind, weight, rank) VALUES (:src, :dst, :kind, :weight, :rank)"
            " ON CONFLICT (src, kind, dst) DO UPDATE"
            f" SET weight = {self.dialect.greatest}(edges.weight, excluded.weight),"
            f" rank = {self.dialect.least}(edges.rank, excluded.rank)", params)
        return len(params)

    def neighbours(self, turn_ids: Sequence[int], window: int, sem_k: int) -> list[tuple[int, int, str, float]]:
        """One hop from `turn_ids`: (anchor, neighbour, kind, weight), in no particular order.

        Temporal edges of rank (distance in positions) ≤ `window`; semantic edges of rank ≤ `sem_k`, followed in both
        directions (see ingest/graph.py for why).
        """
        return self._rows(
            f"SELECT e.src, e.dst, {KIND_NAME}, e.weight FROM edges e WHERE {self.dialect.within('e.src', 'ids')}"
            f"  AND e.rank <= CASE e.kind WHEN {TEMPORAL} THEN :w ELSE :k END"
            " UNION ALL"
            f" SELECT e.dst, e.src, {KIND_NAME}, e.weight FROM edges e WHERE {self.dialect.within('e.dst', 'ids')}"
            f"  AND e.kind = {SEMANTIC} AND e.rank <= :k",
            ids=self.dialect.array(turn_ids), w=window, k=sem_k)

    def edge_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every edge of the memory as columns: src, dst (turn ids), kind code (SEMANTIC, TEMPORAL), weight,
        rank. Read a block at a time: a large memory has millions of edges, too many for row tuples."""
        blocks = [np.array(rows, dtype=np.float64).reshape(-1, 5)
                  for rows in self._stream("SELECT src, dst, kind, weight, rank FROM edges", {}, STREAM_ROWS)]
        table = np.vstack(blocks) if blocks else np.zeros((0, 5))
        return (table[:, 0].astype(np.int64), table[:, 1].astype(np.int64), table[:, 2].astype(np.int8),
                table[:, 3].astype(np.float32), table[:, 4].astype(np.int32))

    def edges_of(self, turn_id: int) -> list[tuple[int, int, str, float, int]]:
        return self._rows(f"SELECT e.src, e.dst, {KIND_NAME}, e.weight, e.rank FROM edges e"
                          " WHERE e.src = :t OR e.dst = :t ORDER BY e.kind, e.weight DESC, e.src, e.dst", t=turn_id)

    def all_edges(self, conversation_id: int | None = None) -> list[tuple[int, int, str, float, int]]:
        """The edges leaving one conversation's turns (they may reach into another's: semantic edges cross
        conversations, ingest/graph.py), or every edge of the memory."""
        if conversation_id is None:
            return self._rows(f"SELECT e.src, e.dst, {KIND_NAME}, e.weight, e.rank FROM edges e"
                              " ORDER BY e.src, e.kind, e.dst")
        return self._rows(
            f"SELECT e.src, e.dst, {KIND_NAME}, e.weight, e.rank FROM edges e JOIN turns t ON t.id = e.src"
            " WHERE t.conversation_id = :cid ORDER BY e.src, e.kind, e.dst", cid=conversation_id)

    # ------------------------------------------------------------------- stats
    def conversation_stats(self) -> list[dict[str, Any]]:
        rows = self._rows(
            f"""
            SELECT c.name, c.title,
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
            """)
        keys = ("conversation", "title", "turns", "cues", "temporal_edges", "semantic_edges", "turns_without_cues",
                "pending_turns", "first_time", "last_time")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def degree_stats(self, conversation_id: int | None) -> dict[str, float]:
        """Undirected degree over both edge kinds: min, mean, max per turn (zeros for None: a conversation
        forgotten since it was listed)."""
        low, mean, high = self._rows(
            """
            WITH deg AS (
              SELECT t.id, (SELECT count(*) FROM edges e WHERE e.src = t.id OR e.dst = t.id) AS d
              FROM turns t WHERE t.conversation_id = :cid)
            SELECT coalesce(min(d), 0), coalesce(avg(d), 0.0), coalesce(max(d), 0) FROM deg
            """, cid=conversation_id)[0]  # an aggregate: one row always
        return {"min": low, "mean": round(float(mean), 2), "max": high}

    # ------------------------------------------------------------------ browse
    # Only `cuemem browse` asks this (browse/pages.py); its memory-wide search, browse_search_turns, is each
    # backend's own full text.
    def browse_conversations(self, search: str | None, name: str | None, offset: int,
                             limit: int) -> tuple[int, list[dict[str, Any]]]:
        """(how many conversations match, one page of them, most recently said first): each with its name,
        `title` (the one its turns kept from an export, else None), first and last time, turn and cue
        counts. `search` matches name or title (case-insensitive substring); `name` picks one conversation.
        Counts come from the indexes, never a scan of another conversation's rows."""
        d = self.dialect
        found = f"{d.find}(lower(name), lower(:q)) > 0 OR {d.find}(lower(coalesce(title, '')), lower(:q)) > 0"
        matched = (
            "WITH listed AS (SELECT c.id, c.name, c.created_at, c.title,"
            "  (SELECT min(t.time) FROM turns t WHERE t.conversation_id = c.id) AS first_time,"
            "  (SELECT max(t.time) FROM turns t WHERE t.conversation_id = c.id) AS last_time"
            " FROM conversations c" + ("" if name is None else " WHERE c.name = :name") + "),"
            " matched AS (SELECT * FROM listed" + ("" if search is None else f" WHERE {found}") + ")")
        params = {"q": search, "name": name}
        total = self._value(f"{matched} SELECT count(*) FROM matched", **params)
        rows = self._rows(
            f"{matched} SELECT name, title, first_time, last_time,"
            " (SELECT count(*) FROM turns t WHERE t.conversation_id = matched.id),"
            " (SELECT count(*) FROM cues q WHERE q.conversation_id = matched.id)"
            " FROM matched ORDER BY coalesce(last_time, created_at) DESC, id DESC LIMIT :limit OFFSET :offset",
            **params, limit=limit, offset=offset)
        keys = ("conversation", "title", "first_time", "last_time", "turns", "cues")
        return total, [dict(zip(keys, r, strict=True)) for r in rows]

    # ------------------------------------------------------- extraction cache
    def cached_triples(self, model: str, prompt_version: str, turn_hash: str) -> list[list[str]] | None:
        row = self._one("SELECT triples FROM extraction_cache WHERE model = :model AND prompt_version = :version"
                        " AND turn_hash = :hash", model=model, version=prompt_version, hash=turn_hash)
        return orjson.loads(row[0]) if row else None

    def cache_triples(self, model: str, prompt_version: str, turn_hash: str, triples: list[list[str]]) -> None:
        self._execute("INSERT INTO extraction_cache(model, prompt_version, turn_hash, triples)"
                      " VALUES (:model, :version, :hash, :triples)"
                      " ON CONFLICT (model, prompt_version, turn_hash) DO UPDATE SET triples = excluded.triples",
                      {"model": model, "version": prompt_version, "hash": turn_hash,
                       "triples": orjson.dumps(triples).decode()})

    # ----------------------------------------------------- forget, export
    def forget_selection(self, conversation_id: int | None, session: str | None, source_ids: Sequence[str] | None,
                         before: str | None, decay_cutoff: str | None, lru: int | None) -> list[tuple[int, str]]:
        """(turn id, conversation name) of the turns a forget selects; see manage/forget.py for the policies.

        Selectors (those not None) combine with AND; LRU ranks within what they select, per conversation:
        the `lru` most recently retrieved turns are kept (never-retrieved ones rank last, newer positions first).
        """
        where = ["1 = 1"]
        if conversation_id is not None:
            where.append("t.conversation_id = :cid")
        if session is not None:
            where.append("t.session = :session")
        if source_ids is not None:
            where.append(self.dialect.within("t.source_id", "ids"))
        if before is not None:
            where.append("t.time < :before")
        if decay_cutoff is not None:
            where.append("coalesce(t.time, c.created_at) < :decay"
                         " AND (t.last_retrieved_at IS NULL OR t.last_retrieved_at < :decay)")
        return self._rows(
            f"""
            WITH candidates AS (
              SELECT t.id, t.conversation_id, t.position, t.last_retrieved_at FROM turns t
              JOIN conversations c ON c.id = t.conversation_id
              WHERE {" AND ".join(where)}),
            ranked AS (
              SELECT id, conversation_id, row_number() OVER (
                PARTITION BY conversation_id
                ORDER BY last_retrieved_at IS NULL, last_retrieved_at DESC, position DESC) AS recency
              FROM candidates)
            SELECT r.id, c.name FROM ranked r JOIN conversations c ON c.id = r.conversation_id
            {"" if lru is None else "WHERE r.recency > :lru"} ORDER BY r.conversation_id, r.id
            """,
            cid=conversation_id, session=session, before=before, decay=decay_cutoff, lru=lru,
            ids=self.dialect.array(source_ids) if source_ids is not None else None)

    def forget_counts(self, turn_ids: Sequence[int]) -> dict[str, int]:
        """What deleting these turns would take with it (a dry run)."""
        ids, within = self.dialect.array(turn_ids), self.dialect.within

        def count(query: str) -> int:
            return self._value(query, ids=ids)

        return {
            "cues": count(f"SELECT count(*) FROM cues WHERE {within('turn_id', 'ids')}"),
            "vectors": count("SELECT count(*) FROM cue_vectors WHERE cue_id IN"
                             f" (SELECT id FROM cues WHERE {within('turn_id', 'ids')})") if self.has_vectors() else 0,
            "edges": count(f"SELECT count(*) FROM edges WHERE {within('src', 'ids')} OR {within('dst', 'ids')}"),
            "extraction_cache": count(
                "SELECT count(*) FROM extraction_cache WHERE turn_hash IN"
                f" (SELECT content_hash FROM turns WHERE {within('id', 'ids')}) AND turn_hash NOT IN"
                f" (SELECT content_hash FROM turns WHERE {self.dialect.not_within('id', 'ids')})"),
        }

    def delete_turns(self, turn_ids: Sequence[int], keep_conversations: bool = False) -> dict[str, Any]:
        """Remove turns and all that is theirs; call inside `transaction()`.

        Order respects the foreign keys: cue vectors, cues, edges (either end),
        turn vectors, full-text entries (`_unindex_turns`), turns, extraction-cache entries no remaining turn
        shares, then conversations left empty (unless `keep_conversations`: a replaced turn's successor is
        stored next).
        """
        counts: dict[str, Any] = {"turns": 0, "cues": 0, "vectors": 0, "edges": 0, "extraction_cache": 0,
                                  "conversations": {}, "conversations_removed": []}
        if not turn_ids:
            return counts
        d = self.dialect
        ids = d.array(turn_ids)
        counts["conversations"] = dict(self._rows(
            "SELECT c.name, count(*) FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            f" WHERE {d.within('t.id', 'ids')} GROUP BY c.id ORDER BY c.id", ids=ids))
        conversation_ids = d.array(r[0] for r in self._rows(
            f"SELECT DISTINCT conversation_id FROM turns WHERE {d.within('id', 'ids')}", ids=ids))
        hashes = d.array(r[0] for r in self._rows(
            f"SELECT DISTINCT content_hash FROM turns WHERE {d.within('id', 'ids')}", ids=ids))
        cue_ids = d.array(r[0] for r in self._rows(f"SELECT id FROM cues WHERE {d.within('turn_id', 'ids')}", ids=ids))
        if self.has_vectors():
            counts["vectors"] = self._value(f"SELECT count(*) FROM cue_vectors WHERE {d.within('cue_id', 'ids')}",
                                            ids=cue_ids)
            self._execute(f"DELETE FROM cue_vectors WHERE {d.within('cue_id', 'ids')}", {"ids": cue_ids})
        counts["cues"] = self._execute(f"DELETE FROM cues WHERE {d.within('id', 'ids')}", {"ids": cue_ids}).rowcount
        counts["edges"] = self._execute(f"DELETE FROM edges WHERE {d.within('src', 'ids')} OR {d.within('dst', 'ids')}",
                                        {"ids": ids}).rowcount
        self._execute(f"DELETE FROM turn_vectors WHERE {d.within('turn_id', 'ids')}", {"ids": ids})
        self._unindex_turns(ids)
        counts["turns"] = self._execute(f"DELETE FROM turns WHERE {d.within('id', 'ids')}", {"ids": ids}).rowcount
        counts["extraction_cache"] = self._execute(
            f"DELETE FROM extraction_cache WHERE {d.within('turn_hash', 'ids')}"
            " AND turn_hash NOT IN (SELECT content_hash FROM turns)", {"ids": hashes}).rowcount
        if not keep_conversations:
            counts["conversations_removed"] = sorted(r[0] for r in self._rows(
                f"DELETE FROM conversations WHERE {d.within('id', 'ids')}"
                " AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.conversation_id = conversations.id) RETURNING name",
                ids=conversation_ids))
        return counts

    def export_turns(self, conversation_id: int | None) -> Iterator[tuple]:
        """(id, conversation, source_id, session, time, speaker, role, text, extra, status) of every turn,
        conversation by conversation, in position order; streamed."""
        for rows in self._stream(
                "SELECT t.id, c.name, t.source_id, t.session, t.time, t.speaker, t.role, t.text, t.extra, t.status"
                " FROM turns t JOIN conversations c ON c.id = t.conversation_id"
                + ("" if conversation_id is None else " WHERE t.conversation_id = :cid")
                + " ORDER BY t.conversation_id, t.position", {"cid": conversation_id}, 512):
            yield from rows
