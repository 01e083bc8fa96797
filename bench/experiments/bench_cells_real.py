"""How well the coarse cells (cuemem_cli/cells.py) find real cues, not synthetic clustered ones.

bench_million.py measures the cells on synthetic cues, clustered by construction. Real MiniLM cue
vectors are far less clustered, so here every cue vector of an ingested LoCoMo database (all ten
conversations, ~27,700 cues) goes into one conversation of a fresh store, `cells.build` gives it
√N cells as ingest would, and every fourth LoCoMo question (names removed, as `reconstruct` embeds
it) is searched through `cells.search` with several probe counts, against the exact vec0 scan.
Reports top-100 overlap and the share of cues each search scanned.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from cuemem_cli import cells
from cuemem_cli.config import DEFAULT_TOP_M
from cuemem_cli.models.embedders import get_embedder, spec_for
from cuemem_cli.text import without_names
from cuemem_cli.store.base import NewTurn, conversation_names
from cuemem_cli.store.sqlite import SQLiteStore


def main(db: str, locomo: str, probes: str = "8,16,32,64") -> dict:
    source = SQLiteStore.open(db, readonly=True)
    ids = [cid for name in conversation_names(source) if (cid := source.conversation_id(name)) is not None]
    parts = [source.conversation_vectors(cid, 384)[3] for cid in ids]
    speakers = {s for cid in ids for s in source.speakers(cid)}
    embedder = get_embedder(spec_for(source.get_meta("embedding_model")))
    source.close()
    matrix = np.vstack(parts)
    with tempfile.TemporaryDirectory(prefix="cuemem-cells-") as folder:
        return measure(Path(folder) / "c.db", embedder, matrix, speakers, locomo, probes)


def measure(path: Path, embedder, matrix: np.ndarray, speakers: set[str], locomo: str, probes: str) -> dict:
    store = SQLiteStore.open(path)
    store.bind_embedder(embedder.model_id, 384, "copied")
    with store.transaction():
        cid = store.conversation_id("all-locomo", create=True)
        [tid] = store.insert_turns([NewTurn(cid, 0, "t", "x", "h", None, None, None, None, {})])
        cue_ids = store.insert_cues(cid, [(tid, "s", "r", "o", "statement")] * len(matrix))
        store.insert_vectors(cid, cue_ids, matrix)
        n_cells = cells.build(store, cid, 384)
    questions = [q["question"] for c in json.loads(Path(locomo).read_text()) for q in c["qa"]][::4]
    vectors = embedder.embed([without_names(q, speakers) or q for q in questions])
    k = DEFAULT_TOP_M
    exact = [{c.id for c, _ in store.knn_cues(cid, v, k)} for v in vectors]
    sizes = np.bincount(cells.nearest_cell(matrix, store.cell_centroids(cid, 384)[1]), minlength=n_cells)
    rows = []
    for p in (int(x) for x in probes.split(",")):
        overlap = [len(e & {c.id for c, _ in cells.search(store, cid, 384, v, k, probes=p)}) / k
                   for e, v in zip(exact, vectors, strict=True)]
        rows.append({"probes": p, "overlap": round(float(np.mean(overlap)), 3),
                     "overlap_p10": round(float(np.percentile(overlap, 10)), 3),
                     "scanned_share_approx": round(p / n_cells, 3)})
    store.close()
    result = {"cues": len(matrix), "cells": n_cells, "largest_cell": int(sizes.max()), "questions": len(questions),
              "k": k, "runs": rows}
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main(*sys.argv[1:])
