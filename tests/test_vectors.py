"""int8 storage of vectors (store/vectors.py): what a store gives back for the model's vectors."""

from __future__ import annotations

import numpy as np

from cuemem_cli.store import vectors


def test_codes_keep_the_direction_of_real_minilm_vectors(embedder):
    texts = ["I adopted a beagle last weekend.", "Leo started at Fernwood Robotics in June.", "ok", "Denver!"]
    floats = embedder.embed(texts)
    codes = vectors.encode(floats)
    assert codes.dtype == np.int8 and codes.shape == floats.shape
    assert (np.abs(codes).max(axis=1) == 127).all()  # each vector uses the whole int8 range
    back = vectors.decode(codes)
    assert np.allclose(np.linalg.norm(back, axis=1), 1.0, atol=1e-6)
    assert (np.einsum("ij,ij->i", back, floats) > 0.9999).all()
    sims, approx = floats @ floats.T, back @ back.T
    assert np.abs(sims - approx).max() < 0.003


def test_a_roundtrip_is_stable_and_zero_stays_zero():
    rng = np.random.default_rng(3)
    floats = rng.normal(size=(50, 384)).astype(np.float32)
    once = vectors.roundtrip(floats)
    assert np.array_equal(vectors.encode(once), vectors.encode(floats))  # encode(decode(c)) == c
    assert np.array_equal(vectors.roundtrip(once), once)
    zero = vectors.roundtrip(np.zeros((1, 384), dtype=np.float32))
    assert not zero.any()
    assert vectors.from_blobs([vectors.blob(floats[0])], 384).shape == (1, 384)
    assert vectors.from_blobs([], 384).shape == (0, 384)


def test_sign_distances_count_the_differing_signs():
    rng = np.random.default_rng(7)
    for dim in (384, 100, 64):
        codes = vectors.encode(rng.standard_normal((300, dim)).astype(np.float32))
        query = rng.standard_normal(dim).astype(np.float32)
        want = ((codes > 0) != (query > 0)).sum(axis=1)
        assert vectors.hamming(vectors.signs(codes), vectors.signs(query)[0], block=64).tolist() == want.tolist()


def test_the_sign_prefilter_breaks_a_tie_by_id_whatever_the_order():
    """Cues held in another order (SQLite's per-turn table, the view's cue-id order) give the same candidates."""
    rng = np.random.default_rng(8)
    codes = np.repeat(vectors.encode(rng.standard_normal((20, 64)).astype(np.float32)), 5, axis=0)  # ties everywhere
    ids = np.arange(100, 200)
    query = rng.standard_normal(64).astype(np.float32)
    table = vectors.signs(codes)
    picked = set(ids[vectors.nearest_signs(table, ids, query, 12)].tolist())
    order = rng.permutation(100)
    assert set(ids[order][vectors.nearest_signs(table[order], ids[order], query, 12)].tolist()) == picked
    distance = vectors.hamming(table, vectors.signs(query)[0])
    assert len(picked) == 12 and max(distance[ids.searchsorted(sorted(picked))]) <= sorted(distance)[11]
