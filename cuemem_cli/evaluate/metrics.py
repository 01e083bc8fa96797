"""Per-question scores and their summary: pure functions over plain records, tested by hand.

Retrieval is scored on the set of turns in the context (at the budget): recall = share of gold turns
present; all-evidence = every gold turn present; any-evidence = at least one. NDCG uses the system's
own ranking, binary relevance and the standard discount 1 / log2(rank + 1), cut at the context length.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


def evidence_scores(gold: Iterable[str], found: Iterable[str]) -> dict[str, Any] | None:
    """Recall / all / any of `gold` within `found`; None when there is no gold to find."""
    gold_set = set(gold)
    if not gold_set:
        return None
    hits = len(gold_set & set(found))
    return {"recall": hits / len(gold_set), "all_evidence": hits == len(gold_set), "any_evidence": hits > 0}


_TOKEN = re.compile(r"[^\W_]+")


@functools.lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    """spaCy's English stop words, less "may": in answers it is the month ("7 May 2023")."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS) - {"may"}


_ORDINAL = re.compile(r"^0*(\d+)(?:st|nd|rd|th)?$")
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of `text`, a number written one way: "03", "3rd" and "three" are 3 (REALTALK
    writes "03 January, 2024", an answer "3 January 2024"; LoCoMo "7 years", a speaker "seven years")."""
    return [_NUMBER_WORDS.get(t, _ORDINAL.sub(r"\1", t)) for t in _TOKEN.findall(text.lower())]


def content_tokens(text: str) -> list[str]:
    """`tokens` of `text`, English stop words dropped."""
    stop = _stop_words()
    return [t for t in tokens(text) if t not in stop]


_VERDICT = re.compile(r"^\W*(yes|no)\b", re.I)


def wanted_tokens(gold: str) -> list[str]:
    """What an answer must say to hold `gold`: its content tokens, and the verdict of a yes/no answer ("No, she
    moved" must say "no", which is a stop word)."""
    verdict = _VERDICT.match(gold)
    return ([verdict[1].lower()] if verdict else []) + content_tokens(gold)


def answer_holds(gold: str, answer: str | None) -> bool | None:
    """Issue 22's offline-answer rule: every content token of the gold answer occurs in the answer text (a yes
    or no it opens with too). None when the gold answer has none (nothing to check)."""
    wanted = wanted_tokens(gold)
    if not wanted:
        return None
    return set(wanted) <= set(tokens(answer or ""))


LINE_CHARS = 240  # issue 49: the answer line a person reads is the first line, at most this long


def answer_line(answer: str | None) -> str | None:
    """The line a person reads first: the answer's first line, cut at LINE_CHARS."""
    return answer.split("\n", 1)[0][:LINE_CHARS] if answer else None


def token_f1(gold: str, answer: str | None) -> float | None:
    """SQuAD's token F1 between the gold answer and an answer, over `wanted_tokens` (a verdict and content
    words, so a quoted sentence scores lower than the span it holds). None when the gold has none."""
    wanted = Counter(wanted_tokens(gold))
    if not wanted:
        return None
    said = Counter(t for t in tokens(answer or "") if t in wanted or t not in _stop_words())
    common = sum((wanted & said).values())
    if not common:
        return 0.0
    precision, recall = common / sum(said.values()), common / sum(wanted.values())
    return round(2 * precision * recall / (precision + recall), 4)


def offline_scores(gold: str, answer: str | None, abstention: bool = False) -> dict[str, Any]:
    """An offline answer's scores (issue 49): whether the answer line holds the gold answer and its token F1,
    whether the whole answer (line and quoted sources) holds it (`offline_correct`, issue 22's figure), and
    whether it abstained (no answer). An abstention question (nothing in memory answers it) is scored by
    abstaining alone."""
    line = answer_line(answer)
    scored = not abstention
    return {"offline_correct": answer_holds(gold, answer) if scored else None,
            "offline_line_correct": answer_holds(gold, line) if scored else None,
            "offline_line_f1": token_f1(gold, line) if scored else None,
            "offline_abstained": answer is None}


def ndcg(ranked: Sequence[str], gold: Iterable[str]) -> float | None:
    """NDCG of a ranked list against a gold set (binary relevance), cut at the list's length."""
    gold_set = set(gold)
    if not gold_set:
        return None
    dcg = sum(1.0 / math.log2(rank + 1) for rank, item in enumerate(ranked, start=1) if item in gold_set)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold_set), len(ranked)) + 1))
    return dcg / ideal if ideal else 0.0


def unique_in_order(items: Iterable[str | None]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        if item is not None and item not in seen:
            seen[item] = None
    return list(seen)


def longmemeval_scores(ranked_turns: Sequence[str], ranked_sessions: Sequence[str], gold_turns: Sequence[str],
                       gold_sessions: Sequence[str]) -> dict[str, Any]:
    """LongMemEval's turn- and session-level recall_any / recall_all and NDCG at the budget."""
    out: dict[str, Any] = {}
    for level, ranked, gold in (("turn", ranked_turns, gold_turns), ("session", ranked_sessions, gold_sessions)):
        scores = evidence_scores(gold, ranked)
        out[f"{level}_recall_any"] = None if scores is None else scores["any_evidence"]
        out[f"{level}_recall_all"] = None if scores is None else scores["all_evidence"]
        out[f"{level}_ndcg"] = ndcg(ranked, gold)
    return out


def percentiles(values: Sequence[float]) -> dict[str, float] | None:
    if not values:
        return None
    arr = np.asarray(values, dtype=float)
    return {"p50": round(float(np.percentile(arr, 50)), 2), "p95": round(float(np.percentile(arr, 95)), 2),
            "mean": round(float(arr.mean()), 2)}


def _mean(values: list[Any]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return round(sum(present) / len(present), 4) if present else None


_RETRIEVAL_KEYS = ("recall", "all_evidence", "any_evidence", "turn_ndcg", "session_recall_any",
                   "session_recall_all", "session_ndcg")


def summarise_group(records: list[dict[str, Any]]) -> dict[str, Any]:
    """One summary row over the records of one system, budget and category."""
    scored = [r["retrieval"] for r in records if r.get("retrieval")]
    row: dict[str, Any] = {"questions": len(records), "retrieval_questions": len(scored)}
    for key in _RETRIEVAL_KEYS:
        if any(key in s for s in scored):
            row[key] = _mean([s.get(key) for s in scored])
    tokenizers = records[0]["tokens"].keys() if records else ()
    row["tokens"] = {name: _mean([r["tokens"][name] for r in records]) for name in tokenizers}
    # The budget is a mean over questions (the paper's ~2K is per query on average): the largest context too.
    row["tokens_max"] = {name: max((r["tokens"][name] for r in records), default=None) for name in tokenizers}
    row["reconstruct_ms"] = percentiles([r["latency_ms"]["reconstruct"] for r in records])
    answered = [r["latency_ms"]["answer"] for r in records if r["latency_ms"].get("answer") is not None]
    row["answer_ms"] = percentiles(answered)
    judged = [r for r in records if r.get("judgement") in ("CORRECT", "WRONG", "UNPARSEABLE")]
    row["judged"] = len(judged)
    row["accuracy"] = round(sum(r["judgement"] == "CORRECT" for r in judged) / len(judged), 4) if judged else None
    held = [r["offline_correct"] for r in records if r.get("offline_correct") is not None]
    row["offline_scored"] = len(held)
    row["offline_accuracy"] = round(sum(held) / len(held), 4) if held else None  # the whole answer holds the gold
    row["offline_line_accuracy"] = _mean([r.get("offline_line_correct") for r in records])
    row["offline_line_f1"] = _mean([r.get("offline_line_f1") for r in records])
    row["offline_abstained"] = _mean([r.get("offline_abstained") for r in records])  # no answer at all
    row["llm_tokens"] = {
        role: sum(int((r.get("usage") or {}).get(role, {}).get("total_tokens", 0)) for r in records)
        for role in ("answer", "judge")
    }
    return row


def summarise(records: list[dict[str, Any]], systems: Sequence[str], categories: Sequence[str]) -> list[dict[str, Any]]:
    """Rows per (budget, system) for `overall`, each category, and `abstention` when present."""
    groups: dict[tuple[Any, str], list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault((record["budget"], record["system"]), []).append(record)
    rows = []
    budgets = sorted({b for b, _ in groups if b is not None}) + ([None] if any(b is None for b, _ in groups) else [])
    for budget in budgets:
        for system in systems:
            group = groups.get((budget, system))
            if not group:
                continue
            slices = [("overall", group)] + [(c, [r for r in group if r["category"] == c]) for c in categories]
            abstaining = [r for r in group if r.get("abstention")]
            if abstaining and "abstention" not in categories:
                slices.append(("abstention", abstaining))
            for category, members in slices:
                if members:
                    rows.append({"budget": budget, "system": system, "category": category, **summarise_group(members)})
    return rows
