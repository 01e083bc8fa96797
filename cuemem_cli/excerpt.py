"""Long turns shown as excerpts: the sentences nearest the question, in their order, gaps marked "…".

Evidence is whole turns, and in a chat between friends a turn is short (LoCoMo: a median of 29
tokens; the longest evidence line costs 126). An assistant's answer in a user/assistant chat can
run to a thousand tokens: taken whole it spends half of a 2,000-token budget on one turn, and a
turn longer than the budget could never be shown at all. So a turn whose evidence line costs more
than `Settings.excerpt_tokens` is shown as the sentences whose statement cues are nearest the
question (their vectors are already stored, so nothing is embedded at question time), with the
sentences beside them, while the line fits (`excerpt`). The best sentence is always kept, so an
excerpt is over the limit only when that sentence alone is (a sentence is at most 400 characters,
statements.MAX_CHARS). Scoring is untouched: a long turn still ranks by its whole text and its
best cue; only what it costs and shows changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .statements import sentences

GAP = "…"
MARGIN = 0.1  # cosine below the best sentence's within which another sentence is as much an answer


def excerpt(text: str, similarity: Mapping[str, float], fits: Callable[[str], bool]) -> str:
    """`text` cut to the sentences that answer, with their context, while `fits(excerpt)`.

    `similarity` maps a sentence to its cosine with the question. Kept first: the best sentence, then
    every sentence within MARGIN of it, best first; then the sentences either side of those, since a
    matched sentence often needs the one before or after it to be understood. A far-off sentence is
    left out even when it would fit: it costs budget and reads as noise. Sentences without a
    similarity (too short to be a cue) come in only as context, unless no sentence has one, in which
    case the turn's opening sentences are kept.
    """
    parts = sentences(text)
    if len(parts) < 2 or fits(text):
        return text
    scored = sorted((i for i, part in enumerate(parts) if part in similarity),
                    key=lambda i: (-similarity[parts[i]], i))
    if scored:
        close = [i for i in scored if similarity[parts[i]] >= similarity[parts[scored[0]]] - MARGIN]
        beside = [j for i in close for j in (i - 1, i + 1) if 0 <= j < len(parts)]
        order = list(dict.fromkeys([*close, *beside]))
    else:
        order = list(range(len(parts)))
    chosen = [order[0]]
    for i in order[1:]:
        trial = sorted([*chosen, i])
        if fits(_join(parts, trial)):
            chosen = trial
        elif not scored:
            break
    return _join(parts, chosen)


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
