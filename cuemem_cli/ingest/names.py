"""Who is who, kept as turns are stored: each new turn's signs of a name (cues/names.signs) are stored with it,
and the conversations it touched learn their names again from their stored signs (`relearn`). A question or
`inspect-graph` then reads the learned names (store `NameIndex`) instead of reading every turn of a chat
again: on 120 real ChatGPT chats, `inspect-graph` spent 14 s doing that on every call (issue 58)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ..cues.names import learned_from, mentions, signs
from ..store.base import NameIndex, Store, name_index


def store_signs(store: Store, turns: Iterable[tuple[int, int, str]]) -> None:
    """Store the signs of a name these new turns (conversation id, turn id, text) hold; in the write
    transaction that stores them. Nothing where the backend keeps no name index."""
    index = name_index(store)
    if index is None:
        return
    turns = list(turns)
    index.replace_name_signs([tid for _, tid, _ in turns],
                             [(cid, tid, name, how) for cid, tid, text in turns for name, how in signs(text)])


def keep_names(store: Store, conversation_ids: Sequence[int], turn_ids: Sequence[int], texts: Sequence[str]) -> None:
    """What ingest does for new turns (each one's conversation id, id and text) in the transaction that stores
    them: `store_signs`, then `relearn` their conversations."""
    store_signs(store, zip(conversation_ids, turn_ids, texts, strict=True))
    relearn(store, conversation_ids)


def relearn(store: Store, conversation_ids: Iterable[int]) -> None:
    """Learn these conversations' names again from their stored signs (after turns were stored, replaced
    or forgotten); in the same write transaction. A name's mentions are counted in the turns that hold it."""
    index = name_index(store)
    if index is None:
        return
    ids = sorted(set(conversation_ids))
    people = store.speaker_sets(ids)
    for cid in ids:
        key = str(cid)  # the conversation as learned_from keys it: any one name for it will do
        found = [(key, turn, speaker or role, name, how) for turn, speaker, role, name, how in index.name_signs(cid)]
        learned = learned_from(found, {key: people.get(cid, frozenset())}, _mentioned(index, cid))
        index.set_learned_names(cid, {name: speaker for (_, name), speaker in learned.items()})


def _mentioned(index: NameIndex, conversation_id: int) -> Callable[[str, str], int]:
    """How many of the conversation's turns mention a name (as learned_from asks it)."""
    return lambda _, name: mentions(index.texts_holding(conversation_id, name), name)
