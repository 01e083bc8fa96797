"""`GraphRows`, the engine's edges (`Store`): written by ingest/graph.py's rules, followed one hop by a question."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..base import KIND_CODE, KIND_NAME, SEMANTIC, STREAM_ROWS, TEMPORAL
from .core import SQLRows


class GraphRows(SQLRows):
    """Edges between turns, written once for both backends."""

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

    def save_cue_graph(self, parts: dict[str, bytes]) -> None:
        """Replace the saved HNSW graph (ingest/graph.py, CueGraph) with these parts; call inside `transaction()`."""
        self._execute("DELETE FROM cue_graph")
        self._executemany("INSERT INTO cue_graph(part, data) VALUES (:part, :data)",
                          [{"part": part, "data": data} for part, data in parts.items()])

    def cue_graph(self) -> dict[str, bytes]:
        """The saved HNSW graph's parts (empty: none saved)."""
        return {part: bytes(data) for part, data in self._rows("SELECT part, data FROM cue_graph")}

    def edge_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every edge of the memory as columns: src, dst (turn ids), kind code (SEMANTIC, TEMPORAL), weight,
        rank. Read a block at a time: a large memory has millions of edges, too many for row tuples."""
        blocks = [np.array(rows, dtype=np.float64).reshape(-1, 5)
                  for rows in self._stream("SELECT src, dst, kind, weight, rank FROM edges", {}, STREAM_ROWS)]
        table = np.vstack(blocks) if blocks else np.zeros((0, 5))
        return (table[:, 0].astype(np.int64), table[:, 1].astype(np.int64), table[:, 2].astype(np.int8),
                table[:, 3].astype(np.float32), table[:, 4].astype(np.int32))
