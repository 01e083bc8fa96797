"""A question about a fact that changed gets both statements (issue 57): the turns a recorded change links
(cues/changes.py, found at ingest) are kept together in the budget, and a question about the present ("now",
"currently", "these days", "still", "latest") ranks the newer above the older.

The ranked candidates are read best first; for each change one of whose turns is among the PAIR_RANK best and
that the question is about (it names a word of the change's subject, relation or values, or that turn is one of
the ABOUT_RANK best), the other turn is placed right after it, fetched when it was no candidate: whatever the
budget drops, it drops below the pair. Turns memory did not hold at the question time (`ask --as-of`) are never
brought in, so the latest statement before that time is the latest the question sees.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from ..records import Change, ChangeLink, Evidence, Turn
from ..timeparse import format_human
from .question import fts_query

PAIR_RANK = 10  # a change is kept whole when one of its turns is among the best this many …
ABOUT_RANK = 3  # … and the question names something of it, or the turn is among the best this many
# A question about what holds now (or in the end): the newer statement of a change comes first.
ASKS_NOW = re.compile(r"\b(?:now|currently|current|these days|nowadays|still|latest|at the moment|anymore|"
                      r"any more|at present|presently|most recent(?:ly)?|in the end|end(?:ed)? up|finally|"
                      r"settled? on|so far|today)\b", re.I)


def asks_now(question: str) -> bool:
    return ASKS_NOW.search(question) is not None


def _words(text: str) -> set[str]:
    return {w[:5] for w in fts_query(text).replace('"', " ").replace(" OR ", " ").lower().split() if len(w) > 2}


def about(change: Change, question_words: set[str]) -> bool:
    """Whether a question names something of the change (a word of its subject, relation or values)."""
    said = _words(" ".join((change.subject, change.relation, change.older_value, change.newer_value)))
    return bool(said & question_words)


def kept_together(ranked: list[Turn], scores: dict[int, float], changes: Sequence[Change], question: str,
                  fetch, hidden: Collection[int] = ()) -> tuple[list[Turn], set[int]]:
    """`ranked` with each change the question is about kept whole (the other turn right after the better
    ranked one; the newer first when the question asks about now), and the ids of the turns brought in.
    `fetch(ids)` gives stored turns by id (recall/view.py); `scores` gets a score for a turn brought in, just
    under its partner's."""
    if not changes:
        return ranked, set()
    order = {turn.id: i for i, turn in enumerate(ranked)}
    words = _words(question)
    now = asks_now(question)
    wanted: list[tuple[int, int]] = []  # (the better ranked turn, its partner)
    def rank(change: Change) -> int:
        return min(order.get(change.older_turn, 1 << 30), order.get(change.newer_turn, 1 << 30))

    for change in sorted(changes, key=rank):
        ends = (change.older_turn, change.newer_turn)
        if any(end in hidden for end in ends):
            continue
        best = min(ends, key=lambda end: order.get(end, 1 << 30))
        if order.get(best, 1 << 30) >= PAIR_RANK:
            continue
        if not (about(change, words) or order[best] < ABOUT_RANK):
            continue
        other = ends[1] if best == ends[0] else ends[0]
        first, second = (change.newer_turn, change.older_turn) if now else (best, other)
        wanted.append((first, second))
    if not wanted:
        return ranked, set()
    missing = [tid for pair in wanted for tid in pair if tid not in order]
    turns = {turn.id: turn for turn in ranked} | (fetch(missing) if missing else {})
    out = list(ranked)
    brought: set[int] = set()
    for first, second in wanted:
        if first not in turns or second not in turns:
            continue
        for tid in (first, second):
            if tid in order:
                out.remove(turns[tid])
            else:
                brought.add(tid)
        at = min((i for i, t in enumerate(out) if order.get(t.id, 1 << 30) > min(order.get(first, 1 << 30),
                                                                                   order.get(second, 1 << 30))),
                 default=len(out))
        out[at:at] = [turns[first], turns[second]]
        top = max(scores.get(first, 0.0), scores.get(second, 0.0))
        for tid, score in ((first, top), (second, top - 1e-4)):
            if tid in brought:
                scores[tid] = score
        order = {turn.id: i for i, turn in enumerate(out)}
    return out, brought


def links(changes: Sequence[Change], turn_id: int, hidden: Collection[int] = ()) -> tuple[tuple[ChangeLink, ...],
                                                                                       tuple[ChangeLink, ...]]:
    """(superseded_by, supersedes) of a turn: the changes that make it the older statement, and those that
    make it the newer one, each as the other turn names it; none whose other turn memory did not hold then."""
    later = tuple(c.link(from_older=True) for c in changes if c.older_turn == turn_id and c.newer_turn not in hidden)
    earlier = tuple(c.link(from_older=False) for c in changes
                    if c.newer_turn == turn_id and c.older_turn not in hidden)
    return later, earlier


def change_notes(ev: Evidence, ids: bool = False) -> list[str]:
    """What a reader of a turn should know of the facts it states that changed: "later changed: Portland →
    Denver (22 July 2023)", "later contradicted: …", and for the turn that changed them "changes: …" (`ask`'s
    evidence on a terminal, with the other turn's id: `ids`; MCP `recall`'s text, which shows no ids; the
    browse page)."""
    def said(link: ChangeLink) -> str:
        day = format_human(link.time, with_time=False) if link.time else ""
        return ", ".join(part for part in (link.source_id if ids else "", day) if part) or "earlier"

    notes = [f"later {'contradicted' if link.kind == 'contradiction' else 'changed'}: {link.older_value} → "
             f"{link.newer_value} ({said(link)})" for link in ev.superseded_by]
    notes += [f"{'contradicts' if link.kind == 'contradiction' else 'changes'}: {link.older_value} → "
              f"{link.newer_value} (earlier: {said(link)})" for link in ev.supersedes]
    return notes
