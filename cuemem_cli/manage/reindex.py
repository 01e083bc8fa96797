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

from ..cues.changes import ChangeFinder, Said
from ..errors import CuememError
from ..ingest.kinds import retag, retagged
from ..ingest.names import relearn, store_signs
from ..store.base import NAMES_INDEXED, Store, change_records, maintenance, name_index
from ..store.migrations import CHANGES_PENDING

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


def _changes(store: Store, conversation_ids: Sequence[int]) -> int:
    """The facts that changed (cues/changes.py), found again in each conversation's turns in the order said,
    as ingest finds them: the same rows, and a rerun gives them again."""
    records = change_records(store)
    if records is None:
        return 0
    turns = 0
    for cid in conversation_ids:
        records.clear_changes(cid)
        finder = ChangeFinder()
        rows = []
        for turn_id, text, speaker, role, triples in records.change_sources(cid):
            turns += 1
            rows += [(f.older_turn, f.newer_turn, f.subject, f.relation, f.older_value, f.newer_value, f.kind)
                     for f in finder.see(Said(turn_id, text, speaker, role, triples))]
        records.insert_changes(cid, rows)
    return turns


def _changes_complete(store: Store) -> None:
    store.set_meta(CHANGES_PENDING, "")  # m018 set it on a memory that held turns: they are all read now


DERIVED = [
    Derived("names", "who is who: the names each chat calls its people by (cues/names.py)", _names, _names_complete),
    Derived("changes", "the facts that changed: pairs of turns where a newer one states another value "
                       "(cues/changes.py)", _changes, _changes_complete),
    Derived("kinds", "the kinds of things each turn names (cues/kinds.py: sport, city, dish, …)", retag, retagged),
]


def stale(store: Store) -> list[str]:
    """The derived indexes this memory holds only for the turns stored since they existed: `cuemem reindex`
    completes them (the facts that changed; who is who says so itself, `store.base.names_indexed`)."""
    return ["changes"] if store.get_meta(CHANGES_PENDING) else []


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
