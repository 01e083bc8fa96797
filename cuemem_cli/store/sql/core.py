"""What every part of `SQLStore` stands on: `Dialect`, what differs between the backends in the text of a
shared query, and `SQLRows`, how a part runs one (the statements a backend gives, and the helpers over them).

Shared SQL is written in the form both accept (SQLite ≥ 3.39, PostgreSQL): named parameters `:name`,
`ON CONFLICT … DO UPDATE`, `RETURNING`, `IS NOT DISTINCT FROM`, `CAST`. The dialect fills in the rest:
how a list of ids is bound and tested, greatest/least, finding a substring, the stored form of a
vector.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ...errors import StoreError


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


class SQLRows(ABC):
    """The base of each part of `SQLStore`: a connection, its dialect, and how a shared query runs."""

    dialect: ClassVar[Dialect]
    conn: Any
    path: str

    @abstractmethod
    def _execute(self, query: str, params: Mapping[str, Any] | None = None) -> Any:
        """Run one statement (shared SQL, `:name` parameters); the driver's cursor."""

    @abstractmethod
    def _executemany(self, query: str, rows: Sequence[Mapping[str, Any]]) -> None: ...

    @abstractmethod
    def _stream(self, query: str, params: Mapping[str, Any], size: int) -> Iterator[list[tuple]]:
        """A large result `size` rows at a time, without holding all of it at once."""

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

    def _has_table(self, name: str) -> bool:
        return self._one(self.dialect.table_exists, name=name) is not None

    def _scope(self, column: str, conversation_ids: Sequence[int] | None) -> tuple[str, dict[str, Any]]:
        """A WHERE condition limiting `column` to the given conversations (None: the whole memory), and
        its parameter."""
        if conversation_ids is None:
            return "1 = 1", {}
        return self.dialect.within(column, "scope"), {"scope": self.dialect.array(conversation_ids)}
