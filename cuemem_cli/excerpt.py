"""Long turns shown as excerpts: the sentences nearest the question, in their order, gaps marked "…".

Evidence is whole turns, and in a chat between friends a turn is short (LoCoMo's: bench/design-notes.md,
"Excerpts and the first-person rule"). An assistant's answer in a user/assistant chat can
run to a thousand tokens: taken whole it spends half of a 2,000-token budget on one turn, and a
turn longer than the budget could never be shown at all. So a turn whose evidence line costs more
than `Settings.excerpt_tokens` is shown as the sentences whose statement cues are nearest the
question (their vectors are already stored, so nothing is embedded at question time), added best
first while the line fits. The best sentence is always kept, so an excerpt is over the limit only
when that sentence alone is (a sentence is at most 400 characters, statements.MAX_CHARS). Scoring
is untouched: a long turn still ranks by its whole text and its best cue; only what it costs and
shows changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .statements import sentences

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
