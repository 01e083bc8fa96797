"""Replay `reconstruct` over LoCoMo's questions on an existing database, with Settings overrides: the
quick way to try a scoring change without a full `cuemem eval` (same gold evidence, same budget rule).

    python bench/replay.py DB [LOCOMO_JSON] [conversations=a,b,...] [key=value ...]
    python bench/replay.py ~/.cache/cuemem/eval/locomo-….db ../shared/data/locomo10.json speaker_weight=0 top_m=50
    python bench/replay.py RT.db ../shared/data/realtalk-dev.json conversations=rt-1,rt-2,rt-3 kind_weight=0

`conversations` asks only those samples' questions (the tune or check part of a split, bench/quality_notes.md).

DB must hold the LoCoMo conversations under their sample ids (a `cuemem eval locomo` cache database does).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from cuemem_cli.models.embedders import get_embedder, spec_for
from cuemem_cli.evaluate.datasets import load_locomo
from cuemem_cli.recall.reconstruct import reconstruct
from cuemem_cli.recall.settings import Settings
from cuemem_cli.store.sqlite import SQLiteStore

DEFAULT_LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"


def replay(db: str, locomo: str, conversations: list[str] | None = None, **change) -> dict:
    dataset = load_locomo(locomo, conversations)
    store = SQLiteStore.open(db, create=False)
    embedder = get_embedder(spec_for(store.get_meta("embedding_model")), quick_start=True)
    settings = replace(Settings(), **change)
    per: dict[str, list[float]] = defaultdict(list)
    for q in dataset.questions:
        if q.abstention or not q.gold_turns:
            continue
        got = {e.source_id for e in reconstruct(store, embedder, q.question, q.conversation, settings).evidence}
        recall = len(set(q.gold_turns) & got) / len(q.gold_turns)
        per[q.category].append(recall)
        per["overall"].append(recall)
    return {cat: {"n": len(r), "all_evidence": round(sum(x == 1.0 for x in r) / len(r), 3),
                  "recall": round(sum(r) / len(r), 3)} for cat, r in per.items()}


if __name__ == "__main__":
    args = sys.argv[1:]
    overrides = dict(a.split("=", 1) for a in args if "=" in a)
    paths = [a for a in args if "=" not in a]
    wanted = overrides.pop("conversations", None)
    result = replay(paths[0], paths[1] if len(paths) > 1 else str(DEFAULT_LOCOMO),
                    wanted.split(",") if wanted else None, **{k: ast.literal_eval(v) for k, v in overrides.items()})
    for category, row in result.items():
        print(f"{category:12} n={row['n']:5}  all-evidence {row['all_evidence']:.3f}  recall {row['recall']:.3f}")
