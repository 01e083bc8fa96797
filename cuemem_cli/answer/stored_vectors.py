"""The evidence's vectors as the memory holds them, for the offline answer.

The offline answer ranks every sentence of the evidence by its vector read with the turn before it
(sentences.rank_sentences), and embedding them at every question took 1.9 s of a 3.5 s `cuemem ask` on 120
real chats (issue 58). Most of those texts are in the memory already: a sentence is a statement cue, whose
vector ingest stored (cues/statements.py), and the turn before a sentence is a turn whose stored vector is
the one it would get alone when nothing else was read with it (ingest.prepare.embed_cues: the first turn of
its session; models.embedders.OnnxMiniLM.reads_alone: a turn whose own words fill what the model reads).
`stored_evidence_vectors` reads them; `Remembered` hands them out for the texts they were embedded from and
embeds only the rest in one call (the shorter turns before a sentence, sentences no cue holds: code, an
excerpt's joins), which a process asking many questions keeps (`Embedded`).

A stored vector is what the store gives back for the one embedded (store/vectors.py: int8 codes, cosine >
0.9999 with the float vector, similarities moved by < 0.003); what the answer line reads with them was
measured against embedding every text (bench/RESULTS.md, "The question path on a chat history").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..cues.statements import cue_text
from ..records import Context, Triple
from ..store.base import TURN_ALONE, Store, turn_vector_text

EMBEDDED_KEPT = 20_000  # texts an `Embedded` keeps (30 MB of MiniLM vectors), then starts again


def stored_evidence_vectors(store: Store, context: Context, embedder: Any) -> dict[str, np.ndarray]:
    """The stored vectors of the evidence turns' statement cues, by the text each was embedded from
    (statements.cue_text: the sentence without its speaker's name), and those of the evidence turns, by
    their text, where that vector is the turn's alone (`_alone`) and the evidence holds the whole turn."""
    by_conversation: dict[str, list[str]] = {}
    for ev in context.evidence:
        by_conversation.setdefault(ev.conversation, []).append(ev.source_id)
    turns: dict[int, tuple[str | None, str]] = {}  # turn id → its speaker and its evidence text
    for name, source_ids in by_conversation.items():
        cid = store.conversation_id(name)
        if cid is None:  # forgotten since
            continue
        stored = store.stored_texts(cid, source_ids)
        for ev in context.evidence:
            if ev.conversation == name and ev.source_id in stored:
                turns[stored[ev.source_id][0]] = ev.speaker, ev.text if ev.text == stored[ev.source_id][2] else ""
    known: dict[str, np.ndarray] = {}
    for turn_id, pairs in store.statement_vectors(list(turns)).items():
        who = turns[turn_id][0]
        for sentence, vector in pairs:
            known.setdefault(cue_text(Triple(who or "", "said", sentence, kind="statement"), who), vector)
    whole = [tid for tid, (_, text) in turns.items() if text]
    if whole:
        alone = _alone(store, embedder, {tid: turns[tid][1] for tid in whole})
        for tid, vector in store.turn_vectors(alone).items():
            known.setdefault(turns[tid][1], vector)
    return known


def _alone(store: Store, embedder: Any, texts: Mapping[int, str]) -> list[int]:
    """Those of the turns (id → text) whose stored vector is their own text's alone: all of a memory from
    before m005 (turn_vector_text), else a turn with no turn before it in its session, or one the
    embedder reads exactly as alone whatever follows it (`reads_alone`; an embedder without it: none)."""
    if turn_vector_text(store) == TURN_ALONE:
        return list(texts)
    before = store.previous_turns(list(texts))
    reads_alone = getattr(embedder, "reads_alone", None)
    return [tid for tid, text in texts.items()
            if tid not in before or (reads_alone is not None and reads_alone(text))]


class Embedded(dict[str, np.ndarray]):
    """Texts a process embedded for its answers, with their vectors (at most EMBEDDED_KEPT): a session of
    questions about one chat reads the same turns and sentences again. A text's vector depends on that text
    alone (models/embedders.py), so a kept one is what embedding it again gives."""

    def keep(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        if len(self) + len(texts) > EMBEDDED_KEPT:
            self.clear()
        self.update(zip(texts, vectors, strict=True))


class Remembered:
    """An embedder that gives the stored vectors it was handed for their texts, then those `embedded` kept,
    and embeds the others (keeping them there). Everything else (its model, `embed_query`) is the
    embedder's own."""

    def __init__(self, embedder: Any, stored: Mapping[str, np.ndarray], embedded: Embedded | None = None):
        self._embedder = embedder
        self._stored = stored
        self._embedded = Embedded() if embedded is None else embedded
        self.embedded = 0  # texts this one had to embed

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._embedder.dim), dtype=np.float32)
        missing = [text for text in dict.fromkeys(texts) if text not in self._stored and text not in self._embedded]
        fresh = dict(zip(missing, self._embedder.embed(missing), strict=True)) if missing else {}
        self.embedded += len(missing)
        out = np.vstack([self._vector(text, fresh) for text in texts])
        if fresh:
            self._embedded.keep(list(fresh), np.vstack(list(fresh.values())))
        return out

    def _vector(self, text: str, fresh: Mapping[str, np.ndarray]) -> np.ndarray:
        """The stored vector of `text`, else the one just embedded, else the one kept."""
        for source in (self._stored, fresh, self._embedded):
            found = source.get(text)
            if found is not None:
                return found
        raise KeyError(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)


def reading_stored(store: Store, context: Context, embedder: Any, embedded: Embedded | None = None) -> Remembered:
    """`embedder`, handing out the stored vectors of `context`'s sentences and turns (and those in
    `embedded`): what `Memory.ask` and `cuemem eval`'s offline answers read the evidence with."""
    with store.snapshot():
        return Remembered(embedder, stored_evidence_vectors(store, context, embedder), embedded)
