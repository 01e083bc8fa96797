"""The turn graph: temporal and semantic edges between turns of one conversation.

- Temporal: turns i and j with 0 < |i − j| ≤ w, stored in both directions (weight 1, rank |i − j|).
- Semantic: each cue links to its top-k most similar cues among the cues of *earlier* turns of the same
  conversation, mapped to turns; weight is the cosine similarity, rank the neighbour's rank (1 = best).

Why earlier turns only, where the paper takes the top-k over all cues: memory is append-only. A new
turn never rewrites the edges of old turns, so ingesting a file in one run, in several runs, or again
after a crash gives the same graph. Expansion then follows semantic edges in both directions, so an
early turn still reaches the later turns that chose it (a pair is linked when either side is in the
other's top-k over the history before the later one).

Similarities come from a NumPy matmul in blocks over the conversation's vectors (`NeighbourIndex`),
never an all-pairs Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .store import Store

BLOCK = 2048
MAX_BLOCK_CELLS = 1 << 22  # similarities per block (16 MB of float32): memory flat whatever the history


@dataclass
class NeighbourIndex:
    """The cue vectors of one conversation, kept in memory while an ingest runs."""

    turn_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    positions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))

    @classmethod
    def load(cls, store: Store, conversation_id: int, dim: int) -> NeighbourIndex:
        _, turn_ids, positions, matrix = store.conversation_vectors(conversation_id, dim)
        return cls(turn_ids, positions, matrix)

    def add(self, turn_ids: np.ndarray, positions: np.ndarray, vectors: np.ndarray) -> None:
        self.turn_ids = np.concatenate([self.turn_ids, turn_ids])
        self.positions = np.concatenate([self.positions, positions])
        # Kept, not copied: ingest hands over arrays it no longer changes (a long turn's are 150 MB).
        self.matrix = vectors if self.matrix.size == 0 else np.vstack([self.matrix, vectors])


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


def semantic_edges(
    index: NeighbourIndex, turn_ids: np.ndarray, positions: np.ndarray, vectors: np.ndarray, k: int
) -> list[tuple]:
    """Top-k earlier-turn neighbours of each new cue; call before `index.add` of the same cues."""
    if k <= 0 or len(vectors) == 0:
        return []
    all_turns = np.concatenate([index.turn_ids, turn_ids])
    all_positions = np.concatenate([index.positions, positions])
    all_vectors = vectors if index.matrix.size == 0 else np.vstack([index.matrix, vectors])
    best: dict[tuple[int, int], tuple[float, int]] = {}
    start = 0
    while start < len(vectors):
        # Only cues of earlier turns can be neighbours: the others are left out of the product rather than
        # masked in it, so the cues of one long turn (tens of thousands of sentences) are not compared
        # with each other; rows per block shrink as the columns grow, so a block stays ~MAX_BLOCK_CELLS.
        cols = np.flatnonzero(all_positions < positions[start : start + BLOCK].max())
        rows = max(1, min(BLOCK, MAX_BLOCK_CELLS // max(len(cols), 1)))
        block_positions = positions[start : start + rows]
        cols = np.flatnonzero(all_positions < block_positions.max())
        if len(cols) == 0:
            start += rows
            continue
        sims = vectors[start : start + rows] @ all_vectors[cols].T
        earlier = all_positions[cols][None, :] < block_positions[:, None]
        sims = np.where(earlier, sims, -np.inf)
        kk = min(k, sims.shape[1])
        top = np.argpartition(-sims, kk - 1, axis=1)[:, :kk] if kk < sims.shape[1] else np.tile(
            np.arange(sims.shape[1]), (len(sims), 1)
        )
        for row, picked in enumerate(top):
            src = int(turn_ids[start + row])
            order = picked[np.lexsort((picked, -sims[row, picked]))]  # equal cues (same text): earlier cue first
            for rank, col in enumerate(order, start=1):
                sim = float(sims[row, col])
                if sim == -np.inf:
                    break
                key = (src, int(all_turns[cols[col]]))
                prev = best.get(key)
                if prev is None or sim > prev[0]:
                    best[key] = (sim, rank if prev is None else min(rank, prev[1]))
                elif rank < prev[1]:
                    best[key] = (prev[0], rank)
        start += rows
    return [(src, dst, "semantic", round(sim, 6), rank) for (src, dst), (sim, rank) in best.items()]
