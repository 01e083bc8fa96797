"""`SQLStore`: the queries both backends share, written once over a `Dialect` (what differs in SQL text), one
part per protocol of store/base.py, each of them a class of this folder:

- `core.py`: `Dialect`, and `SQLRows`, the base every part stands on (a connection, the statement helpers).
- `turns.py`: `TurnRows`, conversations and turns (the engine's `Store`).
- `cues.py`: `CueRows`, cues, cue and turn vectors, the memory as arrays (`Store`).
- `graph.py`: `GraphRows`, edges (`Store`).
- `changes.py`: `ChangeRows`, the facts that changed (`ChangeRecords`).
- `kinds.py`: `KindRows`, the kinds of things each turn names (`KindIndex`).
- `extraction.py`: `ExtractionRows`, the LLM extractor's cache and pending turns (`ExtractionRecords`).
- `maintenance.py`: `MaintenanceRows`, forget, export, statistics, turn-by-turn reads (`Maintenance`).
- `names.py`: `NameRows`, who is who: the signs of a name each turn holds, each conversation's learned names
  (`NameIndex`).
- `browse.py`: `BrowseRows` (`BrowseQueries`); `evaluation.py`: `EvalRows` (`EvalQueries`).
- `faults.py`: the cursor class both backends' connections make, which reports a driver's errors about
  storage as cuemem's.

`SQLStore` joins them with what is the store's as a whole: opening and closing, the migration loop,
metadata and the embedding model. A backend (store/sqlite.py, store/postgres.py) supplies only what truly
differs, each an abstract method of the part that needs it: its connection, transactions and write lock,
its change counter (`version`), the details of its migration runner (how it refuses a database that is not
cuemem's, backups), KNN (`CueRows.knn_cues`), the full-text index and its searches (`TurnRows`,
`BrowseRows`), `scrub` (`MaintenanceRows`), and a `Dialect`. So a changed query or a third SQL backend is
written once.
"""

from __future__ import annotations

from abc import abstractmethod
from contextlib import AbstractContextManager
from typing import Any, ClassVar, overload

from ...errors import ReadOnlyStore, StoreError
from .. import migrations
from ..base import Version, check_embedder, now_iso
from ..migrations import Migration
from .browse import BrowseRows
from .changes import ChangeRows
from .cues import CueRows
from .evaluation import EvalRows
from .extraction import ExtractionRows
from .graph import GraphRows
from .kinds import KindRows
from .maintenance import MaintenanceRows
from .names import NameRows
from .turns import TurnRows


class SQLStore(TurnRows, CueRows, GraphRows, KindRows, ChangeRows, ExtractionRows, MaintenanceRows, NameRows,
               BrowseRows, EvalRows):
    """Every protocol of store/base.py over one connection; a backend subclass supplies the abstract methods
    and a Dialect."""

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

    def close(self) -> None:
        self.conn.close()

    # ------------------------------------------------------- what a backend gives
    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """One atomic unit holding the database's write lock; nested ones join it."""

    @abstractmethod
    def snapshot(self) -> AbstractContextManager[None]:
        """A read transaction: every query inside sees the same committed state, and takes no write lock."""

    @abstractmethod
    def version(self) -> Version:
        """What has been committed: by other connections (another process), and by this one."""

    def _before_migration(self, applied: list[str], seen: list[str] | None) -> None:
        """Called in the write transaction of each migration before it runs (SQLite: mark the file as
        cuemem's, back it up before its first migration)."""
        return None

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

    def bind_embedder(self, model_id: str, dim: int, backend: str) -> None:
        """Record the embedding model on first use, creating the vector tables for its dimension (the
        vector migrations, store/migrations.py); refuse a different model afterwards."""
        if self.get_meta("embedding_model") is None:
            with self.transaction():
                if self.get_meta("embedding_model") is not None:  # another process bound it first
                    check_embedder(self, model_id, dim)
                    return
                self.set_meta("embedding_model", model_id)
                self.set_meta("embedding_dim", str(dim))
                self.set_meta("embedding_backend", backend)
                self._migrate(seen=None)  # the vector migrations were waiting for `dim`
            return
        check_embedder(self, model_id, dim)
