"""KNN + one-hop expansion in one conversation holding N synthetic cues (default 1,000,000).

Synthetic cues are clustered like real ones: 2,000 topics, each cue the unit vector of its topic plus
Gaussian noise (cosine ≈ 0.7 to its topic, ≈ 0.5 to a cue of the same topic, ≈ 0 across topics, as
LoCoMo's MiniLM cue vectors roughly are); each question is a fresh draw around one topic. Uniform
random vectors, the worst case for any index, were measured in stop 8 (bit prototype overlap 0.12).

Timed against an exact NumPy search over the same vectors held in memory:
- the store's own `knn_cues` (vec0 float, cosine, partition = conversation) plus `neighbours`;
- prototype 1: a `bit[384]` vec0 table searched for 8·k candidates, re-scored in float;
- prototype 2: IVF on vec0 partitions: k-means cells (√N of them, trained on a sample), one vec0
  partition per cell, the query searched in its `nprobe` nearest cells (`cell IN (…)` returns k rows
  per cell) and merged; exact float distances inside the probed cells.
The prototypes' SQL lives here, not in the store, because the product does not use them yet.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cuemem_cli.config import DEFAULT_TOP_M
from cuemem_cli.store import NewTurn, Store

DIM = 384
CUES_PER_TURN = 4


TOPICS = 2_000
NOISE = 0.05  # per dimension: |noise| ≈ 0.05·√384 ≈ 0.98, so cos(cue, topic) ≈ 0.71, cos(cue, cue) ≈ 0.5 within a topic


def clustered(rng: np.random.Generator, n: int, centres: np.ndarray) -> np.ndarray:
    picks = rng.integers(0, len(centres), n)
    out = centres[picks] + rng.standard_normal((n, DIM)).astype(np.float32) * NOISE
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def build(store: Store, n: int, rng: np.random.Generator, centres: np.ndarray) -> np.ndarray:
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
    n_cues, n_queries = int(n), int(queries)
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((TOPICS, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    path = Path(tempfile.mkdtemp(prefix="cuemem-million-")) / "m.db"
    store = Store.open(path)
    start = time.perf_counter()
    matrix = build(store, n_cues, rng, centres)
    build_s = time.perf_counter() - start
    cid = store.conversation_id("big")
    qs = clustered(rng, n_queries, centres)
    k = DEFAULT_TOP_M  # what `ask` retrieves
    store.knn_cues(cid, qs[0], k)  # warm
    vec_ms, exact_ms, overlap = [], [], []
    for q in qs:
        t0 = time.perf_counter()
        hits = store.knn_cues(cid, q, k)
        store.neighbours(list({c.turn_id for c, _ in hits}), 1, 2)
        vec_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        top = np.argpartition(-(matrix @ q), k)[:k]
        exact_ms.append((time.perf_counter() - t0) * 1000)
        overlap.append(len({c.id - 1 for c, _ in hits} & set(top.tolist())) / k)
    bit = bit_prototype(store, cid, matrix, qs, k)
    ivf = ivf_prototype(store, matrix, qs, k, rng)
    result = {
        "cues": n_cues, "build_s": round(build_s, 1),
        "vec0_float_knn_plus_expansion_p50_ms": round(statistics.median(vec_ms), 1),
        "numpy_exact_in_memory_p50_ms": round(statistics.median(exact_ms), 1),
        "ratio_vec0_to_numpy": round(statistics.median(vec_ms) / statistics.median(exact_ms), 2),
        "vec0_float_overlap_with_exact": round(float(np.mean(overlap)), 3),
        "bit_prototype": bit,
        "ivf_prototype": ivf,
        "goal": "p50 ≤ 60 ms with top-m overlap ≥ 0.95",
        "met": statistics.median(vec_ms) <= 60 and float(np.mean(overlap)) >= 0.95,
    }
    print(json.dumps(result, indent=2))
    store.close()
    return result


def bit_prototype(store: Store, cid: int, matrix: np.ndarray, qs: np.ndarray, k: int) -> dict:
    """Binary-quantised vec0 search for 8·k candidates, re-scored exactly in float."""
    conn = store.conn
    start = time.perf_counter()
    conn.execute(f"CREATE VIRTUAL TABLE bits USING vec0(cue_id INTEGER PRIMARY KEY, "
                 f"conversation_id INTEGER PARTITION KEY, embedding bit[{DIM}])")
    with store.transaction():
        for lo in range(0, len(matrix), 50_000):
            block = np.packbits(matrix[lo:lo + 50_000] > 0, axis=1)
            conn.executemany("INSERT INTO bits(cue_id, conversation_id, embedding) VALUES (?, ?, vec_bit(?))",
                             [(lo + i + 1, cid, row.tobytes()) for i, row in enumerate(block)])
    build_s = time.perf_counter() - start
    times, overlap = [], []
    for q in qs:
        t0 = time.perf_counter()
        rows = conn.execute("SELECT cue_id FROM bits WHERE embedding MATCH vec_bit(?) AND k = ? AND conversation_id = ?",
                            (np.packbits(q > 0).tobytes(), 8 * k, cid)).fetchall()
        cand = np.array([r[0] - 1 for r in rows])
        vecs = conn.execute("SELECT cue_id, embedding FROM cue_vectors WHERE cue_id IN (SELECT value FROM json_each(?))",
                            (json.dumps((cand + 1).tolist()),)).fetchall()
        ids = np.array([r[0] - 1 for r in vecs])
        sims = np.frombuffer(b"".join(r[1] for r in vecs), dtype=np.float32).reshape(len(vecs), DIM) @ q
        chosen = set(ids[np.argsort(-sims)[:k]].tolist())
        times.append((time.perf_counter() - t0) * 1000)
        exact = set(np.argpartition(-(matrix @ q), k)[:k].tolist())
        overlap.append(len(chosen & exact) / k)
    return {"build_s": round(build_s, 1), "p50_ms": round(statistics.median(times), 1),
            "overlap_with_exact": round(float(np.mean(overlap)), 3), "candidates": 8 * k}


def ivf_prototype(store: Store, matrix: np.ndarray, qs: np.ndarray, k: int, rng: np.random.Generator,
                  nprobe: int = 16) -> dict:
    """Inverted-file index on vec0 partitions, exact float search inside the probed cells."""
    conn = store.conn
    start = time.perf_counter()
    cells = max(1, int(np.sqrt(len(matrix))))
    centroids = kmeans(matrix[rng.choice(len(matrix), min(len(matrix), 50 * cells), replace=False)], cells, rng)
    assign = np.concatenate([np.argmax(matrix[lo:lo + 50_000] @ centroids.T, axis=1)
                             for lo in range(0, len(matrix), 50_000)])
    train_s = time.perf_counter() - start
    conn.execute(f"CREATE VIRTUAL TABLE ivf USING vec0(cue_id INTEGER PRIMARY KEY, cell INTEGER PARTITION KEY, "
                 f"embedding float[{DIM}] distance_metric=cosine)")
    with store.transaction():
        for lo in range(0, len(matrix), 50_000):
            conn.executemany("INSERT INTO ivf(cue_id, cell, embedding) VALUES (?, ?, ?)",
                             [(lo + i + 1, int(assign[lo + i]), row.tobytes())
                              for i, row in enumerate(matrix[lo:lo + 50_000])])
    build_s = time.perf_counter() - start
    times, overlap = [], []
    for q in qs:
        t0 = time.perf_counter()
        probe = np.argpartition(-(centroids @ q), nprobe)[:nprobe]
        cells_sql = ",".join(str(int(c)) for c in probe)
        rows = conn.execute(
            f"WITH hits AS (SELECT cue_id, distance FROM ivf WHERE embedding MATCH ? AND k = ? AND cell IN ({cells_sql}))"
            " SELECT h.cue_id, c.turn_id FROM hits h JOIN cues c ON c.id = h.cue_id ORDER BY h.distance LIMIT ?",
            (q.tobytes(), k, k)).fetchall()
        chosen = [cue_id for cue_id, _ in rows]
        store.neighbours(list({turn_id for _, turn_id in rows}), 1, 2)
        times.append((time.perf_counter() - t0) * 1000)
        exact = set(np.argpartition(-(matrix @ q), k)[:k].tolist())
        overlap.append(len({c - 1 for c in chosen} & exact) / k)
    return {"cells": cells, "nprobe": nprobe, "train_and_assign_s": round(train_s, 1), "build_s": round(build_s, 1),
            "p50_ms": round(statistics.median(times), 1), "overlap_with_exact": round(float(np.mean(overlap)), 3)}


def kmeans(sample: np.ndarray, cells: int, rng: np.random.Generator, rounds: int = 8) -> np.ndarray:
    """Spherical k-means (cosine): a few Lloyd rounds in NumPy, enough for an index's coarse cells."""
    centroids = sample[rng.choice(len(sample), cells, replace=False)].copy()
    for _ in range(rounds):
        nearest = np.argmax(sample @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, sample)
        empty = np.linalg.norm(sums, axis=1) == 0
        sums[empty] = sample[rng.choice(len(sample), int(empty.sum()), replace=False)]
        centroids = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    return centroids


if __name__ == "__main__":
    main(*sys.argv[1:])
