"""How much of ingest's embedding the sentence passes save, and whether batching by length would help (issue 36).

    python bench/experiments/embed_passes.py EXPORT.json [--turns 400]

`passes`: the first TURNS turns of a ChatGPT-shaped export, their cues extracted once (spaCy), then
embedded twice each way on one thread: a pass per distinct cue text (prepare.embed_cues' path for an
embedder without `embed_pooled`) and sentence passes (`embed_pooled`); CPU seconds and passes.
`batching`: CPU ms per text of the int8 session for identical texts (no padding at all) alone and in
batches of 16 and 64, at 25 and 128 tokens. Results (2026-12-06, load 22–27): RESULTS.md, "Ingest of a
whole history".
The sentence passes were `OnnxMiniLM.embed_pooled`, dropped after this measurement (LoCoMo multi-hop fell):
run this script on commit 02afbba of branch `speed`, where it exists.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from cuemem_cli.ingest import prepare
from cuemem_cli.input.convert import convert
from cuemem_cli.models.embedders import get_embedder
from cuemem_cli.registry import make_extractor


class PerText:
    """The same model without `embed_pooled`: a pass per distinct cue text, as before."""

    def __init__(self, model):
        self.model, self.dim = model, model.dim

    def embed(self, texts):
        return self.model.embed(texts)

    def embed_in_context(self, pairs):
        return self.model.embed_in_context(pairs)


def passes(export: str, turns: int) -> None:
    messages = list(itertools.islice(convert("chatgpt", [str(export)]), turns))
    model = get_embedder(None)
    model.threads = 1
    model.embed(["warm up"])
    started = time.process_time()
    triples = prepare.cues_of(make_extractor("spacy"), messages)
    print("extract cpu s", round(time.process_time() - started, 1))
    pairs = [(m.text, None if i == 0 or messages[i - 1].conversation != m.conversation else messages[i - 1].text)
             for i, m in enumerate(messages)]
    for name, embedder in (("per cue text", PerText(model)), ("sentence passes", model)) * 2:
        started = time.process_time()
        _, _, count = prepare.embed_cues(embedder, [m.speaker for m in messages], triples, pairs)
        print(name, "passes", count, "cpu s", round(time.process_time() - started, 1), flush=True)


def batching() -> None:
    model = get_embedder(None)
    model.embed(["warm up"])
    for tokens in (25, 128):
        encoding = model._tokenizer.encode(" ".join(["word"] * (tokens - 2)))
        for size in (1, 16, 64):
            ids = np.array([encoding.ids] * size, dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
            runs = max(2, 320 // size)
            started = time.process_time()
            for _ in range(runs):
                model._session.run(None, feed)
            print(tokens, "tokens, batch", size, "cpu ms a text",
                  round((time.process_time() - started) / runs / size * 1000, 2), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export")
    parser.add_argument("--turns", type=int, default=400)
    args = parser.parse_args()
    passes(args.export, args.turns)
    batching()
