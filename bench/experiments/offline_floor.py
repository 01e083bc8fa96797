"""Where the offline answer's no-evidence floor lies (issue 20): the best sentence score
(answer.rank_sentences) of real LoCoMo questions against junk and unrelated questions.

    python bench/experiments/offline_floor.py DB LOCOMO_JSON [N]

DB is a LoCoMo database built by `cuemem eval locomo LOCOMO_JSON --cache-dir DIR` (the path it prints
as `database`). N real questions (categories 1–4, seeded sample, default 400) and every junk and
unrelated question below are asked in each of the ten conversations; prints percentiles of the best
score, how far it stands above the median sentence, how often the question shares a content word with
the evidence (answer.shared_words), and the share of each group the rule "a shared word and a best
score of at least F" silences.
"""

from __future__ import annotations

import json
import random
import sys

import numpy as np

from cuemem_cli.answer.extractive import rank_sentences, shared_words
from cuemem_cli.models.embedders import get_embedder
from cuemem_cli.recall.reconstruct import reconstruct
from cuemem_cli.recall.settings import Settings
from cuemem_cli.store.sqlite import SQLiteStore

JUNK = ["???", "?", "!!!", "...", "asdf", "qwerty uiop", "lorem ipsum dolor sit amet", "xyzzy plugh", "hmm", "12345",
        "zxcv bnm", "?? !!"]
UNRELATED = ["What is the boiling point of tungsten?", "How do I configure a Kubernetes ingress controller?",
             "What is the derivative of x squared?", "Which river flows through Budapest?",
             "What is the airspeed velocity of an unladen swallow?", "How many moons does Neptune have?",
             "Who wrote the Principia Mathematica?", "What is the time complexity of heapsort?"]


def best(store, embedder, question: str, conversation: str, as_of: str | None) -> tuple[float, float, bool]:
    """(best score, best minus median score, whether a content word of the question is in the evidence)."""
    context = reconstruct(store, embedder, question, conversation, Settings(), as_of)
    ranked = rank_sentences(context, embedder)
    if not ranked:
        return float("-inf"), float("-inf"), False
    scores = [r[0] for r in ranked]
    return scores[0], scores[0] - float(np.median(scores)), bool(shared_words(question, context))


def main() -> None:
    db, locomo = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 400
    with open(locomo) as handle:
        data = json.load(handle)
    store = SQLiteStore.open(db, create=False)
    embedder = get_embedder(None)
    real = [(s["sample_id"], q["question"]) for s in data for q in s["qa"] if q.get("category") in (1, 2, 3, 4)]
    random.Random(20).shuffle(real)
    groups: dict[str, list[tuple[float, float, bool]]] = {"real": [], "junk": [], "unrelated": []}
    for conversation, question in real[:n]:
        groups["real"].append(best(store, embedder, question, conversation, None))
    for sample in data:
        for name, questions in (("junk", JUNK), ("unrelated", UNRELATED)):
            groups[name] += [best(store, embedder, q, sample["sample_id"], None) for q in questions]
    for name, rows in groups.items():
        for k, label in ((0, "best"), (1, "best - median")):
            arr = np.array([r[k] for r in rows])
            pct = {p: round(float(np.percentile(arr, p)), 3) for p in (0, 1, 5, 25, 50, 75, 95, 100)}
            print(f"{name:10s} n={len(arr):4d} {label:14s} percentiles {pct}")
        print(f"{name:10s} share with a content word of the question in the evidence: "
              f"{np.mean([r[2] for r in rows]):.3f}")
    for floor in (0.15, 0.20, 0.25, 0.30):
        print(f"a shared word and best >= {floor:.2f}: " + ", ".join(
            f"{name} silenced {np.mean([not passes(r, floor) for r in rows]):.3f}" for name, rows in groups.items()))


def passes(row: tuple[float, float, bool], floor: float) -> bool:
    return row[2] and row[0] >= floor


if __name__ == "__main__":
    main()
