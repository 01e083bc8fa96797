"""Why do multi-hop and open-domain questions lose gold turns as exports (issue 34)? For each question with
all its gold turns in the one-conversation evidence but not in the as-exports (or oracle) evidence, each
missing gold turn gets one cause:

- `not candidate, anchor in one`: the one-conversation question found it by a top-m cue (or FTS); as exports
  it is neither anchor nor neighbour;
- `not candidate, temporal in one` / `semantic in one`: one hop from a seed brought it in the one setting
  (`… across sessions` when that seed was in another session of the sample: one conversation's temporal
  window or its single graph reached it, separate chats cannot);
- `candidate, budget: outranked by other samples` / `… by its own sample`: a candidate, scored below the
  budget's cut, mostly behind turns of other samples (distractors) or of its own;
- `candidate, would fit without chat titles`: ranked above the last turn chosen, skipped for its cost.

    python bench/experiments/memory_wide_misses.py ONE_DB WIDE_DB [wide|oracle] ["name=value, …"]

ONE_DB and WIDE_DB are the databases `cuemem eval locomo` cached (memory_wide_levers.py says how). Prints
the counts, then a sample of questions with their misses. What it found is in bench/memory_notes.md.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import replace

import cuemem_cli.recall.reconstruct as rc
from cuemem_cli.recall.evidence import break_lines
from cuemem_cli.recall.lines import estimate_tokens
from cuemem_cli.recall.settings import Settings
from cuemem_cli.models.embedders import get_embedder
from cuemem_cli.evaluate.datasets import load_locomo
from cuemem_cli.store.open import open_store
from memory_wide_levers import LOCOMO, CachedQuestions, variant

WANTED = ("multi-hop", "open-domain")


class Trace:
    """What one reconstruct call ranked, scored and chose (wrapping the module's score and fill_budget)."""

    def __init__(self):
        self.score: dict[int, float] = {}
        self.via: dict[int, str] = {}
        self.ranked: list = []
        self.chosen: list = []
        self.hops = None
        self._score, self._fill = rc.score, rc.fill_budget

    def __enter__(self):
        def score(candidates, *rest):
            self.hops, self.turns = candidates.hops, candidates.turns
            self.score, self.via = self._score(candidates, *rest)
            return self.score, self.via

        def fill(ranked, budget, shorten=None):
            self.ranked = list(ranked)
            self.chosen = self._fill(self.ranked, budget, shorten)
            return self.chosen

        rc.score, rc.fill_budget = score, fill
        return self

    def __exit__(self, *exc):
        rc.score, rc.fill_budget = self._score, self._fill


def sample_of(turn) -> str:
    return turn.conversation.split("/", 1)[0]


def key(turn) -> tuple[str, str]:
    return sample_of(turn), turn.source_id


def place(trace: Trace, gold: tuple[str, str]) -> str:
    """Where a gold turn ranked, and its score."""
    for i, turn in enumerate(trace.ranked):
        if key(turn) == gold:
            return f"{i + 1} ({trace.score[turn.id]:.3f})"
    return "-"


def run(store, embedder, question, scope, settings, as_of):
    with Trace() as trace:
        context = rc.reconstruct(store, embedder, question, scope, settings, as_of)
    return context, trace


def cause(gold: tuple[str, str], one, wide, sample: str) -> str:
    by_key_one = {key(t): tid for tid, t in one.turns.items()}
    by_key_wide = {key(t): tid for tid, t in wide.turns.items()}
    if gold not in by_key_wide:
        tid = by_key_one.get(gold)
        how = one.via.get(tid, "?") if tid is not None else "?"
        if how in ("anchor", "lexical"):
            return "not candidate, anchor in one"
        if one.hops is not None and tid is not None:
            srcs = [int(s) for s, d in zip(one.hops.src, one.hops.dst, strict=True) if int(d) == tid] + \
                   [int(d) for s, d in zip(one.hops.src, one.hops.dst, strict=True) if int(s) == tid]
            sessions = {one.turns[s].session for s in srcs if s in one.turns}
            across = one.turns[tid].session not in sessions
            return f"not candidate, {how} in one" + (" across sessions" if across else "")
        return f"not candidate, {how} in one"
    tid = by_key_wide[gold]
    ranked_ids = [t.id for t in wide.ranked]
    rank = ranked_ids.index(tid)
    chosen = {t.id for t in wide.chosen}
    last = max(ranked_ids.index(t) for t in chosen)
    if rank < last:
        return "candidate, skipped for its cost above the last chosen"
    above = wide.ranked[:rank]
    others = sum(1 for t in above if sample_of(t) != sample and t.id in chosen)
    own = sum(1 for t in above if sample_of(t) == sample and t.id in chosen)
    return "candidate, budget: outranked by other samples" if others > own else \
        "candidate, budget: outranked by its own sample"


def main(one_db: str, wide_db: str, mode: str = "wide", text: str = "") -> None:
    settings = replace(Settings(), **variant(text))
    one_set = load_locomo(LOCOMO)
    wide_set = load_locomo(LOCOMO, as_exports=True)
    one_store, wide_store = open_store(one_db), open_store(wide_db)
    names = [name for _, name, _ in wide_store.conversations()]
    embedder = CachedQuestions(get_embedder(None))
    causes: Counter = Counter()
    questions: Counter = Counter()
    header_share: list[float] = []
    examples = []
    for q1, qw in zip(one_set.questions, wide_set.questions, strict=True):
        if q1.category not in WANTED or not q1.gold_turns:
            continue
        c1, t1 = run(one_store, embedder, q1.question, q1.conversation, settings, q1.as_of)
        if not set(q1.gold_turns) <= {e.source_id for e in c1.evidence}:
            continue
        scope = None if mode == "wide" else [n for n in names if n.startswith(q1.conversation + "/")]
        cw, tw = run(wide_store, embedder, qw.question, scope, settings, qw.as_of)
        shown = {(e.conversation.split("/", 1)[0], e.source_id) for e in cw.evidence}
        missing = [(q1.conversation, g) for g in q1.gold_turns if (q1.conversation, g) not in shown]
        questions[q1.category, "all in one"] += 1
        if not missing:
            continue
        questions[q1.category, "lost"] += 1
        headers = sum(estimate_tokens(line) for line in break_lines(tw.chosen))
        header_share.append(headers / max(cw.tokens, 1))
        found = [cause(g, t1, tw, q1.conversation) for g in missing]
        causes.update(found)
        chats = len({e.conversation for e in cw.evidence})
        one_headers = sum(estimate_tokens(line) for line in break_lines(t1.chosen))
        places = [f"{g}: rank one {place(t1, g)} / {len(t1.chosen)} chosen, wide {place(tw, g)} / {len(tw.chosen)}"
                  for g in missing]
        examples.append((q1.qid, q1.category, q1.question, places, found, chats, f"{one_headers}→{headers}"))
    for (category, what), n in sorted(questions.items()):
        print(f"{category:12s} {what:10s} {n}")
    print("causes of missing gold turns:")
    for what, n in causes.most_common():
        print(f"  {n:4d}  {what}")
    if header_share:
        print(f"header tokens in the lost questions' evidence: mean {sum(header_share) / len(header_share):.3f}")
    for qid, category, question, places, found, chats, headers in examples[:40]:
        print(qid, category, question, places, found, f"chats={chats} headers={headers}")


if __name__ == "__main__":
    main(*sys.argv[1:])
