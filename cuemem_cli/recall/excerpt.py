"""Long turns shown as excerpts: the sentences nearest the question, in their order, gaps marked "…".

Evidence is whole turns, and in a chat between friends a turn is short (LoCoMo's: bench/design-notes.md,
"Excerpts and the first-person rule"). An assistant's answer in a user/assistant chat can
run to a thousand tokens: taken whole it spends half of a 2,000-token budget on one turn, and a
turn longer than the budget could never be shown at all. So a turn whose evidence line costs more
than `Settings.excerpt_tokens` is shown as the sentences whose statement cues are nearest the
question (their vectors are already stored, so nothing is embedded at question time), added best
first while the line fits. The best sentence is always kept, so an excerpt is over the limit only
when that sentence alone is (a sentence is at most 400 characters, `cuemem_cli.text.MAX_CHARS`). Scoring
is untouched: a long turn still ranks by its whole text and its best cue; only what it costs and
shows changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache

import numpy as np

from ..cues.kinds import kinds_of
from ..records import Turn
from ..text import sentences
from .lines import estimate_tokens, evidence_line, line_cost, shown_cost, turn_cost

GAP = "…"


def excerpt(text: str, similarity: Mapping[str, float], fits: Callable[[str], bool],
            max_chars: int | None = None) -> str:
    """`text` cut to its sentences with the highest `similarity` (sentence → cosine) while `fits(excerpt)`.

    Sentences without a similarity (too short to be a cue) are left out unless nothing has one, in
    which case the turn's opening sentences are kept: a reader still sees how it began. `max_chars`:
    an excerpt longer than this never fits, so such a trial is refused from its length alone, without
    joining it (a long turn has dozens of trials a question).
    """
    parts = sentences(text)
    if len(parts) < 2 or fits(text):
        return text
    scored = [i for i, part in enumerate(parts) if part in similarity]
    order = sorted(scored, key=lambda i: (-similarity[parts[i]], i)) if scored else list(range(len(parts)))
    chosen = [order[0]]
    taken = {order[0]}
    length = len(_join(parts, chosen))
    for i in order[1:]:
        grown = length + _added_length(parts, taken, i)
        trial = sorted([*chosen, i])
        if (max_chars is None or grown <= max_chars) and fits(_join(parts, trial)):
            chosen, length = trial, grown
            taken.add(i)
        elif not scored:
            break
    return _join(parts, chosen)


def _added_length(parts: list[str], taken: set[int], i: int) -> int:
    """How much longer `_join` makes the excerpt when sentence i joins the sentences `taken`: the sentence
    and its space, and the one "…" (and its space) that stood where it goes becomes one on each side of
    it that still has a sentence left out next to it."""
    gaps = (i > 0 and i - 1 not in taken) + (i < len(parts) - 1 and i + 1 not in taken)
    return len(parts[i]) + 1 + (gaps - 1) * (len(GAP) + 1)


def _join(parts: list[str], chosen: list[int]) -> str:
    """Chosen sentences in order; "…" wherever sentences were left out, at either end too."""
    out: list[str] = []
    previous = -1
    for i in chosen:
        if i != previous + 1:
            out.append(GAP)
        out.append(parts[i])
        previous = i
    if previous != len(parts) - 1:
        out.append(GAP)
    return " ".join(out)


def excerpt_turn(turn: Turn, similarity: dict[str, float], limit: int) -> Turn:
    """`turn` with its text cut to the sentences nearest the question whose evidence line fits `limit`
    tokens (recall/excerpt.py); `similarity` maps each of its sentences to its cosine with the question.

    A trial excerpt's cost is first taken without resolved dates, which only add to it: over `limit`,
    it does not fit. A turn with no relative date has none in any excerpt of it (its sentences, joined
    by spaces or "…"), so its trials cost just that. Resolving dates in every trial of every long
    candidate was a large part of a question's CPU on a memory of real chats (bench/bench_memory_scale.py;
    bench/design-notes.md, "Measured choices elsewhere in the code")."""
    speaker = turn.speaker or turn.role
    dates = shown_cost(speaker, turn.text, turn.time)[1]  # its cost was taken already: turn_cost

    def fits(text: str) -> bool:
        if estimate_tokens(evidence_line(speaker, text)) > limit:
            return False
        return not dates or line_cost(speaker, text, turn.time) <= limit

    most = 4 * limit - len(evidence_line(speaker, ""))  # the longest text whose undated line fits (estimate_tokens)
    return replace(turn, text=excerpt(turn.text, similarity, fits, most))


def _is_long(turn: Turn, limit: int) -> bool:
    """turn_cost(turn) > limit, without resolving the dates of a turn whose text alone is over it: resolved
    dates only add to a line, and finding them in every long candidate is what a cold question spent most
    on after the search."""
    return _raw_cost(turn.speaker or turn.role, turn.text) > limit or turn_cost(turn) > limit


@lru_cache(maxsize=65536)
def _raw_cost(speaker: str | None, text: str) -> int:
    return estimate_tokens(evidence_line(speaker, text))


class Excerpts:
    """Long candidates cut to excerpts as `fill_budget` reaches them, in rank order (its `shorten`).

    A memory of real chats has hundreds of long candidates a question (assistant answers) and the budget
    takes a handful; cutting every one before filling was most of a warm question's time at scale
    (bench/memory_notes.md). So a long turn is cut only when reached, its sentences' similarities fetched
    for it and the next long turns in rank order together (`CHUNK`). Once the room left is under `limit`,
    a long turn is cut to what the room holds (less `HEADER` tokens for the header it may start), so the
    budget's last tokens go to the best sentences of the next long turns rather than to much lower-ranked
    short ones; that is tried for `TAIL` long turns (the best sentence of most is already more than the
    room), then long turns are passed over, as all are under `FLOOR` tokens of room. A memory without long
    turns (LoCoMo has none over the limit) fills exactly as it did. `cut` holds the turns shown shorter.
    """

    CHUNK = 8
    TAIL = 4
    HEADER = 16
    FLOOR = 24
    KIND_FIRST = 1.0  # added to the similarity of a sentence naming a thing of the kind asked: it is kept first

    def __init__(self, source, vector: np.ndarray, limit: int, ranked: Sequence[Turn], kinds: Sequence[str] = ()):
        """`kinds`: the kinds of thing the question asks for (cues/kinds.py); a long turn's sentence that names
        one is kept in its excerpt before any other ("What cities did I visit?": the sentence with Lisbon)."""
        self.source, self.vector, self.limit, self.kinds = source, vector, limit, frozenset(kinds)
        self.long = [t.id for t in ranked if limit and _is_long(t, limit)]
        self.rank = {tid: i for i, tid in enumerate(self.long)}
        self.similarity: dict[int, dict[str, float]] = {}
        self.cut: dict[int, Turn] = {}
        self.tail = 0  # long turns tried in less room than `limit`

    def __call__(self, turn: Turn, room: int) -> Turn | None:
        if not self.limit or not _is_long(turn, self.limit):
            return turn
        limit = min(self.limit, room - self.HEADER)
        if limit < self.limit:
            self.tail += 1
        if limit < self.FLOOR or self.tail > self.TAIL:
            return None
        if turn.id not in self.similarity:
            after = self.long[self.rank[turn.id] + 1:self.rank[turn.id] + self.CHUNK]
            wanted = [turn.id, *(tid for tid in after if tid not in self.similarity)]
            found = self.source.sentence_similarities(wanted, self.vector)
            if self.kinds:
                found = {tid: {sentence: sim + self.KIND_FIRST * bool(kinds_of(sentence) & self.kinds)
                               for sentence, sim in sims.items()} for tid, sims in found.items()}
            self.similarity.update(found)
        shown = excerpt_turn(turn, self.similarity[turn.id], limit)
        if shown.text == turn.text:
            return turn
        self.cut[turn.id] = shown
        return shown
