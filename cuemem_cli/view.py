"""One conversation held in memory, for a process that asks it many questions.

`reconstruct` needs, per question, the top cues, the anchors' one-hop neighbours, the candidate turns
and their vectors. From SQLite that is ~17 ms p50 on a LoCoMo conversation (vec0 scan, edge joins, row
decoding) before any scoring; from NumPy arrays already in memory the whole reconstruction, scoring
included, is ~5 ms (bench/bench_reconstruct.py). Loading the arrays takes ~0.3 s, more than a
one-question `cuemem ask` would save. So a view is built only when a process asks the same
conversation a second time with nothing committed in between (a library user, `cuemem eval`), and it
is dropped as soon as anything is committed, by this process or another (`Store.version`). Conversations of
VIEW_MAX_CUES cues or more are always answered from SQLite (through their cells, cells.py), so a
view never holds more than ~150 MB.

`ConversationView` answers the same calls as the store, with the same results (tests/test_view.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain, pairwise
from typing import NamedTuple
from weakref import WeakKeyDictionary

import numpy as np

from . import cells
from .records import Cue, Turn
from .store import Store
from .vectors import similarities

VIEW_MAX_CUES = cells.MIN_CUES  # from there on, search goes through the cells


class Hops(NamedTuple):
    """One hop from a set of turns, one entry per edge end: from `src` (a seed) to `dst`."""

    src: np.ndarray  # turn ids
    dst: np.ndarray
    temporal: np.ndarray  # bool: temporal, else semantic
    weight: np.ndarray

    @classmethod
    def of(cls, rows: Sequence[tuple]) -> Hops:
        """From (src, dst, kind, weight, …) rows, as Store.neighbours and Store.all_edges return them."""
        n = len(rows)
        return cls(np.fromiter((r[0] for r in rows), np.int64, n), np.fromiter((r[1] for r in rows), np.int64, n),
                   np.fromiter((r[2] == "temporal" for r in rows), bool, n),
                   np.fromiter((r[3] for r in rows), np.float32, n))


def in_context(vectors: np.ndarray, previous: np.ndarray, weight: float) -> np.ndarray:
    """Each turn vector with `weight` of the turn before it added, renormalised (a zero row: no turn before).

    A reply is often only readable next to what it answers ("Yep, a few years back" after "Do you still
    paint?"). Used for the turn vectors of databases from before m005, which hold the turn alone (newer
    ones are read with the turn before them, ingest.embed_turns), and for the extractive answer's
    sentences (answer.py).
    """
    mixed = vectors + np.float32(weight) * previous
    return mixed / np.linalg.norm(mixed, axis=1, keepdims=True)


class ConversationView:
    """A conversation's cue and turn vectors, turns and edges as arrays; read-only, exact search."""

    def __init__(self, store: Store, conversation_id: int, dim: int):
        cue_ids, _, _, matrix = store.conversation_vectors(conversation_id, dim)
        by_id = {cue.id: cue for cue in store.conversation_cues(conversation_id)}
        self.cue_ids = cue_ids
        self.cues = [by_id[i] for i in cue_ids.tolist()]
        self.matrix = matrix
        self.turns = {turn.id: turn for turn in store.turns(conversation_id)}
        turn_ids, self.turn_matrix = store.conversation_turn_vectors(conversation_id, dim)
        self.turn_row = {tid: row for row, tid in enumerate(turn_ids.tolist())}
        self._in_context: dict[float, np.ndarray] = {}
        self._statement_rows: dict[int, list[int]] | None = None
        self._speakers = store.speakers(conversation_id)
        self.max_k = store.max_k  # the store's own limit on k, so a view returns what the store would
        self.edges = store.all_edges(conversation_id)
        self._hops: dict[tuple[int, int], dict[int, list[int]]] = {}
        forward = Hops.of(self.edges)  # then each edge reversed, at row + len(edges)
        self._columns = Hops(np.concatenate([forward.src, forward.dst]), np.concatenate([forward.dst, forward.src]),
                             np.tile(forward.temporal, 2), np.tile(forward.weight, 2))

    def speakers(self) -> list[str]:
        return self._speakers

    def knn_cues(self, vector: np.ndarray, k: int) -> list[tuple[Cue, float]]:
        """Exact top-k by cosine (vectors are unit length), ties broken by cue id like the store's KNN."""
        k = min(int(k), len(self.cues), len(self.cues) if self.max_k is None else self.max_k)
        if k <= 0:
            return []
        sims = similarities(self.matrix, vector)
        kth = sims[np.argpartition(-sims, k - 1)[:k]].min()
        tied = np.flatnonzero(sims >= kth)  # every cue tied at the k-th place, not an arbitrary few of them
        top = tied[np.lexsort((self.cue_ids[tied], -sims[tied]))][:k]
        return [(self.cues[i], float(sims[i])) for i in top.tolist()]

    def hops(self, turn_ids: Sequence[int], window: int, sem_k: int) -> Hops:
        rows_of = self._hops.get((window, sem_k))
        if rows_of is None:  # once per graph setting: which edge rows each turn reaches
            rows_of = self._hops[(window, sem_k)] = {}
            limit = {"temporal": window, "semantic": sem_k}
            for row, (src, dst, kind, _, rank) in enumerate(self.edges):
                if rank <= limit[kind]:
                    rows_of.setdefault(src, []).append(row)
                    if kind == "semantic":  # followed in both directions: the reversed copy sits at row + n
                        rows_of.setdefault(dst, []).append(row + len(self.edges))
        rows = np.fromiter(chain.from_iterable(rows_of.get(tid, ()) for tid in turn_ids), dtype=np.int64)
        return Hops(*(column[rows] for column in self._columns))

    def turns_by_id(self, turn_ids: Iterable[int]) -> dict[int, Turn]:
        return {tid: self.turns[tid] for tid in turn_ids if tid in self.turns}

    def turn_similarities(self, turn_ids: Sequence[int], query: np.ndarray, context_weight: float = 0.0) -> np.ndarray:
        """Cosine of each turn's whole-text vector (`in_context`) with the query; NaN for a turn without one."""
        rows = np.array([self.turn_row.get(tid, -1) for tid in turn_ids], dtype=np.int64)
        out = np.full(len(rows), np.nan, dtype=np.float32)
        known = rows >= 0
        out[known] = similarities(self._turn_matrix(context_weight)[rows[known]], query)
        return out

    def sentence_similarities(self, turn_ids: Sequence[int], query: np.ndarray) -> dict[int, dict[str, float]]:
        """Cosine with the query of each statement cue (a sentence) of the given turns."""
        if self._statement_rows is None:
            self._statement_rows = {}
            for row, cue in enumerate(self.cues):
                if cue.kind == "statement":
                    self._statement_rows.setdefault(cue.turn_id, []).append(row)
        out: dict[int, dict[str, float]] = {}
        for tid in turn_ids:
            rows = self._statement_rows.get(tid, [])
            sims = similarities(self.matrix[rows], query) if rows else np.zeros(0, dtype=np.float32)
            out[tid] = {self.cues[row].object: float(sim) for row, sim in zip(rows, sims, strict=True)}
        return out

    def _turn_matrix(self, context_weight: float) -> np.ndarray:
        if not context_weight:
            return self.turn_matrix
        if context_weight not in self._in_context:
            ordered = sorted(self.turns.values(), key=lambda t: t.position)
            previous = np.zeros_like(self.turn_matrix)
            for before, turn in pairwise(ordered):
                if turn.id in self.turn_row and before.id in self.turn_row and before.session == turn.session:
                    previous[self.turn_row[turn.id]] = self.turn_matrix[self.turn_row[before.id]]
            self._in_context[context_weight] = in_context(self.turn_matrix, previous, context_weight)
        return self._in_context[context_weight]


class StoreConversation:
    """The same calls answered by SQL: what a one-question process uses."""

    def __init__(self, store: Store, conversation_id: int, dim: int):
        self.store = store
        self.conversation_id = conversation_id
        self.dim = dim

    def speakers(self) -> list[str]:
        return self.store.speakers(self.conversation_id)

    def knn_cues(self, vector: np.ndarray, k: int) -> list[tuple[Cue, float]]:
        return cells.search(self.store, self.conversation_id, self.dim, vector, k)

    def hops(self, turn_ids: Sequence[int], window: int, sem_k: int) -> Hops:
        return Hops.of(self.store.neighbours(turn_ids, window, sem_k))

    def turns_by_id(self, turn_ids: Iterable[int]) -> dict[int, Turn]:
        return self.store.turns_by_id(turn_ids)

    def turn_similarities(self, turn_ids: Sequence[int], query: np.ndarray, context_weight: float = 0.0) -> np.ndarray:
        before = self.store.previous_turns(turn_ids) if context_weight else {}
        vectors = self.store.turn_vectors([*turn_ids, *before.values()])
        out = np.full(len(turn_ids), np.nan, dtype=np.float32)
        known = [tid for tid in turn_ids if tid in vectors]
        if known:
            own = np.vstack([vectors[tid] for tid in known])
            zero = np.zeros(self.dim, dtype=np.float32)
            previous = np.vstack([vectors.get(before[tid], zero) if tid in before else zero for tid in known])
            at = [i for i, tid in enumerate(turn_ids) if tid in vectors]
            out[at] = similarities(in_context(own, previous, context_weight), query)
        return out

    def sentence_similarities(self, turn_ids: Sequence[int], query: np.ndarray) -> dict[int, dict[str, float]]:
        found = self.store.statement_vectors(turn_ids)
        out: dict[int, dict[str, float]] = {}
        for tid in turn_ids:
            pairs = found.get(tid, [])
            sims = similarities(np.vstack([v for _, v in pairs]), query) if pairs else np.zeros(0, dtype=np.float32)
            out[tid] = {sentence: float(sim) for (sentence, _), sim in zip(pairs, sims, strict=True)}
        return out


_views: WeakKeyDictionary[Store, dict[int, tuple[tuple[int, int], ConversationView | StoreConversation | None]]] = \
    WeakKeyDictionary()


def conversation_source(store: Store, conversation_id: int, dim: int) -> ConversationView | StoreConversation:
    """A cached view from the second question on (same store, nothing committed since); SQL before that."""
    version = store.version()
    entries = _views.setdefault(store, {})
    seen = entries.get(conversation_id)
    if seen is None or seen[0] != version:
        entries.clear()  # one view per store: a process switching conversations keeps one in memory
        entries[conversation_id] = (version, None)
        return StoreConversation(store, conversation_id, dim)
    if seen[1] is None:
        big = store.cue_count(conversation_id) >= VIEW_MAX_CUES
        source = (StoreConversation(store, conversation_id, dim) if big
                  else ConversationView(store, conversation_id, dim))
        entries[conversation_id] = (version, source)
        return source
    return seen[1]


def drop_view(store: Store) -> None:
    """Forget this store's cached view: its next question reads SQLite, as a new process's would."""
    _views.pop(store, None)
