"""One conversation held in memory, for a process that asks it many questions.

`reconstruct` needs, per question, the top cues, the anchors' one-hop neighbours, the candidate turns
and their vectors. From SQLite that is ~15 ms on a LoCoMo conversation (vec0 scan, edge joins, row
decoding); from NumPy arrays already in memory it is ~1 ms. A one-question `cuemem ask` would pay more
to load the arrays than it saves, so a view is built only when a process asks the same conversation a
second time with nothing committed in between (a library user, `cuemem eval`), and it is dropped as
soon as anything is committed, by this process or another (`Store.version`). Conversations of
VIEW_MAX_CUES cues or more are always answered from SQLite (through their cells, cells.py), so a
view never holds more than ~150 MB.

`ConversationView` answers the same calls as the store, with the same results (tests/test_view.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from weakref import WeakKeyDictionary

import numpy as np

from . import cells
from .records import Cue, Turn
from .store import Store

VIEW_MAX_CUES = cells.MIN_CUES  # from there on, search goes through the cells


class ConversationView:
    def __init__(self, store: Store, conversation_id: int, dim: int):
        cue_ids, _, _, matrix = store.conversation_vectors(conversation_id, dim)
        by_id = {cue.id: cue for cue in store.conversation_cues(conversation_id)}
        self.cue_ids = cue_ids
        self.cues = [by_id[i] for i in cue_ids.tolist()]
        self.matrix = matrix
        self.turns = {turn.id: turn for turn in store.turns(conversation_id)}
        turn_ids, self.turn_matrix = store.conversation_turn_vectors(conversation_id, dim)
        self.turn_row = {tid: row for row, tid in enumerate(turn_ids.tolist())}
        self._speakers = store.speakers(conversation_id)
        self.adjacent: dict[int, list[tuple[int, str, float, int]]] = {}
        for src, dst, kind, weight, rank in store.all_edges(conversation_id):
            self.adjacent.setdefault(src, []).append((dst, kind, weight, rank))
            if kind == "semantic":  # followed in both directions, as Store.neighbours does
                self.adjacent.setdefault(dst, []).append((src, kind, weight, rank))

    def speakers(self) -> list[str]:
        return self._speakers

    def knn_cues(self, vector: np.ndarray, k: int) -> list[tuple[Cue, float]]:
        """Exact top-k by cosine (vectors are unit length), ties broken by cue id like the vec0 scan."""
        k = min(int(k), 4096, len(self.cues))
        if k <= 0:
            return []
        sims = self.matrix @ vector.astype(np.float32)
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.lexsort((self.cue_ids[top], -sims[top]))]
        return [(self.cues[i], float(sims[i])) for i in top.tolist()]

    def neighbours(self, turn_ids: Sequence[int], window: int, sem_k: int) -> list[tuple[int, int, str, float]]:
        limit = {"temporal": window, "semantic": sem_k}
        return [(tid, dst, kind, weight) for tid in turn_ids for dst, kind, weight, rank in self.adjacent.get(tid, ())
                if rank <= limit[kind]]

    def turns_by_id(self, turn_ids: Iterable[int]) -> dict[int, Turn]:
        return {tid: self.turns[tid] for tid in turn_ids if tid in self.turns}

    def turn_similarities(self, turn_ids: Sequence[int], query: np.ndarray) -> np.ndarray:
        """Cosine of each turn's whole-text vector with the query; NaN for a turn without one."""
        rows = np.array([self.turn_row.get(tid, -1) for tid in turn_ids], dtype=np.int64)
        out = np.full(len(rows), np.nan, dtype=np.float32)
        known = rows >= 0
        out[known] = self.turn_matrix[rows[known]] @ query.astype(np.float32)
        return out


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

    def neighbours(self, turn_ids: Sequence[int], window: int, sem_k: int) -> list[tuple[int, int, str, float]]:
        return self.store.neighbours(turn_ids, window, sem_k)

    def turns_by_id(self, turn_ids: Iterable[int]) -> dict[int, Turn]:
        return self.store.turns_by_id(turn_ids)

    def turn_similarities(self, turn_ids: Sequence[int], query: np.ndarray) -> np.ndarray:
        vectors = self.store.turn_vectors(turn_ids)
        out = np.full(len(turn_ids), np.nan, dtype=np.float32)
        known = [i for i, tid in enumerate(turn_ids) if tid in vectors]
        if known:
            out[known] = np.vstack([vectors[turn_ids[i]] for i in known]) @ query.astype(np.float32)
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
        source = StoreConversation(store, conversation_id, dim) if big else ConversationView(store, conversation_id, dim)
        entries[conversation_id] = (version, source)
    return entries[conversation_id][1]
