"""The turn graph: temporal edges within a conversation, semantic edges across the whole memory.

- Temporal: turns i and j of one conversation with 0 < |i − j| ≤ w positions, stored in both directions
  (weight 1, rank |i − j|).
- Semantic: each cue links to its top-k most similar cues among the cues of *earlier* turns of any
  conversation of the memory, mapped to turns; weight is the cosine similarity, rank the neighbour's
  rank (1 = best). "Earlier" is stored earlier: a lower turn id (ids are given in the order turns are
  stored; within a conversation that is the order they were said, except for a turn stored by
  `ingest --replace`, which takes its predecessor's position but a new id). So the same trip discussed
  in three chats is one neighbourhood, not three islands (issue 34). Each cue also links to its top-k
  among the earlier turns of its own conversation (an edge found both ways keeps its better rank): a
  question narrowed to a conversation (`ask -c`) cannot follow edges out of it, and without these its
  graph would be thinner the more the memory holds elsewhere; with them, the edges inside a conversation
  are those it would have alone in a memory, whatever else the memory holds. And where some chats are
  with the same people (the same set of speakers) and others are not, each cue links to its top-k among
  the earlier turns of the chats with its people too: the sessions of one friendship, exported as many
  chats among other people's, stay one neighbourhood (a user/assistant export, where every chat has the
  same two speakers, has no such circles: the memory-wide edges are theirs).

Why earlier turns only, where the paper takes the top-k over all cues: memory is append-only. A new
turn never rewrites the edges of old turns, so ingesting a file in one run, in several runs, or again
after a crash gives the same graph. Expansion then follows semantic edges in both directions, so an
early turn still reaches the later turns that chose it (a pair is linked when either side is in the
other's top-k over the history before the later one). A database written before memory-wide edges
keeps its old edges (within a conversation); turns stored from then on link across conversations.

Similarities are exact: a NumPy matmul of the new cues against the memory's cues in blocks
(`NeighbourIndex` holds them as int8 codes, store/vectors.py, decoded a block at a time), a running top-k per
new cue merged block by block, never an all-pairs Python loop. Measured on LoCoMo, narrowing the
candidates first by turn similarity lost many of the exact neighbours (bench/design-notes.md, "Measured
choices elsewhere in the code"); exact is simplest.
Its cost grows with the memory: each new cue is compared with every stored cue (bench/RESULTS.md,
"One memory across every conversation", has the ingest times at scale).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from ..store.base import Store
from ..store.vectors import decode, encode

COLUMNS = 8192  # stored cues decoded at a time: 12.6 MB of float32 at 384 dimensions
MAX_BLOCK_CELLS = 1 << 22  # similarities per block (16 MB of float32): memory flat whatever the history


@dataclass
class NeighbourIndex:
    """The memory's cue vectors as int8 codes with their turn ids, kept in memory while an ingest runs
    (384 bytes a cue: 500,000 cues are 190 MB). Rows are in the order cues were stored."""

    turn_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    conversations: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    codes: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int8))
    size: int = 0  # rows in use; the arrays grow by doubling, so adding a batch does not copy the memory

    @classmethod
    def load(cls, store: Store, dim: int) -> NeighbourIndex:
        stored = store.cue_codes(dim)
        return cls(stored.turn_ids, stored.conversation_ids, stored.codes, len(stored.cue_ids))

    def add(self, turn_ids: np.ndarray, conversations: np.ndarray, vectors: np.ndarray) -> None:
        """New cues (their turns, conversations and unit vectors, stored as codes) after those held."""
        if not len(turn_ids):
            return
        need = self.size + len(turn_ids)
        if need > len(self.turn_ids) or self.codes.shape[1] != vectors.shape[1]:
            capacity = max(need, 2 * len(self.turn_ids), 1024)
            grown_ids = np.zeros(capacity, dtype=np.int64)
            grown_convs = np.zeros(capacity, dtype=np.int64)
            grown = np.zeros((capacity, vectors.shape[1]), dtype=np.int8)
            grown_ids[:self.size], grown[:self.size] = self.turn_ids[:self.size], self.codes[:self.size]
            grown_convs[:self.size] = self.conversations[:self.size]
            self.turn_ids, self.conversations, self.codes = grown_ids, grown_convs, grown
        self.turn_ids[self.size:need] = turn_ids
        self.conversations[self.size:need] = conversations
        self.codes[self.size:need] = encode(vectors)
        self.size = need

    def remove(self, turn_ids: set[int]) -> None:
        """Drop the cues of turns that were deleted (a replaced turn's)."""
        keep = ~np.isin(self.turn_ids[:self.size], np.fromiter(turn_ids, np.int64, len(turn_ids)))
        self.turn_ids, self.codes = self.turn_ids[:self.size][keep], self.codes[:self.size][keep]
        self.conversations = self.conversations[:self.size][keep]
        self.size = len(self.turn_ids)

    def of_conversations(self, conversations: tuple[int, ...]) -> NeighbourIndex:
        """The held cues of some conversations, in the same order."""
        held = self.conversations[:self.size]
        rows = np.flatnonzero(held == conversations[0] if len(conversations) == 1 else np.isin(held, conversations))
        return NeighbourIndex(self.turn_ids[rows], self.conversations[rows], self.codes[rows], len(rows))

    def blocks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(turn ids, unit float32 vectors) of the held cues, COLUMNS at a time."""
        for lo in range(0, self.size, COLUMNS):
            hi = min(lo + COLUMNS, self.size)
            yield self.turn_ids[lo:hi], decode(self.codes[lo:hi])


def temporal_edges(store: Store, conversation_id: int, new: list[tuple[int, int]], window: int) -> list[tuple]:
    """Edges between each new (turn id, position) and the turns within `window` before it."""
    if not new or window <= 0:
        return []
    low = min(p for _, p in new) - window
    high = max(p for _, p in new)
    by_position = dict((p, tid) for tid, p in store.turns_at_positions(conversation_id, low, high))
    edges = []
    for tid, pos in new:
        for back in range(1, window + 1):
            other = by_position.get(pos - back)
            if other is not None:
                edges.append((tid, other, "temporal", 1.0, back))
                edges.append((other, tid, "temporal", 1.0, back))
    return edges


class _TopK:
    """The k best candidates so far of each new cue: similarity, and the candidate's column (its order
    among all candidate cues: held ones first, then the batch's), which breaks ties: of equal cues (same
    text), the earlier cue first."""

    def __init__(self, rows: int, k: int):
        self.k = k
        self.sims = np.full((rows, k), -np.inf, dtype=np.float32)
        self.cols = np.full((rows, k), np.iinfo(np.int64).max, dtype=np.int64)

    def merge(self, lo: int, sims: np.ndarray, columns: np.ndarray) -> None:
        """Fold in a block of similarities: rows lo…, one column per entry of `columns` (increasing), -inf
        where the candidate is not an earlier turn's."""
        kk = min(self.k, sims.shape[1])
        if kk < sims.shape[1]:
            top = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
            kth = np.take_along_axis(sims, top, axis=1).min(axis=1)
            # a tie across the k-th place: argpartition kept an arbitrary few of it, the earliest are wanted
            for row in np.flatnonzero(((sims >= kth[:, None]).sum(axis=1) > kk) & (kth > -np.inf)):
                tied = np.flatnonzero(sims[row] >= kth[row])
                top[row] = tied[np.lexsort((tied, -sims[row, tied]))][:kk]
        else:
            top = np.broadcast_to(np.arange(sims.shape[1]), sims.shape)
        rows = slice(lo, lo + len(sims))
        all_sims = np.concatenate([self.sims[rows], np.take_along_axis(sims, top, axis=1)], axis=1)
        all_cols = np.concatenate([self.cols[rows], columns[top]], axis=1)
        order = np.lexsort((all_cols, -all_sims))[:, :self.k]
        self.sims[rows] = np.take_along_axis(all_sims, order, axis=1)
        self.cols[rows] = np.take_along_axis(all_cols, order, axis=1)


def semantic_edges(index: NeighbourIndex, turn_ids: np.ndarray, vectors: np.ndarray, k: int,
                   conversations: np.ndarray | None = None,
                   circles: dict[int, tuple[int, ...]] | None = None) -> list[tuple]:
    """Top-k earlier-turn neighbours of each new cue (`turn_ids[i]` is cue i's turn) among the held cues and
    the other new ones; given each cue's conversation, also its top-k within its own conversation, and
    within its conversation's circle (`circles`: conversation → the conversations with the same people, for
    those that have such a circle short of the whole memory). Call before `index.add` of the same cues. An
    edge found more than once keeps its best similarity and rank."""
    if k <= 0 or len(vectors) == 0:
        return []
    pairs = _nearest(index, turn_ids, vectors, k)
    groups: list[tuple[tuple[int, ...], np.ndarray]] = []
    if conversations is not None:
        groups += [((int(c),), conversations == c) for c in np.unique(conversations)]
        for circle in set((circles or {}).values()):
            groups.append((circle, np.isin(conversations, circle)))
    for members, own in groups:
        for key, (sim, rank) in _nearest(index.of_conversations(members), turn_ids[own], vectors[own], k).items():
            prev = pairs.get(key)
            pairs[key] = (sim, rank) if prev is None else (max(prev[0], sim), min(prev[1], rank))
    return [(src, dst, "semantic", round(sim, 6), rank) for (src, dst), (sim, rank) in pairs.items()]


def _nearest(index: NeighbourIndex, turn_ids: np.ndarray, vectors: np.ndarray,
             k: int) -> dict[tuple[int, int], tuple[float, int]]:
    """(new cue's turn, neighbour's turn) → (best similarity, best rank) over each new cue's top-k."""
    n, held = len(vectors), index.size
    best = _TopK(n, k)
    rows_per_block = max(1, min(n, MAX_BLOCK_CELLS // COLUMNS))
    first = 0
    for block_turns, block in index.blocks():
        columns = np.arange(first, first + len(block))
        for lo in range(0, n, rows_per_block):
            _fold(best, lo, vectors[lo:lo + rows_per_block], turn_ids[lo:lo + rows_per_block], block, block_turns,
                  columns)
        first += len(block)
    # The new cues among themselves: only cues of earlier turns, so the cues of one long turn (tens of
    # thousands of sentences) are never compared with each other; rows per block shrink as columns grow.
    lo = 0
    while lo < n:
        cols = np.flatnonzero(turn_ids < turn_ids[lo:lo + rows_per_block].max())
        rows = max(1, min(rows_per_block, MAX_BLOCK_CELLS // max(len(cols), 1)))
        cols = np.flatnonzero(turn_ids < turn_ids[lo:lo + rows].max())
        if len(cols):
            _fold(best, lo, vectors[lo:lo + rows], turn_ids[lo:lo + rows], vectors[cols], turn_ids[cols], held + cols)
        lo += rows
    column_turns = np.concatenate([index.turn_ids[:held], turn_ids])
    pairs: dict[tuple[int, int], tuple[float, int]] = {}
    for row in range(n):
        src = int(turn_ids[row])
        for rank, (sim, column) in enumerate(zip(best.sims[row].tolist(), best.cols[row].tolist(), strict=True),
                                             start=1):
            if sim == -np.inf:
                break
            key = (src, int(column_turns[column]))
            prev = pairs.get(key)
            if prev is None:
                pairs[key] = (sim, rank)
            else:  # a turn reached by several of the cue's neighbours: its best similarity and rank
                pairs[key] = (max(prev[0], sim), min(prev[1], rank))
    return pairs


def _fold(best: _TopK, lo: int, queries: np.ndarray, query_turns: np.ndarray, block: np.ndarray,
          block_turns: np.ndarray, columns: np.ndarray) -> None:
    """Similarities of `queries` (new cues lo…) with `block` (candidate cues, at `columns`), those of a turn
    not earlier than the query's masked, folded into `best`."""
    sims = queries @ block.T
    if block_turns.max() >= query_turns.min():
        sims[block_turns[None, :] >= query_turns[:, None]] = -np.inf
    best.merge(lo, sims, columns)
