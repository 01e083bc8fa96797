"""KNN + one-hop expansion in one conversation holding N synthetic cues (default 1,000,000).

Vectors are random unit vectors (the worst case for any index: no clusters). The store's own
`knn_cues` (vec0 float, cosine) and `neighbours` are timed against an exact NumPy search over the same
vectors held in memory. A prototype of the proposed fix, a `bit[384]` vec0 table searched for 8·k
candidates then re-scored in float, is timed beside them; its SQL lives here, not in the store,
because the product does not use it yet.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cuemem_cli.store import NewTurn, Store

DIM = 384
CUES_PER_TURN = 4


def build(store: Store, n: int, rng: np.random.Generator) -> np.ndarray:
    store.bind_embedder("synthetic", DIM, "random")
    matrix = rng.standard_normal((n, DIM)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
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
    path = Path(tempfile.mkdtemp(prefix="cuemem-million-")) / "m.db"
    store = Store.open(path)
    start = time.perf_counter()
    matrix = build(store, n_cues, rng)
    build_s = time.perf_counter() - start
    cid = store.conversation_id("big")
    qs = rng.standard_normal((n_queries, DIM)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    k = 20
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
    result = {
        "cues": n_cues, "build_s": round(build_s, 1),
        "vec0_float_knn_plus_expansion_p50_ms": round(statistics.median(vec_ms), 1),
        "numpy_exact_in_memory_p50_ms": round(statistics.median(exact_ms), 1),
        "ratio_vec0_to_numpy": round(statistics.median(vec_ms) / statistics.median(exact_ms), 2),
        "vec0_float_overlap_with_exact": round(float(np.mean(overlap)), 3),
        "bit_prototype": bit,
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


if __name__ == "__main__":
    main(*sys.argv[1:])
