"""Each stored turn's kinds of things (cues/kinds.py), written beside it: by ingest as it stores a batch, and by
`cuemem reindex` for the turns of a memory written before they were kept (or with another lexicon)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..cues.kinds import kinds_of, lexicon
from ..store.base import KINDS_BUILT, Store, kind_index, kinds_built, maintenance


def store_kinds(store: Store, turns: Iterable[tuple[int, str, Iterable[str]]]) -> int:
    """Tag these turns, (turn id, text, the names not to tag: its chat's speakers), and store their kinds; call
    inside the write transaction. Returns the rows written (0 on a backend that keeps no kinds)."""
    index = kind_index(store)
    if index is None:
        return 0
    rows = [(turn, kind) for turn, text, names in turns for kind in sorted(kinds_of(text, names))]
    index.insert_turn_kinds(rows)
    return len(rows)


def tag_batch(store: Store, turn_ids: Sequence[int], said: Sequence[tuple[str, str | None]]) -> int:
    """`store_kinds` for a batch of new turns, (text, speaker) each: the batch's speakers are names, not things."""
    speakers = {speaker for _, speaker in said if speaker}
    return store_kinds(store, [(turn, text, speakers) for turn, (text, _) in zip(turn_ids, said, strict=True)])


def start_kinds(store: Store) -> None:
    """Record, for a memory with no turns yet, that every turn it will hold is tagged with this lexicon (ingest
    tags each turn it stores); call inside the write transaction that opens a writer. An older memory keeps
    no such record until `cuemem reindex` tags its turns (`kinds_built`)."""
    if kind_index(store) is not None and kinds_built(store) is None and store.turn_count() == 0:
        store.set_meta(KINDS_BUILT, lexicon().version)


def retag(store: Store, conversation_ids: Sequence[int]) -> int:
    """Tag every turn of these conversations again (the `kinds` entry of `cuemem reindex`); returns the turns
    read. Call inside a write transaction."""
    index = kind_index(store)
    if index is None:
        return 0
    reads = maintenance(store)
    people = store.speaker_sets(list(conversation_ids))
    index.delete_turn_kinds(conversation_ids)
    turns = [(turn.id, turn.text, people.get(cid, ())) for cid in conversation_ids for turn in reads.turns(cid)]
    store_kinds(store, turns)
    return len(turns)


def retagged(store: Store) -> None:
    """Record that every turn is tagged with this lexicon (after `retag` of every conversation)."""
    if kind_index(store) is not None:
        store.set_meta(KINDS_BUILT, lexicon().version)
