"""Approximate nearest neighbours for the ingest's semantic edges, measured on real cue vectors (issue 58).

    python bench/experiments/bench_ann_edges.py MEMORY.db [--queries 5000] [--k 5] [--only ivf,hnswlib,...]
        [--out results/ann_edges.json]

MEMORY.db is a memory built by `cuemem ingest` (e.g. the 500-chat ShareGPT export: bench/README.md). Its cue
vectors are read back as the ingest holds them (int8 codes, `Store.cue_codes`), in cue id order; the last
`--queries` cues play the new cues of a batch and every cue of an earlier turn is the memory they link to,
as ingest/graph.py does. Truth is the exact top-k by cosine (graph._TopK's order: similarity, then the
earlier cue). For each candidate index: the time to build it over the memory's cues (one thread), the time
to search the queries (one thread), and recall = the share of each query's exact top-k cues it returns
(mean; and p10 over queries). Printed as JSON, one record per setting.

Candidates: `ivf` (this repository's own inverted file in NumPy: k-means cells, the queries' nearest cells
scanned exactly), `hnswlib`, `usearch` (int8 and float32 storage), `faiss` (HNSW flat, IVF flat), and, when
importable from `--sqlite-vec-path` (a `pip install --target` of sqlite-vec 0.1.10a4, kept apart from the
0.1.9 cuemem runs on), sqlite-vec's `rescore` and `diskann` vec0 indexes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from cuemem_cli.store.sqlite import SQLiteStore
from cuemem_cli.store.vectors import decode


def load(db: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    store = SQLiteStore.open(db, create=False, readonly=True)
    try:
        dim = int(store.get_meta("embedding_dim") or 384)
        codes = store.cue_codes(dim)
    finally:
        store.close()
    return codes.cue_ids, codes.turn_ids, codes.codes


def exact(held: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Row indexes of each query's exact top-k among `held` (ties: the earlier row)."""
    out = np.zeros((len(queries), k), dtype=np.int64)
    for lo in range(0, len(queries), 256):
        sims = queries[lo:lo + 256] @ held.T
        top = np.argpartition(-sims, k, axis=1)[:, :k + 1]
        part = np.take_along_axis(sims, top, axis=1)
        order = np.lexsort((top, -part))[:, :k]
        out[lo:lo + 256] = np.take_along_axis(top, order, axis=1)
    return out


def recall(found: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    hits = np.array([len(set(f.tolist()) & set(t.tolist())) / len(t) for f, t in zip(found, truth, strict=True)])
    return {"recall": round(float(hits.mean()), 4), "recall_p10": round(float(np.percentile(hits, 10)), 3)}


def kmeans(vectors: np.ndarray, cells: int, iterations: int = 8, seed: int = 58) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sample = vectors[rng.choice(len(vectors), min(len(vectors), cells * 40), replace=False)]
    centroids = sample[rng.choice(len(sample), cells, replace=False)].copy()
    for _ in range(iterations):
        assign = np.argmax(sample @ centroids.T, axis=1)
        for c in range(cells):
            members = sample[assign == c]
            if len(members):
                mean = members.sum(axis=0)
                centroids[c] = mean / (np.linalg.norm(mean) or 1.0)
    return centroids.astype(np.float32)


def ivf(held: np.ndarray, queries: np.ndarray, k: int, cells: int, probes: list[int]) -> list[dict[str, Any]]:
    t0 = time.perf_counter()
    centroids = kmeans(held, cells)
    assign = np.concatenate([np.argmax(held[lo:lo + 8192] @ centroids.T, axis=1) for lo in range(0, len(held), 8192)])
    order = np.argsort(assign, kind="stable")
    bounds = np.searchsorted(assign[order], np.arange(cells + 1))
    build = time.perf_counter() - t0
    out = []
    for probe in probes:
        t1 = time.perf_counter()
        near = np.argpartition(-(queries @ centroids.T), probe - 1, axis=1)[:, :probe]
        found = np.zeros((len(queries), k), dtype=np.int64)
        best = np.full((len(queries), k), -np.inf, dtype=np.float32)
        for cell in range(cells):
            rows = np.flatnonzero((near == cell).any(axis=1))
            members = order[bounds[cell]:bounds[cell + 1]]
            if not len(rows) or not len(members):
                continue
            sims = queries[rows] @ held[members].T
            both_s = np.concatenate([best[rows], sims], axis=1)
            both_i = np.concatenate([found[rows], np.broadcast_to(members, sims.shape)], axis=1)
            top = np.argsort(-both_s, axis=1, kind="stable")[:, :k]
            best[rows] = np.take_along_axis(both_s, top, axis=1)
            found[rows] = np.take_along_axis(both_i, top, axis=1)
        search = time.perf_counter() - t1
        sizes = np.diff(bounds)
        scanned = float(np.mean([sizes[n].sum() for n in near]))
        out.append({"index": f"ivf cells={cells} probes={probe}", "build_s": round(build, 2),
                    "search_s": round(search, 2), "candidates_per_query": round(scanned), "found": found})
    return out


def hnswlib_runs(held, queries, k, m, ef_c, efs):
    import hnswlib

    t0 = time.perf_counter()
    index = hnswlib.Index(space="ip", dim=held.shape[1])
    index.init_index(max_elements=len(held), ef_construction=ef_c, M=m)
    index.set_num_threads(1)
    index.add_items(held, np.arange(len(held)))
    build = time.perf_counter() - t0
    out = []
    for ef in efs:
        index.set_ef(ef)
        t1 = time.perf_counter()
        labels, _ = index.knn_query(queries, k=k)
        out.append({"index": f"hnswlib M={m} ef_construction={ef_c} ef={ef}", "build_s": round(build, 2),
                    "search_s": round(time.perf_counter() - t1, 2), "found": labels.astype(np.int64)})
    return out


def usearch_runs(held, queries, k, dtype, m, ef_add, efs):
    from usearch.index import Index

    t0 = time.perf_counter()
    index = Index(ndim=held.shape[1], metric="cos", dtype=dtype, connectivity=m, expansion_add=ef_add)
    index.add(np.arange(len(held)), held, threads=1)
    build = time.perf_counter() - t0
    out = []
    for ef in efs:
        index.expansion_search = ef
        t1 = time.perf_counter()
        found = index.search(queries, k, threads=1)
        out.append({"index": f"usearch {dtype} M={m} ef_add={ef_add} ef={ef}", "build_s": round(build, 2),
                    "search_s": round(time.perf_counter() - t1, 2), "bytes": index.memory_usage,
                    "found": np.asarray(found.keys, dtype=np.int64)})
    return out


def faiss_runs(held, queries, k):
    import faiss

    faiss.omp_set_num_threads(1)
    out = []
    t0 = time.perf_counter()
    index = faiss.IndexHNSWFlat(held.shape[1], 16, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 100
    index.add(held)
    build = time.perf_counter() - t0
    for ef in (32, 64, 128):
        index.hnsw.efSearch = ef
        t1 = time.perf_counter()
        _, found = index.search(queries, k)
        out.append({"index": f"faiss HNSWFlat M=16 efC=100 ef={ef}", "build_s": round(build, 2),
                    "search_s": round(time.perf_counter() - t1, 2), "found": found.astype(np.int64)})
    cells = 1024
    t0 = time.perf_counter()
    quantizer = faiss.IndexFlatIP(held.shape[1])
    index = faiss.IndexIVFFlat(quantizer, held.shape[1], cells, faiss.METRIC_INNER_PRODUCT)
    index.train(held[np.random.default_rng(58).choice(len(held), min(len(held), cells * 40), replace=False)])
    index.add(held)
    build = time.perf_counter() - t0
    for probe in (8, 16, 32):
        index.nprobe = probe
        t1 = time.perf_counter()
        _, found = index.search(queries, k)
        out.append({"index": f"faiss IVFFlat cells={cells} probes={probe}", "build_s": round(build, 2),
                    "search_s": round(time.perf_counter() - t1, 2), "found": found.astype(np.int64)})
    return out


def sqlite_vec_runs(held_codes, query_codes, k, path: str):
    """sqlite-vec 0.1.10's ANN indexes on a temporary database (held as int8 codes, as cuemem stores them)."""
    sys.path.insert(0, path)
    import sqlite_vec
    from pysqlite3 import dbapi2 as sqlite3

    out = []
    dim = held_codes.shape[1]
    for name, clause in (("rescore int8 oversample=8", "indexed by rescore(quantizer=int8, oversample=8)"),
                         ("rescore bit oversample=8", "indexed by rescore(quantizer=bit, oversample=8)"),
                         ("diskann int8", "indexed by diskann(neighbor_quantizer=int8)")):
        conn = sqlite3.connect(":memory:")
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        try:
            conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(id INTEGER PRIMARY KEY, embedding float[{dim}]"
                         f" distance_metric=cosine {clause})")
        except Exception as exc:  # an alpha: say what it refused
            out.append({"index": f"sqlite-vec {sqlite_vec.__version__} {name}", "error": str(exc)})
            continue
        held = decode(held_codes)
        t0 = time.perf_counter()
        conn.executemany("INSERT INTO v(id, embedding) VALUES (?, ?)",
                         ((i, held[i].tobytes()) for i in range(len(held))))
        build = time.perf_counter() - t0
        queries = decode(query_codes)
        t1 = time.perf_counter()
        found = np.array([[r[0] for r in conn.execute("SELECT id FROM v WHERE embedding MATCH ? AND k = ?",
                                                       (q.tobytes(), k))] for q in queries], dtype=np.int64)
        out.append({"index": f"sqlite-vec {sqlite_vec.__version__} {name}", "build_s": round(build, 2),
                    "search_s": round(time.perf_counter() - t1, 2), "found": found})
        conn.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--only", default="ivf,hnswlib,usearch,faiss,sqlite-vec")
    parser.add_argument("--sqlite-vec-path", default="")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    _, turn_ids, codes = load(args.db)
    first_query_turn = turn_ids[-args.queries]
    held_rows = np.flatnonzero(turn_ids < first_query_turn)
    query_rows = np.arange(len(turn_ids) - args.queries, len(turn_ids))
    held, queries = decode(codes[held_rows]), decode(codes[query_rows])
    only = set(args.only.split(","))
    t0 = time.perf_counter()
    truth = exact(held, queries, args.k)
    runs: list[dict[str, Any]] = [{"index": "exact (NumPy matmul, one thread)", "build_s": 0.0,
                                   "search_s": round(time.perf_counter() - t0, 2), "found": truth}]
    if "ivf" in only:
        for cells in (256, 1024):
            runs += ivf(held, queries, args.k, cells, [4, 8, 16, 32])
    if "hnswlib" in only:
        runs += hnswlib_runs(held, queries, args.k, 16, 100, [32, 64, 128])
    if "usearch" in only:
        runs += usearch_runs(held, queries, args.k, "i8", 16, 128, [32, 64, 128])
        runs += usearch_runs(held, queries, args.k, "f32", 16, 128, [64])
    if "faiss" in only:
        runs += faiss_runs(held, queries, args.k)
    if "sqlite-vec" in only and args.sqlite_vec_path:
        runs += sqlite_vec_runs(codes[held_rows], codes[query_rows], args.k, args.sqlite_vec_path)
    results = []
    for run in runs:
        found = run.pop("found", None)
        if found is not None:
            run.update(recall(found, truth))
            run["ms_per_query"] = round(1000 * run["search_s"] / len(queries), 3)
        results.append(run)
        print(json.dumps(run), flush=True)
    summary = {"db": str(args.db), "held_cues": len(held), "queries": len(queries), "k": args.k, "runs": results}
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
