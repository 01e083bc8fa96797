"""Which levers close LoCoMo's as-exports gap (issue 34)? Re-ranks an eval's cached database under several
`reconstruct.Settings` and counts, per category, the questions with all their gold turns in the evidence:
the same count `cuemem eval locomo` makes for the `cuemem` system, without a new ingest per variant.

    python bench/experiments/memory_wide_levers.py DB {one|wide|oracle} ["name=value, …" …]

DB is the database an eval cached (`cuemem eval locomo … [--setting as-exports] --cache-dir DIR` leaves
DIR/locomo[-as-exports]-….db). `one`: each question narrowed to its sample (the one-conversation setting);
`wide`: asked over the whole memory (as-exports); `oracle`: as-exports, each question narrowed to its own
sample's sessions (what a perfect guess of the right chats would give). Each further argument is one variant,
Settings fields as Python keyword arguments (`"participant_weight=0.2, top_m=200"`; `""` for the defaults).
Prints one line per variant. What it found is in bench/memory_notes.md.
"""

from __future__ import annotations

import ast
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from cuemem_cli.models.embedders import get_embedder
from cuemem_cli.evaluate.datasets import load_locomo
from cuemem_cli.recall.reconstruct import reconstruct
from cuemem_cli.recall.settings import Settings
from cuemem_cli.store.open import open_store

LOCOMO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo10.json"


class CachedQuestions:
    """The embedder, each question embedded once across variants."""

    def __init__(self, embedder):
        self.embedder, self.model_id, self.dim = embedder, embedder.model_id, embedder.dim
        self.vectors: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.embedder.embed(missing), strict=True))
        return np.vstack([self.vectors[t] for t in texts])

    def __getattr__(self, name: str):
        return getattr(self.embedder, name)


def variant(text: str) -> dict:
    """"participant_weight=0.2, top_m=200" → {"participant_weight": 0.2, "top_m": 200}."""
    pairs = [part.split("=", 1) for part in text.split(",") if part.strip()]
    return {name.strip(): ast.literal_eval(value.strip()) for name, value in pairs}


def main(db: str, mode: str, *variants: str) -> None:
    dataset = load_locomo(LOCOMO, as_exports=mode in ("wide", "oracle"))
    store = open_store(db)
    names = [name for _, name, _ in store.conversations()]
    embedder = CachedQuestions(get_embedder(None))
    for text in variants or ("",):
        settings, started, hits = replace(Settings(), **variant(text)), time.time(), {}
        for q in dataset.questions:
            if not q.gold_turns:
                continue
            scope = {"one": q.conversation, "wide": None,
                     "oracle": [n for n in names if n.startswith(q.conversation + "/")]}[mode]
            context = reconstruct(store, embedder, q.question, scope, settings, q.as_of)
            shown = {f"{e.conversation}/{e.source_id}" if mode != "one" else e.source_id for e in context.evidence}
            for category in (q.category, "overall"):
                hits.setdefault(category, []).append(set(q.gold_turns) <= shown)
        print(text or "defaults", {c: round(sum(v) / len(v), 4) for c, v in sorted(hits.items())},
              f"{time.time() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
