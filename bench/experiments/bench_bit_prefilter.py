"""sqlite-vec's binary prefilter + rescoring against the coarse cells (cells.py) on 1M real-like cues.

Issue 23 asks whether sqlite-vec's own quantized search — a `bit[384]` vec0 column searched by Hamming
distance, its best candidates rescored against the question — reaches top-100 overlap ≥ 0.95 with the
exact search at p50 ≤ 60 ms on a million real-like cue vectors; if so it should replace the cells.

Real-like vectors: every cue vector of a LoCoMo eval database (all ten conversations, ~27,700) is real
MiniLM output, but a million are needed. Each of the N vectors is a real cue plus a random share (0 to
0.8) of another real cue plus a little Gaussian noise (σ 0.02 per dimension), re-normalised: the
vectors stay in the space real cues span, spread the way real cues are spread (not in tight synthetic
clusters: bench_million.py's). Questions: every STEP-th LoCoMo question (default 16: ~125), names
removed as `reconstruct` embeds them. Truth: the exact float top-100 (NumPy over the whole matrix).

Both methods run on the same vectors in SQLite files: the bit search in a vec0 `bit[384]` table filled
with `vec_quantize_binary`, its candidates rescored from their int8 codes (store/vectors.py, the form cuemem
stores) read by id from a plain table; the cells through cuemem's own Store (`insert_vectors`,
`cells.build`, `cells.search`) at 16 probes (the default) and 64.

    python bench/experiments/bench_bit_prefilter.py EVAL_DB [LOCOMO_JSON] [N] [STEP]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

from cuemem_cli import cells
from cuemem_cli.store import vectors as vec
from cuemem_cli.config import DEFAULT_TOP_M
from cuemem_cli.models.embedders import get_embedder, spec_for
from cuemem_cli.text import without_names
from cuemem_cli.store.base import NewTurn, conversation_names
from cuemem_cli.store.sqlite import SQLiteStore

DIM = 384
CANDIDATES = (500, 1000, 2000)  # bit-search candidates rescored


def real_like(real: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    out = np.empty((n, DIM), dtype=np.float32)
    for lo in range(0, n, 100_000):
        m = min(100_000, n - lo)
        a, b = real[rng.integers(0, len(real), m)], real[rng.integers(0, len(real), m)]
        v = a + rng.uniform(0, 0.8, (m, 1)).astype(np.float32) * b
        v += rng.standard_normal((m, DIM)).astype(np.float32) * 0.02
        out[lo:lo + m] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return value, (time.perf_counter() - t0) * 1000


def main(db: str, locomo: str = str(Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo10.json"),
         n: str = "1000000", step: str = "16") -> dict:
    source = SQLiteStore.open(db, readonly=True)
    names = conversation_names(source)
    real = np.vstack([source.conversation_vectors(source.conversation_id(c), DIM)[3] for c in names])
    speakers = {s for c in names for s in source.speakers(source.conversation_id(c))}
    embedder = get_embedder(spec_for(source.get_meta("embedding_model")))
    source.close()
    questions = [q["question"] for c in json.loads(Path(locomo).read_text()) for q in c["qa"]][::int(step)]
    queries = embedder.embed([without_names(q, speakers) or q for q in questions])
    matrix = real_like(real, int(n), np.random.default_rng(23))
    k = DEFAULT_TOP_M
    truth = [set(np.argpartition(-(matrix @ q), k)[:k].tolist()) for q in queries]  # row numbers
    with tempfile.TemporaryDirectory(prefix="cuemem-bit-") as folder:
        bit = measure_bit(Path(folder) / "bit.db", matrix, queries, truth, k)
        cell = measure_cells(Path(folder) / "cells.db", matrix, queries, truth, k, embedder.model_id)
    result = {"cues": len(matrix), "real_cues": len(real), "questions": len(queries), "k": k,
              "bit_prefilter": bit, "cells": cell,
              "goal": "overlap ≥ 0.95 at p50 ≤ 60 ms (KNN + rescoring)"}
    print(json.dumps(result, indent=2))
    return result


def measure_bit(path: Path, matrix: np.ndarray, queries: np.ndarray, truth: list[set[int]], k: int) -> dict:
    store = SQLiteStore.open(path)  # only for its connection, which loads sqlite-vec
    conn = store.conn
    conn.execute(f"CREATE VIRTUAL TABLE bits USING vec0(embedding bit[{DIM}])")
    conn.execute("CREATE TABLE codes (id INTEGER PRIMARY KEY, code BLOB NOT NULL)")
    t0 = time.perf_counter()
    with store.transaction():
        for lo in range(0, len(matrix), 50_000):
            part = matrix[lo:lo + 50_000]
            ids = range(lo + 1, lo + 1 + len(part))  # rowid = row number + 1
            conn.executemany("INSERT INTO bits(rowid, embedding) VALUES (?, vec_quantize_binary(vec_f32(?)))",
                             [(i, v.tobytes()) for i, v in zip(ids, part, strict=True)])
            conn.executemany("INSERT INTO codes(id, code) VALUES (?, ?)",
                             [(i, c.tobytes()) for i, c in zip(ids, vec.encode(part), strict=True)])
    build_s = time.perf_counter() - t0

    def search(q: np.ndarray, candidates: int) -> tuple[list[int], float, float]:
        found, knn_ms = timed(lambda: [r[0] for r in conn.execute(
            "SELECT rowid FROM bits WHERE embedding MATCH vec_quantize_binary(vec_f32(?)) AND k = ?",
            (q.astype(np.float32).tobytes(), candidates))])

        def rescore() -> list[int]:
            rows = conn.execute("SELECT id, code FROM codes WHERE id IN (SELECT value FROM json_each(?))",
                                (orjson.dumps(found).decode(),)).fetchall()
            sims = vec.from_blobs([r[1] for r in rows], DIM) @ q
            return [rows[i][0] - 1 for i in np.argsort(-sims)[:k]]

        best, rescore_ms = timed(rescore)
        return best, knn_ms, rescore_ms

    search(queries[0], CANDIDATES[0])  # warm
    runs = []
    for candidates in CANDIDATES:
        overlap, total, knn = [], [], []
        for q, exact in zip(queries, truth, strict=True):
            best, knn_ms, rescore_ms = search(q, candidates)
            overlap.append(len(exact & set(best)) / k)
            total.append(knn_ms + rescore_ms)
            knn.append(knn_ms)
        runs.append({"candidates": candidates, "overlap": round(float(np.mean(overlap)), 3),
                     "overlap_p10": round(float(np.percentile(overlap, 10)), 3),
                     "p50_ms": round(statistics.median(total), 1),
                     "p95_ms": round(statistics.quantiles(total, n=20)[18], 1),
                     "bit_knn_p50_ms": round(statistics.median(knn), 1)})
    store.close()
    return {"build_s": round(build_s, 1), "bytes": path.stat().st_size, "runs": runs}


def measure_cells(path: Path, matrix: np.ndarray, queries: np.ndarray, truth: list[set[int]], k: int,
                  model_id: str) -> dict:
    store = SQLiteStore.open(path)
    store.bind_embedder(model_id, DIM, "copied")
    t0 = time.perf_counter()
    with store.transaction():
        cid = store.conversation_id("big", create=True)
        [tid] = store.insert_turns([NewTurn(cid, 0, "t", "x", "h", None, None, None, None, {})])
    for lo in range(0, len(matrix), 100_000):
        part = matrix[lo:lo + 100_000]
        with store.transaction():
            cue_ids = store.insert_cues(cid, [(tid, "s", "r", "o", "statement")] * len(part))
            store.insert_vectors(cid, cue_ids, part)
    with store.transaction():
        n_cells = cells.build(store, cid, DIM)
    build_s = time.perf_counter() - t0
    first = store.conn.execute("SELECT min(id) FROM cues").fetchone()[0]  # cue id = row number + first
    runs = []
    for probes in (cells.PROBES, 64):
        cells.search(store, cid, DIM, queries[0], k, probes=probes)  # warm
        overlap, took = [], []
        for q, exact in zip(queries, truth, strict=True):
            hits, ms = timed(lambda q=q, probes=probes: cells.search(store, cid, DIM, q, k, probes=probes))
            overlap.append(len(exact & {c.id - first for c, _ in hits}) / k)
            took.append(ms)
        runs.append({"probes": probes, "overlap": round(float(np.mean(overlap)), 3),
                     "overlap_p10": round(float(np.percentile(overlap, 10)), 3),
                     "p50_ms": round(statistics.median(took), 1),
                     "p95_ms": round(statistics.quantiles(took, n=20)[18], 1)})
    store.close()
    return {"cells": n_cells, "build_s": round(build_s, 1), "runs": runs}


if __name__ == "__main__":
    main(*sys.argv[1:])
