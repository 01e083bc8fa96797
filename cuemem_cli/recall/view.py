"""The memory held in memory, for a process that asks it many questions.

`reconstruct` needs, per question, the top cues of the memory (or of the conversations the question is
narrowed to), the anchors' one-hop neighbours, the candidate turns and their vectors. A one-question
process (`cuemem ask`) reads them from the store (`StoreSource`: vec0's search, edge joins). A process that
asks a second question with nothing committed in between (a library user, an MCP server, `cuemem eval`)
gets a `MemoryView`: the memory's cue vectors as int8 codes, their turn and conversation ids, the turn
vectors and the edges as NumPy arrays, never one Python object per cue (500,000 `Cue` objects would
cost hundreds of MB). Cues and turns are read by id for the few a question keeps; the view keeps the
turns it has read (up to _TURNS_KEPT) and the decoded vectors of the scope it last searched exactly (up to
_DECODE_ROWS cues, 48 MB: what one search decoded anyway), since a session of questions about one
conversation reaches the same ones again (conv-26 in all LoCoMo: warm p50 8.8 -> 7.1 ms, identical
contexts). The view is dropped as soon as anything is committed, by this process or another (`Store.version`).

Search in the view: up to vectors.EXACT_CUES cues in scope it is exact (every code decoded and scored, as
the store scores vec0's candidates). Above, the sign-bit prefilter of store/vectors.py: the PREFILTER_CANDIDATES
cues nearest by sign bits are scored exactly, the same candidates SQLite's cold search takes from its
`cue_signs` table. Memories of VIEW_MAX_CUES or more cues are always answered from the store.

`MemoryView` answers the same calls as `StoreSource`, with the same results (tests/test_view.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple
from weakref import WeakKeyDictionary

import numpy as np

from ..records import Cue, Turn
from ..store import vectors as vec
from ..store.base import SEMANTIC, TEMPORAL, Store
from ..store.vectors import decode, similarities
from .people import names_known, names_said

VIEW_MAX_CUES = 2_000_000  # a view holds ~450 bytes a cue: from here on, questions read the store
_DECODE_ROWS = 32_768  # codes decoded at a time when scoring exactly (48 MB of float32)
_TURNS_KEPT = 20_000  # turns a view keeps once read: a session of questions reaches the same turns again


class Hops(NamedTuple):
    """One hop from a set of turns, one entry per edge end: from `src` (a seed) to `dst`."""

    src: np.ndarray  # turn ids
    dst: np.ndarray
    temporal: np.ndarray  # bool: temporal, else semantic
    weight: np.ndarray

    @classmethod
    def of(cls, rows: Sequence[tuple]) -> Hops:
        """From (src, dst, kind, weight, …) rows, as Store.neighbours and Maintenance.all_edges return them."""
        n = len(rows)
        return cls(np.fromiter((r[0] for r in rows), np.int64, n), np.fromiter((r[1] for r in rows), np.int64, n),
                   np.fromiter((r[2] == "temporal" for r in rows), bool, n),
                   np.fromiter((r[3] for r in rows), np.float32, n))


def in_context(vectors: np.ndarray, previous: np.ndarray, weight: float) -> np.ndarray:
    """Each turn vector with `weight` of the turn before it added, renormalised (a zero row: no turn before).

    A reply is often only readable next to what it answers ("Yep, a few years back" after "Do you still
    paint?"). Used for the turn vectors of databases from before m005, which hold the turn alone (newer
    ones are read with the turn before them, ingest.prepare.embed_turns), and for the extractive answer's
    sentences (answer/extractive.py).
    """
    mixed = vectors + np.float32(weight) * previous
    return mixed / np.linalg.norm(mixed, axis=1, keepdims=True)


def top_k(ids: np.ndarray, sims: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best similarities, best first; every entry tied at the k-th place is considered,
    and ties go to the lowest id (as the store's KNN breaks them)."""
    k = min(k, len(sims))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    kth = sims[np.argpartition(-sims, k - 1)[:k]].min()
    tied = np.flatnonzero(sims >= kth)
    return tied[np.lexsort((ids[tied], -sims[tied]))][:k]


class _Source:
    """What both sources read from the store: turns, and the vectors a question needs of a few turns."""

    def __init__(self, store: Store, dim: int):
        self.store = store
        self.dim = dim

    def turns_by_id(self, turn_ids: Iterable[int]) -> dict[int, Turn]:
        return self.store.turns_by_id(turn_ids)

    def _turn_vectors(self, turn_ids: Sequence[int]) -> dict[int, np.ndarray]:
        return self.store.turn_vectors(turn_ids)

    def turn_similarities(self, turn_ids: Sequence[int], query: np.ndarray, context_weight: float = 0.0) -> np.ndarray:
        """Cosine of each turn's whole-text vector (`in_context` of the turn before it in its session, by
        `context_weight`) with the query; NaN for a turn without one."""
        before = self.store.previous_turns(turn_ids) if context_weight else {}
        vectors = self._turn_vectors([*turn_ids, *before.values()])
        out = np.full(len(turn_ids), np.nan, dtype=np.float32)
        known = [tid for tid in turn_ids if tid in vectors]
        if known:
            own = np.vstack([vectors[tid] for tid in known])
            zero = np.zeros(self.dim, dtype=np.float32)
            previous = np.vstack([vectors.get(before[tid], zero) if tid in before else zero for tid in known])
            at = [i for i, tid in enumerate(turn_ids) if tid in vectors]
            out[at] = similarities(in_context(own, previous, context_weight), query)
        return out

    def people(self) -> dict[str, frozenset[str]]:
        """Each conversation's people (its speakers), by conversation name: chats with the same people are
        one circle (recall.score.within_circles, circle_strength)."""
        sets = self.store.speaker_sets()
        return {name: sets.get(cid, frozenset()) for cid, name, _ in self.store.conversations()}

    def names(self, words: tuple[str, ...], scope: Sequence[int] | None) -> dict[tuple[str, str], str]:
        """What each of a question's unknown `words` names in the conversations in scope (people.names_known)."""
        return names_known(self.store, words, scope)

    def said(self, words: tuple[str, ...], scope: Sequence[int] | None) -> set[str]:
        """Which of `words` some turn in scope says (people.names_said)."""
        return names_said(self.store, words, scope)

    def sentence_similarities(self, turn_ids: Sequence[int], query: np.ndarray) -> dict[int, dict[str, float]]:
        """Cosine with the query of each statement cue (a sentence) of the given turns."""
        found = self.store.statement_vectors(turn_ids)
        out: dict[int, dict[str, float]] = {}
        for tid in turn_ids:
            pairs = found.get(tid, [])
            sims = similarities(np.vstack([v for _, v in pairs]), query) if pairs else np.zeros(0, dtype=np.float32)
            out[tid] = {sentence: float(sim) for (sentence, _), sim in zip(pairs, sims, strict=True)}
        return out


class StoreSource(_Source):
    """The calls answered by the store's own queries: what a one-question process uses."""

    def speakers(self, scope: Sequence[int] | None) -> list[str]:
        return self.store.speakers(scope)

    def conversations_with_speakers(self, names: Iterable[str], scope: Sequence[int] | None) -> dict[int, str]:
        return self.store.conversations_with_speakers(names, scope)

    def knn_cues(self, vector: np.ndarray, k: int, scope: Sequence[int] | None) -> list[tuple[Cue, float]]:
        return self.store.knn_cues(vector, k, scope)

    def hops(self, turn_ids: Sequence[int], window: int, sem_k: int, scope: Sequence[int] | None = None) -> Hops:
        """One hop from `turn_ids`. `scope` is a hint the store's query does not take: the caller drops the
        neighbours outside the conversations asked once their turns are read."""
        return Hops.of(self.store.neighbours(turn_ids, window, sem_k))


class MemoryView(_Source):
    """The memory's cue codes, turn codes and edges as arrays; read-only; exact search up to EXACT_CUES
    cues in scope, the sign-bit prefilter (vectors.nearest_signs) above."""

    def __init__(self, store: Store, dim: int):
        super().__init__(store, dim)
        self.max_k = store.max_k  # the store's own limit on k, so a view returns what the store would
        self.cue_ids, self.cue_turns, self.cue_conversations, self.codes = store.cue_codes(dim)
        self.signs = vec.signs(self.codes) if len(self.codes) > vec.EXACT_CUES else None
        self.turn_ids, self.turn_codes = store.turn_codes(dim)
        src, dst, kind, weight, rank = store.edge_columns()
        semantic = kind == SEMANTIC
        # Each edge from its source, and each semantic edge again from its target (followed both ways).
        start = np.concatenate([src, dst[semantic]])
        order = np.argsort(start, kind="stable")
        self._from = start[order]
        self._to = np.concatenate([dst, src[semantic]])[order]
        self._temporal = np.concatenate([kind == TEMPORAL, np.zeros(int(semantic.sum()), dtype=bool)])[order]
        self._weight = np.concatenate([weight, weight[semantic]])[order]
        self._rank = np.concatenate([rank, rank[semantic]])[order]
        # The conversation of each turn that has cues: semantic edges cross chats, and a narrowed question
        # drops the other chats' turns before reading them (3 of 4 a conv-26 question reached in LoCoMo's ten).
        self._cue_turn_ids, first = np.unique(self.cue_turns, return_index=True)
        self._cue_turn_conversations = self.cue_conversations[first]
        self._speakers: dict[tuple[int, ...] | None, list[str]] = {}
        self._speaking: dict[tuple[tuple[str, ...], tuple[int, ...] | None], dict[int, str]] = {}
        self._people: dict[str, frozenset[str]] | None = None
        self._scopes: dict[tuple[int, ...], np.ndarray] = {}
        self._names: dict[tuple[tuple[str, ...], tuple[int, ...] | None], dict[tuple[str, str], str]] = {}
        self._said: dict[tuple[tuple[str, ...], tuple[int, ...] | None], set[str]] = {}
        # The decoded vectors of the cues last searched exactly (one scope, at most _DECODE_ROWS of them: what
        # one search decodes anyway), and the turns read so far: a session of questions about one
        # conversation decoded and read the same ones again for every question.
        self._decoded: tuple[tuple[int, ...] | None, np.ndarray] | None = None
        self._turns: dict[int, Turn] = {}

    def turns_by_id(self, turn_ids: Iterable[int]) -> dict[int, Turn]:
        """As the store's (in id order), from the turns this view has read before where it can."""
        ids = sorted(set(turn_ids))
        missing = [tid for tid in ids if tid not in self._turns]
        if missing:
            found = self.store.turns_by_id(missing)
            if len(self._turns) + len(found) > _TURNS_KEPT:
                self._turns.clear()
            self._turns.update(found)
        return {tid: self._turns[tid] for tid in ids if tid in self._turns}

    def speakers(self, scope: Sequence[int] | None) -> list[str]:
        key = None if scope is None else tuple(sorted(scope))
        if key not in self._speakers:
            self._speakers[key] = self.store.speakers(scope)
        return self._speakers[key]

    def conversations_with_speakers(self, names: Iterable[str], scope: Sequence[int] | None) -> dict[int, str]:
        """The conversations any of `names` spoke in (Store.conversations_with_speakers), kept per question's
        names: a session of questions about the same people asks once."""
        key = (tuple(sorted(names)), None if scope is None else tuple(sorted(scope)))
        if key not in self._speaking:
            self._speaking[key] = self.store.conversations_with_speakers(key[0], scope)
        return self._speaking[key]

    def people(self) -> dict[str, frozenset[str]]:
        if self._people is None:
            self._people = super().people()
        return self._people

    def names(self, words: tuple[str, ...], scope: Sequence[int] | None) -> dict[tuple[str, str], str]:
        """As the store's, kept per question's words: a session of questions about Kate reads her once."""
        key = (words, None if scope is None else tuple(sorted(scope)))
        if key not in self._names:
            self._names[key] = super().names(words, scope)
        return self._names[key]

    def said(self, words: tuple[str, ...], scope: Sequence[int] | None) -> set[str]:
        key = (words, None if scope is None else tuple(sorted(scope)))
        if key not in self._said:
            self._said[key] = super().said(words, scope)
        return self._said[key]

    def _rows(self, scope: Sequence[int] | None) -> np.ndarray | None:
        """The rows of the cues in scope (None: all of them)."""
        if scope is None:
            return None
        key = tuple(sorted(scope))
        if key not in self._scopes:
            self._scopes[key] = np.flatnonzero(np.isin(self.cue_conversations, np.array(key, dtype=np.int64)))
        return self._scopes[key]

    def knn_cues(self, vector: np.ndarray, k: int, scope: Sequence[int] | None) -> list[tuple[Cue, float]]:
        """Top-k cues by cosine, ties broken by cue id like the store's KNN: exact up to EXACT_CUES cues in
        scope; above, the PREFILTER_CANDIDATES nearest by sign bits, scored exactly."""
        rows = self._rows(scope)
        count = len(self.codes) if rows is None else len(rows)
        k = min(int(k), count, count if self.max_k is None else self.max_k)
        if k <= 0:
            return []
        signs = self.signs if count > vec.EXACT_CUES else None  # None: every code in scope is scored
        if signs is not None:
            candidates = vec.nearest_signs(signs, self.cue_ids, vector, max(vec.PREFILTER_CANDIDATES, k), rows)
        else:
            candidates = np.arange(count) if rows is None else rows
        if signs is None and count <= _DECODE_ROWS:  # every code in scope, decoded once per scope
            key = None if scope is None else tuple(sorted(scope))
            if self._decoded is None or self._decoded[0] != key:
                self._decoded = (key, decode(self.codes[candidates]))
            sims = similarities(self._decoded[1], vector)
        else:
            sims = np.concatenate([similarities(decode(self.codes[candidates[lo:lo + _DECODE_ROWS]]), vector)
                                   for lo in range(0, len(candidates), _DECODE_ROWS)])
        best = candidates[top_k(self.cue_ids[candidates], sims, k)]
        by_row = dict(zip(candidates.tolist(), sims.tolist(), strict=True))
        cues = self.store.cues_by_id(self.cue_ids[best].tolist())
        return [(cues[cue_id], by_row[row]) for row, cue_id in zip(best.tolist(), self.cue_ids[best].tolist(),
                                                                   strict=True) if cue_id in cues]

    def hops(self, turn_ids: Sequence[int], window: int, sem_k: int, scope: Sequence[int] | None = None) -> Hops:
        """One hop from `turn_ids`; with `scope` (conversation ids), none to a turn known to be outside it
        (a turn without cues is kept: the caller reads its conversation with the turn)."""
        seeds = np.unique(np.asarray(turn_ids, dtype=np.int64))
        lo, hi = np.searchsorted(self._from, seeds, "left"), np.searchsorted(self._from, seeds, "right")
        rows = np.concatenate([np.arange(a, b) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]) \
            if len(seeds) else np.zeros(0, dtype=np.int64)
        keep = rows[self._rank[rows] <= np.where(self._temporal[rows], window, sem_k)]
        if scope is not None and len(keep) and len(self._cue_turn_ids):
            to = self._to[keep]
            at = np.minimum(np.searchsorted(self._cue_turn_ids, to), len(self._cue_turn_ids) - 1)
            known = self._cue_turn_ids[at] == to
            inside = np.isin(self._cue_turn_conversations[at], np.asarray(scope, dtype=np.int64))
            keep = keep[~known | inside]
        return Hops(self._from[keep], self._to[keep], self._temporal[keep], self._weight[keep])

    def _turn_vectors(self, turn_ids: Sequence[int]) -> dict[int, np.ndarray]:
        ids = np.asarray(turn_ids, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.turn_ids, ids), max(len(self.turn_ids) - 1, 0))
        held = (self.turn_ids[at] == ids) if len(self.turn_ids) else np.zeros(len(ids), dtype=bool)
        return dict(zip(ids[held].tolist(), decode(self.turn_codes[at[held]]), strict=True)) if held.any() else {}


_views: WeakKeyDictionary[Store, tuple[tuple[int, int], MemoryView | StoreSource | None]] = WeakKeyDictionary()


def memory_source(store: Store, dim: int) -> MemoryView | StoreSource:
    """A cached view from the second question on (same store, nothing committed since); the store before."""
    version = store.version()
    seen = _views.get(store)
    if seen is None or seen[0] != version:
        _views[store] = (version, None)
        return StoreSource(store, dim)
    if seen[1] is None:
        source = StoreSource(store, dim) if store.cue_count() >= VIEW_MAX_CUES else MemoryView(store, dim)
        _views[store] = (version, source)
        return source
    return seen[1]


def drop_view(store: Store) -> None:
    """Forget this store's cached view: its next question reads the store, as a new process's would."""
    _views.pop(store, None)
