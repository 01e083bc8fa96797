"""`CueRows`, the engine's cues and vectors (`Store`): stored as codes (store/vectors.py), read back a few at a
time for a question, or whole as arrays for the ingest's neighbour index and the in-memory view."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from ..base import CUE_COLUMNS, STREAM_ROWS, CueCodes
from ...records import Cue
from .core import SQLRows


class CueRows(SQLRows):
    """Cues, cue vectors and turn vectors, written once for both backends. A backend gives its KNN search
    (`knn_cues`), and may read the stored codes its own faster way (`_stored_codes`)."""

    @abstractmethod
    def knn_cues(self, vector: np.ndarray, k: int,
                 conversation_ids: Sequence[int] | None = None) -> list[tuple[Cue, float]]:
        """Top-k cues of the memory (or of the given conversations) by cosine similarity, best first, equal
        scores lowest cue id first."""

    # -------------------------------------------------------------------- cues
    def insert_cues(self, conversation_id: int, rows: Sequence[tuple[int, str, str, str, str]]) -> list[int]:
        """rows: (turn_id, subject, relation, object, kind) → new cue ids, in order."""
        return [self._value("INSERT INTO cues(turn_id, conversation_id, subject, relation, object, kind)"
                            " VALUES (:tid, :cid, :subject, :relation, :object, :kind) RETURNING id",
                            tid=turn_id, cid=conversation_id, subject=subject, relation=relation, object=obj, kind=kind)
                for turn_id, subject, relation, obj, kind in rows]

    def cues_by_id(self, cue_ids: Iterable[int]) -> dict[int, Cue]:
        rows = self._rows(f"SELECT {CUE_COLUMNS} FROM cues WHERE {self.dialect.within('id', 'ids')}",
                          ids=self.dialect.array(cue_ids))
        return {r[0]: Cue(*r) for r in rows}

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
