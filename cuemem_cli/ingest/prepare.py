"""The work on a batch of turns before it is stored: its cues (extracted, plus a statement per sentence) and
every vector (the turns' and their cues'). It touches no database, so it runs in a background thread or in
worker processes (`Workers`) while the writer stores the batch before (ingest/pipeline.py).

Every cue is embedded as its own text (each distinct text once), the turn in context. Pooling cue vectors
from shared passes was measured and dropped: triples pooled from their sentence's pass cut the embedding's
CPU but cost LoCoMo multi-hop questions their evidence (bench/RESULTS.md, "Ingest of a whole history",
"Cue vectors pooled from sentence passes").
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..cues.statements import cue_text, is_padding, statement_cues
from ..records import Message, Triple
from ..store.vectors import roundtrip

Pair = tuple[str, str | None]  # a turn's text and the text of the turn before it in its session, or None


@dataclass
class Prepared:
    """What `prepare` computed for a batch: per message, its cues (None: extraction failed, stays pending),
    their vectors and its turn vector; the model passes run; the seconds spent."""

    triples: list[list[Triple] | None]
    cue_vectors: list[np.ndarray] = field(default_factory=list)
    turn_vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    texts_embedded: int = 0
    extract_seconds: float = 0.0
    embed_seconds: float = 0.0


def cues_of(extractor, turns: Sequence[Any]) -> list[list[Triple] | None]:
    """Extracted triples plus one statement cue per sentence (cues/statements.py); pending stays None. A padding
    turn ("Continue", "go on") gets none and is not sent to the extractor."""
    wanted = [i for i, turn in enumerate(turns) if not is_padding(turn.text)]
    found = extractor.extract([turns[i] for i in wanted]) if wanted else []
    results: list[list[Triple] | None] = [[] for _ in turns]
    for i, triples in zip(wanted, found, strict=True):
        results[i] = None if triples is None else triples + statement_cues(turns[i].speaker, turns[i].text)
    return results


def embed_distinct(embedder, texts: list[str]) -> tuple[np.ndarray, int]:
    """Embed each distinct text once: a one-sentence turn is often also its statement cue, and short
    triples repeat ("Melanie, love, painting"), as a share of LoCoMo's texts does (bench/design-notes.md,
    "Measured choices elsewhere in the code"). The vectors, and how many texts were embedded."""
    distinct = list(dict.fromkeys(texts))
    if len(distinct) == len(texts):
        return roundtrip(embedder.embed(texts)), len(texts)
    row = {text: i for i, text in enumerate(distinct)}
    return roundtrip(embedder.embed(distinct))[[row[text] for text in texts]], len(distinct)


def embed_turns(embedder, pairs: list[Pair]) -> np.ndarray:
    """Turn vectors: each turn's own tokens, read by the model with the turn before it in its session
    after them (models.embedders.own_positions). A reply is often only readable next to what it answers ("Yep, a
    few years back" after "Do you still paint?"). Measured on LoCoMo at 2,000 tokens, it puts all the
    evidence in the context for more questions than the turn alone plus 0.3 of its predecessor's vector
    mixed in at question time (the `mixed-context` ablation) or the turn alone (`no-context`):
    bench/RESULTS.md, "Quality: LoCoMo evidence in a 2,000-token context"; bench/quality_notes.md says
    why the context is not pooled in as well.
    Ingest's vectors are what the store gives back (vectors.roundtrip), so the graph is built from the
    vectors a later ingest reads."""
    return roundtrip(embedder.embed_in_context(pairs))


def embed_cues(embedder, speakers: Sequence[str | None], triples: Sequence[list[Triple] | None],
               pairs: Sequence[Pair]) -> tuple[list[np.ndarray], np.ndarray, int]:
    """Per turn its cues' vectors, the turn vectors, and the texts embedded (turns in context count one)."""
    dim = embedder.dim
    cue_rows: list[np.ndarray] = [np.zeros((len(t or []), dim), dtype=np.float32) for t in triples]
    first = [i for i, (_, before) in enumerate(pairs) if before is None]
    turn_vectors = np.empty((len(pairs), dim), dtype=np.float32)
    later = [i for i, (_, before) in enumerate(pairs) if before is not None]
    if later:
        turn_vectors[later] = embed_turns(embedder, [pairs[i] for i in later])
    # (turn, cue or -1 for the turn itself, text): a turn read alone is a text like its cues, embedded once
    alone = [(n, i, cue_text(cue, speakers[n])) for n, found in enumerate(triples)
             for i, cue in enumerate(found or [])]
    alone += [(n, -1, pairs[n][0]) for n in first]
    passes = len(later)
    if alone:
        vectors, count = embed_distinct(embedder, [text for _, _, text in alone])
        passes += count
        for (number, index, _), vector in zip(alone, vectors, strict=True):
            if index < 0:
                turn_vectors[number] = vector
            else:
                cue_rows[number][index] = vector
    return cue_rows, turn_vectors, passes


def prepare(extractor, embedder, messages: Sequence[Message], pairs: Sequence[Pair]) -> Prepared:
    """A batch's cues and vectors: what the writer stores for it."""
    t0 = time.perf_counter()
    triples = cues_of(extractor, messages)
    t1 = time.perf_counter()
    cue_vectors, turn_vectors, passes = embed_cues(embedder, [m.speaker for m in messages], triples, pairs)
    return Prepared(triples, cue_vectors, turn_vectors, passes, t1 - t0, time.perf_counter() - t1)


# ----------------------------------------------------------------- workers
_worker: dict[str, Any] = {}  # in a worker process: its extractor and embedder


def _start_worker(extractor: str, embedder: str | None) -> None:
    """In each worker process, once: its own spaCy and model (spaCy holds the GIL, so parsing in threads
    would not run in parallel), one thread each (the processes are the parallelism)."""
    from ..models.embedders import get_embedder
    from ..registry import make_extractor

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    _worker["extractor"] = make_extractor(extractor)
    model = get_embedder(embedder)
    if hasattr(model, "threads"):
        model.threads = 1
    _worker["embedder"] = model


def _prepare_in_worker(messages: list[Message], pairs: list[Pair]) -> Prepared:
    return prepare(_worker["extractor"], _worker["embedder"], messages, pairs)


WORKERS_FROM = 1_000  # input lines from which worker processes pay for their start (seconds of CPU each)
MAX_WORKERS = 8


def worker_count(wanted: int | None, lines: int) -> int:
    """Worker processes for an ingest of `lines` lines: as asked, else one per core (up to MAX_WORKERS) for
    an input of WORKERS_FROM lines or more, and none (1: this process) below it."""
    if wanted is not None:
        return max(1, wanted)
    return min(os.cpu_count() or 1, MAX_WORKERS) if lines >= WORKERS_FROM else 1


class Workers:
    """Worker processes that prepare batches (`submit`), each with its own extractor and embedder made from
    their registry names. Content is that of one process: a batch's cues and vectors depend on its turns
    alone, never on which worker or how many (tests/test_prepare.py)."""

    def __init__(self, count: int, extractor: str, embedder: str | None):
        self.count = count
        # Forked where the system allows it (Linux): a spawned worker imports the caller's main module again,
        # which breaks a library user's script without an `if __name__ == "__main__"` guard. A worker never
        # touches what it inherits (the database connection, the writer's threads): it makes its own models.
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods and sys.platform != "darwin" else "spawn")
        self._pool = ProcessPoolExecutor(count, mp_context=context, initializer=_start_worker,
                                         initargs=(extractor, embedder))

    def submit(self, messages: list[Message], pairs: list[Pair]) -> Future[Prepared]:
        return self._pool.submit(_prepare_in_worker, messages, pairs)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
