"""Coarse cells for very large conversations: an inverted-file index on vec0 partitions.

vec0's search in a conversation is an exact scan of its partition: ~3 ms for a LoCoMo conversation's
3,000 cues, ~800 ms for 1,000,000 (bench/RESULTS.md). Once a conversation holds MIN_CUES cues, its
cue vectors are also grouped into ~√N cells by spherical k-means, each cell a vec0 partition of the
table `cue_cells`; a question is searched exactly inside the PROBES cells whose centroids are
nearest to it. Measured on 1M clustered synthetic cues: the same top-100 as the exact scan
(overlap 1.0) in tens of milliseconds (bench/bench_million.py).

Smaller conversations never get cells: below MIN_CUES the exact scan is already fast and exact.
New cues join the cell of their nearest centroid as they are ingested; when a conversation has
grown to GROWTH times the size its cells were built for, they are rebuilt (so the rebuilds cost
O(N) in all). A rebuild holds the conversation's vectors in memory (1.5 KB a cue).
"""

from __future__ import annotations

import numpy as np

from .records import Cue
from .store import Store

MIN_CUES = 100_000
PROBES = 16
GROWTH = 4  # cells = √N at build, so a rebuild comes when √N has doubled
SAMPLE_PER_CELL = 50
ROUNDS = 8


def kmeans(sample: np.ndarray, cells: int, rng: np.random.Generator, rounds: int = ROUNDS) -> np.ndarray:
    """Spherical k-means (cosine): a few Lloyd rounds in NumPy, enough for an index's coarse cells."""
    centroids = sample[rng.choice(len(sample), cells, replace=False)].copy()
    for _ in range(rounds):
        nearest = nearest_cell(sample, centroids)
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, sample)
        empty = np.linalg.norm(sums, axis=1) == 0
        sums[empty] = sample[rng.choice(len(sample), int(empty.sum()), replace=False)]
        centroids = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    return centroids.astype(np.float32)


def nearest_cell(vectors: np.ndarray, centroids: np.ndarray, block: int = 50_000) -> np.ndarray:
    return np.concatenate([np.argmax(vectors[lo:lo + block] @ centroids.T, axis=1)
                           for lo in range(0, len(vectors), block)]) if len(vectors) else np.zeros(0, dtype=np.int64)


def build(store: Store, conversation_id: int, dim: int, seed: int = 0) -> int:
    """(Re)build a conversation's cells from all its cue vectors; call inside `transaction()`."""
    cue_ids, _, _, matrix = store.conversation_vectors(conversation_id, dim)
    rng = np.random.default_rng(seed)
    cells = max(1, int(np.sqrt(len(matrix))))
    sample = matrix[rng.choice(len(matrix), min(len(matrix), SAMPLE_PER_CELL * cells), replace=False)]
    centroids = kmeans(sample, cells, rng)
    store.replace_cells(conversation_id, centroids, cue_ids, nearest_cell(matrix, centroids), matrix)
    return cells


def add(store: Store, conversation_id: int, dim: int, cue_ids: np.ndarray, vectors: np.ndarray) -> None:
    """Keep a conversation's cells up to date after new cues were stored (inside the same transaction)."""
    cell_ids, centroids = store.cell_centroids(conversation_id, dim)
    count = store.cue_count(conversation_id)
    if len(cell_ids) and count <= GROWTH * len(cell_ids) ** 2:
        store.insert_cell_vectors(cue_ids, cell_ids[nearest_cell(vectors, centroids)], vectors)
    elif count >= MIN_CUES:
        build(store, conversation_id, dim)


def search(store: Store, conversation_id: int, dim: int, vector: np.ndarray, k: int,
           probes: int | None = None) -> list[tuple[Cue, float]]:
    """Top-k cues: exact vec0 scan, or the `probes` (PROBES) nearest cells once the conversation has cells."""
    cell_ids, centroids = store.cell_centroids(conversation_id, dim)
    if not len(cell_ids):
        return store.knn_cues(conversation_id, vector, k)
    store.map_file()
    probes = min(probes or PROBES, len(cell_ids))
    nearest = np.argpartition(-(centroids @ vector.astype(np.float32)), probes - 1)[:probes]
    return store.knn_cues_in_cells(cell_ids[nearest].tolist(), vector, k)
