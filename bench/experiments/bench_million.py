"""KNN + one-hop expansion in one conversation holding N synthetic cues (default 1,000,000).

Synthetic cues are clustered like real ones: 2,000 topics, each cue the unit vector of its topic plus
Gaussian noise (cosine ≈ 0.7 to its topic, ≈ 0.5 to a cue of the same topic, ≈ 0 across topics, as
LoCoMo's MiniLM cue vectors roughly are); each question is a fresh draw around one topic. Uniform
random vectors, the worst case for any index, were measured in stop 8 (a bit-vector index: overlap 0.12).

Timed against an exact NumPy search over the same vectors held in memory:
- the product's path: `cells.search` (the conversation's coarse cells, built by `cells.build` exactly
  as ingest builds them past `cells.MIN_CUES`; √N cells, `cells.PROBES` probed) plus `Store.neighbours`;
- the exact vec0 scan of the whole partition (`Store.knn_cues`), what conversations below the
  threshold use, for comparison.
Stop 9 also measured a `bit[384]` vec0 index re-scored in float (p50 3.5 s): not worth keeping.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cuemem_cli import cells
from cuemem_cli.config import DEFAULT_TOP_M
from cuemem_cli.store.base import NewTurn
from cuemem_cli.store.sqlite import SQLiteStore

DIM = 384
CUES_PER_TURN = 4


TOPICS = 2_000
NOISE = 0.05  # per dimension: |noise| ≈ 0.05·√384 ≈ 0.98, so cos(cue, topic) ≈ 0.71, cos(cue, cue) ≈ 0.5 within a topic


def clustered(rng: np.random.Generator, n: int, centres: np.ndarray) -> np.ndarray:
    picks = rng.integers(0, len(centres), n)
    out = centres[picks] + rng.standard_normal((n, DIM)).astype(np.float32) * NOISE
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def build(store: SQLiteStore, n: int, rng: np.random.Generator, centres: np.ndarray) -> np.ndarray:
    store.bind_embedder("synthetic", DIM, "random")
    matrix = np.vstack([clustered(rng, min(100_000, n - lo), centres) for lo in range(0, n, 100_000)])
    with store.transaction():
        cid = store.conversation_id("big", create=True)
    turns = n // CUES_PER_TURN
    batch = 20_000
    for start in range(0, turns, batch):
        with store.transaction():
            ids = store.insert_turns([NewTurn(cid, p, f"t{p}", f"turn {p}", "h", None, None, None, None, {})
                                      for p in range(start, min(turns, start + batch))])
            rows = [(tid, "s", "r", "o", "triple") for tid in ids for _ in range(CUES_PER_TURN)]
            cue_ids = store.insert_cues(cid, rows)
            store.insert_vectors(cid, cue_ids, matrix[start * CUES_PER_TURN: start * CUES_PER_TURN + len(cue_ids)])
            edges = [(ids[i], ids[i - 1], "temporal", 1.0, 1) for i in range(1, len(ids))]
            edges += [(tid, int(ids[(i * 7919) % len(ids)]), "semantic", 0.5, 1) for i, tid in enumerate(ids)]
            store.insert_edges(edges)
    return matrix


def main(n: str = "1000000", queries: str = "30") -> dict:
    with tempfile.TemporaryDirectory(prefix="cuemem-million-") as folder:  # ~4 GB at a million cues
        return measure(Path(folder) / "m.db", int(n), int(queries))


def measure(path: Path, n_cues: int, n_queries: int) -> dict:
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((TOPICS, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    store = SQLiteStore.open(path)
    start = time.perf_counter()
    matrix = build(store, n_cues, rng, centres)
    build_s = time.perf_counter() - start
    cid = store.conversation_id("big")
    assert cid is not None, "build stored the conversation"
    qs = clustered(rng, n_queries, centres)
    k = DEFAULT_TOP_M  # what `ask` retrieves
    store.knn_cues(cid, qs[0], k)  # warm
    scan_ms, exact_ms, exact_sets = [], [], []
    for q in qs:
        t0 = time.perf_counter()
        store.knn_cues(cid, q, k)
        scan_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        top = np.argpartition(-(matrix @ q), k)[:k]
        exact_ms.append((time.perf_counter() - t0) * 1000)
        exact_sets.append({int(i) + 1 for i in top})  # cue ids are row numbers + 1
    t0 = time.perf_counter()
    with store.transaction():
        n_cells = cells.build(store, cid, DIM)
    cells_build_s = time.perf_counter() - t0
    cells.search(store, cid, DIM, qs[0], k)  # warm
    cell_ms, overlap = [], []
    for q, exact in zip(qs, exact_sets, strict=True):
        t0 = time.perf_counter()
        hits = cells.search(store, cid, DIM, q, k)
        store.neighbours(list({c.turn_id for c, _ in hits}), 1, 2)
        cell_ms.append((time.perf_counter() - t0) * 1000)
        overlap.append(len({c.id for c, _ in hits} & exact) / k)
    p50 = statistics.median(cell_ms)
    result = {
        "cues": n_cues, "build_s": round(build_s, 1), "k": k,
        "cells": n_cells, "probes": cells.PROBES, "cells_build_s": round(cells_build_s, 1),
        "cells_knn_plus_expansion_p50_ms": round(p50, 1),
        "cells_knn_plus_expansion_p95_ms": round(statistics.quantiles(cell_ms, n=20)[18], 1),
        "cells_overlap_with_exact": round(float(np.mean(overlap)), 3),
        "vec0_scan_p50_ms": round(statistics.median(scan_ms), 1),
        "numpy_exact_in_memory_p50_ms": round(statistics.median(exact_ms), 1),
        "ratio_cells_to_numpy": round(p50 / statistics.median(exact_ms), 2),
        "goal": "p50 ≤ 60 ms with top-m overlap ≥ 0.95",
        "met": p50 <= 60 and float(np.mean(overlap)) >= 0.95,
    }
    print(json.dumps(result, indent=2))
    store.close()
    return result


if __name__ == "__main__":
    main(*sys.argv[1:])
