"""Where each question's gold turns sit in cuemem's own ranking, with no budget: how many tokens
(turn lines summed in rank order, day headers left out) each LoCoMo category would need to hold all its
evidence, and how many questions have a gold turn that is not even a candidate.

    python bench/headroom.py DB [LOCOMO_JSON] [key=value ...]

It tells re-ranking apart from recall: if the gold turns are candidates but ranked low, a better score
can help; if they are not candidates, only a new way to find them can.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from dataclasses import replace

from replay import DEFAULT_LOCOMO

from cuemem_cli.models.embedders import get_embedder, spec_for
from cuemem_cli.evaluate.datasets import load_locomo
from cuemem_cli.recall.reconstruct import reconstruct
from cuemem_cli.recall.settings import Settings
from cuemem_cli.store.sqlite import SQLiteStore

BUDGETS = (2000, 3000, 4000, 8000)


def headroom(db: str, locomo: str, **change) -> dict:
    dataset = load_locomo(locomo)
    store = SQLiteStore.open(db, create=False)
    embedder = get_embedder(spec_for(store.get_meta("embedding_model")), quick_start=True)
    settings = replace(Settings(), budget=10**9, **change)
    needed: dict[str, list[float]] = defaultdict(list)
    for q in dataset.questions:
        if q.abstention or not q.gold_turns:
            continue
        tokens, at = 0, {}
        for e in sorted(reconstruct(store, embedder, q.question, q.conversation, settings).evidence,
                        key=lambda e: -e.score):
            tokens += e.tokens
            at[e.source_id] = tokens
        need = max(at.get(g, float("inf")) for g in q.gold_turns)
        needed[q.category].append(need)
        needed["overall"].append(need)
    return {cat: {"n": len(need), "unreachable": sum(n == float("inf") for n in need),
                  **{str(b): round(sum(n <= b for n in need) / len(need), 3) for b in BUDGETS}}
            for cat, need in needed.items()}


if __name__ == "__main__":
    args = sys.argv[1:]
    overrides = {k: ast.literal_eval(v) for k, v in (a.split("=", 1) for a in args if "=" in a)}
    paths = [a for a in args if "=" not in a]
    result = headroom(paths[0], paths[1] if len(paths) > 1 else str(DEFAULT_LOCOMO), **overrides)
    print(f"{'category':12} {'n':>5} {'unreachable':>11} " + " ".join(f"{b:>6}" for b in BUDGETS))
    for category, row in result.items():
        print(f"{category:12} {row['n']:5} {row['unreachable']:11} "
              + " ".join(f"{row[str(b)]:6.3f}" for b in BUDGETS))
