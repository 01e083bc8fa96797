"""Coarse cells (cells.py): built past a size, kept up to date by ingest and forget, searched like the scan."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest

from cuemem_cli import Memory, cells
from cuemem_cli.store import NewTurn

MAYA = Path(__file__).resolve().parent.parent / "sample_dialogues" / "maya_and_leo.jsonl"
DIM = 32


def clustered(rng, n, topics=40):
    centres = rng.standard_normal((topics, DIM)).astype(np.float32)
    out = centres[rng.integers(0, topics, n)] + rng.standard_normal((n, DIM)).astype(np.float32) * 0.1
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def cells_rows(store) -> int:
    return store.conn.execute("SELECT count(*) FROM cue_cells").fetchone()[0]


def test_cell_search_finds_what_the_exact_scan_finds(store):
    rng = np.random.default_rng(1)
    store.bind_embedder("synthetic", DIM, "test")
    matrix = clustered(rng, 4000)
    with store.transaction():
        cid = store.conversation_id("big", create=True)
        turn_ids = store.insert_turns([NewTurn(cid, p, f"t{p}", "x", "h", None, None, "A", None, {})
                                       for p in range(1000)])
        cue_ids = store.insert_cues(cid, [(turn_ids[i // 4], "A", "r", f"o{i}", "triple") for i in range(4000)])
        store.insert_vectors(cid, cue_ids, matrix)
        assert cells.build(store, cid, DIM) == 63
    assert cells_rows(store) == 4000
    overlaps = []
    for q in clustered(np.random.default_rng(2), 20):
        exact = {cue.id for cue, _ in store.knn_cues(cid, q, 50)}
        found = cells.search(store, cid, DIM, q, 50)
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        overlaps.append(len(exact & {cue.id for cue, _ in found}) / 50)
    assert np.mean(overlaps) >= 0.95


def test_ingest_builds_cells_past_the_threshold_and_keeps_them_current(tmp_path, monkeypatch, stub_models):
    monkeypatch.setattr(cells, "MIN_CUES", 150)
    lines = MAYA.read_bytes().splitlines()
    with Memory(tmp_path / "m.db") as memory:
        memory.add([orjson.loads(line) for line in lines[:30]])
        store = memory.store
        cid = store.conversation_id("maya-and-leo")
        small = store.cue_count(cid)
        assert small < 150 and len(store.cell_centroids(cid, 384)[0]) == 0

        memory.add([orjson.loads(line) for line in lines[30:]])
        count = store.cue_count(cid)
        ids, _ = store.cell_centroids(cid, 384)
        assert count >= 150 and int(np.sqrt(150)) <= len(ids) <= int(np.sqrt(count))
        assert cells_rows(store) == count

        memory.add([{"speaker": "Leo", "text": "My cousin in Lisbon just opened a tiny ceramics studio by the river.",
                     "time": "2023-07-01T10:00:00"}], conversation="maya-and-leo")
        assert cells_rows(store) == store.cue_count(cid) > count
        context = memory.context("Who opened a ceramics studio in Lisbon?")
        assert "ceramics studio" in " ".join(e.text for e in context.evidence)

        memory.forget(conversation="maya-and-leo", session="s1")
        assert cells_rows(store) == store.cue_count(cid)


@pytest.mark.slow  # its thresholds are set for the cues spaCy finds in the sample
def test_growth_rebuilds_the_cells(tmp_path, monkeypatch):
    monkeypatch.setattr(cells, "MIN_CUES", 60)
    lines = MAYA.read_bytes().splitlines()
    with Memory(tmp_path / "m.db") as memory:
        store = memory.store
        memory.add([orjson.loads(line) for line in lines[:20]])
        cid = store.conversation_id("maya-and-leo")
        first = len(store.cell_centroids(cid, 384)[0])
        assert first >= 7
        memory.add([orjson.loads(line) for line in lines[20:]])
        assert store.cue_count(cid) > cells.GROWTH * first ** 2
        rebuilt = len(store.cell_centroids(cid, 384)[0])
        assert rebuilt > first and cells_rows(store) == store.cue_count(cid)
