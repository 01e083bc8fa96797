"""Do sqlite-vec 0.1.10's ANN indexes find real cue vectors as well as an exact search? (issue 34)

    python bench/experiments/ann_sqlite_vec.py FOLDER [DISKANN_CUES]

FOLDER holds three arrays taken from a memory of real chats (the 500 ShareGPT chats of bench/corpus.py,
ingested by bench_history.py): `codes.npy` (every cue's int8 code), `ids.npy` (their cue ids) and `qv.npy`
(question vectors: first user sentences of held-out chats). Needs sqlite-vec 0.1.10 (a pre-release:
`pip install sqlite-vec==0.1.10a4` in a venv of its own). Each index type is built in a file in FOLDER from
the decoded, normalised vectors and asked for each question's top 100, against the exact top 100: mean
overlap, its 10th percentile, p50 milliseconds. DiskANN builds slowly, so it gets the first DISKANN_CUES
cues only (default: all), and stops adding after 600 s.

Result (115,247 cues, load ~8.5 on 2 cores): rescore(bit) 0.948 at p50 853 ms; rescore(int8) 0.997 at
1,225 ms; DiskANN 0.635 on 20,000 cues after 330 s of building. The in-memory view's sign-bit prefilter
rescored exactly does better (bench_memory_scale.py), so cuemem does not use them (RESULTS.md).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import sqlite_vec
from pysqlite3 import dbapi2 as sqlite3

K = 100
INDEXES = {
    "rescore_bit": "indexed by rescore(quantizer=bit, oversample=8)",
    "rescore_int8": "indexed by rescore(quantizer=int8, oversample=8)",
    "diskann": "indexed by diskann(neighbor_quantizer=binary, n_neighbors=72, search_list_size=128)",
}


def main(folder: Path, diskann_cues: int | None) -> None:
    codes, ids, questions = (np.load(folder / f"{name}.npy") for name in ("codes", "ids", "qv"))
    vectors = codes.astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for name, index in INDEXES.items():
        path = folder / f"{name}.db"
        path.unlink(missing_ok=True)
        conn = sqlite3.connect(path)
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(cue_id integer primary key, "
                     f"embedding float[{vectors.shape[1]}] distance_metric=cosine {index})")
        n = min(diskann_cues or len(ids), len(ids)) if name == "diskann" else len(ids)
        started = time.time()
        for lo in range(0, n, 5000):
            hi = min(lo + 5000, n)
            conn.executemany("INSERT INTO v(cue_id, embedding) VALUES (?, ?)",
                             [(int(i), v.tobytes()) for i, v in zip(ids[lo:hi], vectors[lo:hi], strict=True)])
            conn.commit()
            if name == "diskann" and time.time() - started > 600:
                n = hi
                break
        build = time.time() - started
        overlap, latency = [], []
        for q in questions:
            truth = set(ids[:n][np.argsort(-(vectors[:n] @ q))[:K]].tolist())
            t0 = time.time()
            rows = conn.execute("SELECT cue_id FROM v WHERE embedding MATCH ? AND k = ?",
                                (q.astype(np.float32).tobytes(), K)).fetchall()
            latency.append(time.time() - t0)
            overlap.append(len({row[0] for row in rows} & truth) / K)
        conn.close()
        print(f"{name}: {n} cues, built in {build:.1f} s, {os.path.getsize(path) / 1e6:.1f} MB, overlap "
              f"{np.mean(overlap):.3f} (p10 {np.percentile(overlap, 10):.3f}), p50 {1000 * np.median(latency):.1f} ms",
              flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else None)
