"""The turns that name an instance of the kind a question asks for ("What sports did Kevin do?" → Kevin's turns
that name a sport): candidates even when no cue of theirs is near the question, and lifted in the score
(score.py's `kind_weight`).

A question gathering facts asks for a kind, and the turns that answer name instances ("a fun game of
basketball", "back from Chicago"), which MiniLM puts farther from the question than turns that say the kind's
word. The kinds are cues/kinds.py's, stored per turn at ingest (`KindIndex`); a memory written before they were
kept has none until `cuemem reindex`, and is asked as without them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np

from ..records import Turn
from ..store.base import Store, kind_index
from .settings import Settings


def kind_turns(store: Store, kinds: Sequence[str], scope_ids: Sequence[int] | None, hidden: Collection[int],
               read: Callable[[list[int]], dict[int, Turn]], similarity: Callable[[list[int]], np.ndarray],
               asked_about: Callable[[Turn], bool] | None, settings: Settings) -> list[int]:
    """The turns in scope that name a thing of `kinds`, said by the people the question is about
    (`asked_about`, None: anyone), held at the question's time (not `hidden`): at most `settings.kind_m`, the
    most similar to the question first (`similarity` of turn ids), read with `read`."""
    index = kind_index(store)
    if not kinds or index is None or settings.kind_m <= 0:
        return []
    ids = [tid for tid in index.turns_of_kinds(kinds, scope_ids, limit=settings.kind_limit) if tid not in hidden]
    if asked_about is not None and ids:
        turns = read(ids)
        ids = [tid for tid in ids if tid in turns and asked_about(turns[tid])]
    if len(ids) > settings.kind_m:
        sims = np.nan_to_num(similarity(ids), nan=-1.0)
        ids = [ids[i] for i in np.argsort(-sims, kind="stable")[:settings.kind_m]]
    return ids
