"""`EvalRows`, what only `cuemem eval` asks (`EvalQueries`, evaluate/runner.py)."""

from __future__ import annotations

from .core import SQLRows


class EvalRows(SQLRows):
    """Every turn's text, written once for both backends."""

    def all_turn_texts(self) -> list[tuple[int, str]]:
        return self._rows("SELECT id, text FROM turns ORDER BY id")
