"""How a turn vector holds up after a long, unrelated turn: the case of a user's short statement after a
long assistant answer, which LoCoMo (two friends, short turns) does not have.

    python bench/experiments/context_stress.py [LOCOMO_JSON] [N_QUESTIONS]

For N LoCoMo questions with one gold turn, the gold turn is put after ≥ 100 words of turns taken from
another conversation, and its cosine to the question is compared four ways: the turn alone; the turn
and the long text concatenated and pooled together; the turn's own tokens read with the long text
(`embed_in_context`, what ingest does); the turn alone plus 0.3 of the long text's vector (the
question-time mix used before schema m005). Prints the mean cosine, the mean drop from the turn alone,
and the share of questions that keep ≥ 80 % of the turn-alone cosine.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np

from cuemem_cli.models.embedders import get_embedder
from cuemem_cli.evaluate.datasets import load_locomo

DEFAULT_LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo10.json"


def main(locomo: str = str(DEFAULT_LOCOMO), n: str = "300") -> None:
    dataset = load_locomo(locomo)
    embedder = get_embedder()
    text_of = {(name, m.source_id): m.text for name, items in dataset.messages.items() for m in items}
    rng = random.Random(1)
    questions = rng.sample([q for q in dataset.questions if not q.abstention and len(q.gold_turns) == 1], int(n))
    names = list(dataset.messages)
    cosines: dict[str, list[float]] = {"alone": [], "concatenated": [], "own tokens in context": [], "mix 0.3": []}
    for q in questions:
        turn = text_of[(q.conversation, q.gold_turns[0])]
        others = dataset.messages[rng.choice([c for c in names if c != q.conversation])]
        i, long = rng.randrange(len(others) - 10), []
        while len(" ".join(long).split()) < 100:
            long.append(others[i].text)
            i += 1
        before = " ".join(long)
        question, alone, joined, previous = embedder.embed([q.question, turn, f"{turn}\n{before}", before])
        mixed = alone + np.float32(0.3) * previous
        [in_context] = embedder.embed_in_context([(turn, before)])
        for name, vector in (("alone", alone), ("concatenated", joined), ("own tokens in context", in_context),
                             ("mix 0.3", mixed / np.linalg.norm(mixed))):
            cosines[name].append(float(vector @ question))
    base = np.array(cosines["alone"])
    print(f"{len(questions)} questions, gold turn after >= 100 words of another conversation")
    for name, values in cosines.items():
        v = np.array(values)
        print(f"{name:22s} mean {v.mean():.3f}  drop {np.mean(base - v):.3f}  "
              f"keep >= 80 %: {np.mean(v >= 0.8 * base):.2f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
