"""`cuemem reindex`: build again what is derived from the stored turns, for a memory written before it was kept.

Each derived index is an entry of DERIVED (a new one is a new entry): its name, what it
holds, how it is rebuilt for some conversations (in a write transaction), and how the memory records that it is
complete. Conversations are rebuilt CONVERSATIONS_AT_ONCE to a transaction, so other processes' writes wait
for one step, not for the whole memory; turns they store meanwhile get their entries as they are stored.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import CuememError
from ..ingest.names import relearn, store_signs
from ..store.base import NAMES_INDEXED, Store, maintenance, name_index

CONVERSATIONS_AT_ONCE = 50


@dataclass(frozen=True)
class Derived:
    """One index derived from the stored turns."""

    name: str
    holds: str  # what it holds, for the report and --help
    rebuild: Callable[[Store, Sequence[int]], int]  # rebuild it for these conversations; returns the turns read
    complete: Callable[[Store], None]  # record that the whole memory has it


def _names(store: Store, conversation_ids: Sequence[int]) -> int:
    """Each turn's signs of a name again, then each conversation's learned names (ingest/names.py)."""
    reads = maintenance(store)
    turns = [(cid, turn.id, turn.text) for cid in conversation_ids for turn in reads.turns(cid)]
    store_signs(store, turns)
    relearn(store, conversation_ids)
    return len(turns)


def _names_complete(store: Store) -> None:
    if name_index(store) is not None:
        store.set_meta(NAMES_INDEXED, "reindex")


DERIVED = [
    Derived("names", "who is who: the names each chat calls its people by (cues/names.py)", _names, _names_complete),
]


def reindex(store: Store, only: Sequence[str] | None = None,
            progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Rebuild the derived indexes (`only` these, by name) of every conversation; `progress(index, done,
    total)` after each step. Returns, per index, the conversations and turns read, and the seconds taken."""
    known = {d.name: d for d in DERIVED}
    unknown = [name for name in only or () if name not in known]
    if unknown:
        raise CuememError(f"no derived index {unknown[0]!r}", f"choose among: {', '.join(known)}", fields=("only",))
    store.check_writable()
    chosen = [known[name] for name in only] if only else DERIVED
    ids = [cid for cid, _, _ in store.conversations()]
    report: dict[str, Any] = {}
    for derived in chosen:
        started = time.perf_counter()
        turns = 0
        for at in range(0, len(ids), CONVERSATIONS_AT_ONCE):
            with store.transaction():
                turns += derived.rebuild(store, ids[at:at + CONVERSATIONS_AT_ONCE])
            if progress is not None:
                progress(derived.name, min(at + CONVERSATIONS_AT_ONCE, len(ids)), len(ids))
        with store.transaction():
            derived.complete(store)
        report[derived.name] = {"holds": derived.holds, "conversations": len(ids), "turns": turns,
                                "seconds": round(time.perf_counter() - started, 3)}
    return report
