"""Dense evidence (issue 25): would showing the lower-ranked turns as one-sentence excerpts help?

The idea: fill the first `after` tokens of the budget with turns as `ask` shows them, and show every turn
ranked below that as its sentences nearest the question cut to `limit` tokens (recall/excerpt.py), so that
more turns fit. This script re-fills each question's budget from cuemem's own unbudgeted ranking, so
the product is untouched, and scores each way by what the evidence *text* holds, since counting turn ids
would call a turn present even when its answering sentence was cut:

- all evidence: every gold turn is in the context (the `cuemem eval` measure);
- nothing cut: that, and no gold turn shown as an excerpt lost a content word of the gold answer that
  its whole text has;
- answer words: the share of the gold answer's content words found anywhere in the evidence text.

    python bench/experiments/dense.py DB [LOCOMO_JSON] [AFTER:LIMIT ...]
    python bench/experiments/dense.py ~/.cache/cuemem/eval/locomo-….db ../shared/data/locomo10.json 1000:20 500:30

DB is a `cuemem eval locomo` cache database (as for bench/replay.py). "whole" (as `ask` fills) is always
measured first; without AFTER:LIMIT pairs, 1000:20, 500:30 and 1000:40.

The reader test (extra `cuemem[local]`, ~35 s an answer on 2 cores; resumes from RECORDS):

    python bench/experiments/dense.py read DB LOCOMO_JSON 1000:20 COUNT RECORDS.jsonl
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from dataclasses import replace

from cuemem_cli.models.embedders import embed_questions, get_embedder, spec_for
from cuemem_cli.evaluate.datasets import load_locomo
from cuemem_cli.evaluate.metrics import content_tokens
from cuemem_cli.recall.evidence import context_tokens, fill_budget
from cuemem_cli.recall.excerpt import excerpt_turn
from cuemem_cli.recall.lines import turn_cost
from cuemem_cli.recall.reconstruct import reconstruct
from cuemem_cli.recall.settings import Settings
from cuemem_cli.text import without_names
from cuemem_cli.store.sqlite import SQLiteStore
from cuemem_cli.recall.view import conversation_source

DEFAULT_LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo10.json"


class Fills:
    """Each question's evidence as `ask` fills the budget ("whole") and as each AFTER:LIMIT dense fill."""

    def __init__(self, db: str, locomo: str, ways: list[tuple[int, int]]):
        self.dataset = load_locomo(locomo)
        self.store = SQLiteStore.open(db, create=False)
        self.embedder = get_embedder(spec_for(self.store.get_meta("embedding_model")), quick_start=True)
        self.ways = ways
        self.names = ["whole", *(f"{after}:{limit}" for after, limit in ways)]
        self.whole_text = {(name, m.source_id): m.text for name, messages in self.dataset.messages.items()
                           for m in messages}

    def questions(self):
        return [q for q in self.dataset.questions if not q.abstention and q.gold_turns]

    def of(self, q) -> dict[str, list]:
        store, embedder = self.store, self.embedder
        unbudgeted = replace(Settings(), budget=10**9)
        ranked_evidence = sorted(reconstruct(store, embedder, q.question, q.conversation, unbudgeted).evidence,
                                 key=lambda e: (-e.score, e.position))
        cid = store.conversation_id(q.conversation)
        source = conversation_source(store, cid, embedder.dim)
        by_source = {t.source_id: t for t in store.turns(cid)}
        ranked = [replace(by_source[e.source_id], text=e.text) for e in ranked_evidence]  # as ask shows them
        vector = embed_questions(embedder, [without_names(q.question, source.speakers()) or q.question])[0]
        similarity = source.sentence_similarities([t.id for t in ranked], vector)
        fills = {"whole": fill_budget(ranked, Settings().budget)}
        for after, limit in self.ways:
            spent, order = 0, []
            for turn in ranked:
                spent += turn_cost(turn)
                order.append(turn if spent <= after else excerpt_turn(turn, similarity[turn.id], limit))
            fills[f"{after}:{limit}"] = fill_budget(order, Settings().budget)
        return fills


def measure(db: str, locomo: str, ways: list[tuple[int, int]]) -> dict:
    fills = Fills(db, locomo, ways)
    per: dict[str, dict[str, list[tuple[bool, bool, float]]]] = {n: defaultdict(list) for n in fills.names}
    for q in fills.questions():
        wanted = set(content_tokens(q.answer))
        for name, chosen in fills.of(q).items():
            evidence = {t.source_id: t.text for t in chosen}
            present = all(g in evidence for g in q.gold_turns)
            kept = present and all(
                wanted & set(content_tokens(fills.whole_text[(q.conversation, g)]))
                <= set(content_tokens(evidence[g]))
                for g in q.gold_turns)
            shown = set(content_tokens(" ".join(evidence.values())))
            words = len(wanted & shown) / len(wanted) if wanted else 1.0
            for key in (q.category, "overall"):
                per[name][key].append((present, kept, words))
    return {name: {cat: {"n": len(rows), "all_evidence": round(sum(r[0] for r in rows) / len(rows), 3),
                         "nothing_cut": round(sum(r[1] for r in rows) / len(rows), 3),
                         "answer_words": round(sum(r[2] for r in rows) / len(rows), 3)}
                   for cat, rows in sorted(cats.items())}
            for name, cats in per.items()}


def read(db: str, locomo: str, way: tuple[int, int], count: int, records: Path, seed: int = 25) -> dict:
    """The reader test: the local model answers `count` multi-hop and open-domain questions (drawn with
    random.Random(seed) among those whose dense fill shows other turns than the whole fill) from each
    fill, with `ask`'s answer prompt. Each answer is appended to `records` as it comes, so a rerun resumes."""
    import random

    from local_llm import LOCAL, token_f1

    from cuemem_cli.answer.prompt import answer_with_model
    from cuemem_cli.evaluate.metrics import answer_holds
    from cuemem_cli.records import Context, Evidence

    fills = Fills(db, locomo, [way])
    dense = f"{way[0]}:{way[1]}"
    pool = [q for q in fills.questions() if q.category in ("multi-hop", "open-domain")]
    random.Random(seed).shuffle(pool)
    done = {(r["qid"], r["fill"]) for r in map(json.loads, records.read_text().splitlines())} \
        if records.exists() else set()
    asked = 0
    for q in pool:
        if asked >= count:
            break
        chosen = fills.of(q)
        if {t.source_id for t in chosen["whole"]} == {t.source_id for t in chosen[dense]}:
            continue
        asked += 1
        for name in ("whole", dense):
            if (q.qid, name) in done:
                continue
            turns = chosen[name]
            context = Context(q.question, q.conversation, q.as_of, (), tuple(
                Evidence(t.source_id, t.time, t.speaker, t.text, "anchor", t.session, t.position,
                         excerpt=t.text != fills.whole_text[(q.conversation, t.source_id)])
                for t in sorted(turns, key=lambda t: t.position)), context_tokens(turns), {})
            t0 = time.perf_counter()
            answer = answer_with_model(context, LOCAL).text
            gold_in = all(g in {t.source_id for t in turns} for g in q.gold_turns)
            with records.open("a") as out:
                out.write(json.dumps({"qid": q.qid, "category": q.category, "fill": name, "question": q.question,
                                      "gold": q.answer, "answer": answer, "holds": answer_holds(q.answer, answer),
                                      "f1": round(token_f1(q.answer, answer), 3), "all_evidence_ids": gold_in,
                                      "seconds": round(time.perf_counter() - t0, 1)}) + "\n")
    rows = [json.loads(line) for line in records.read_text().splitlines()] if records.exists() else []
    summary = {}
    for name in ("whole", dense):
        mine = [r for r in rows if r["fill"] == name]
        scored = [r for r in mine if r["holds"] is not None]
        summary[name] = {"answers": len(mine), "token_rule": round(sum(r["holds"] for r in scored) / len(scored), 3)
                         if scored else None,
                         "token_f1": round(sum(r["f1"] for r in mine) / len(mine), 3) if mine else None,
                         "all_evidence_ids": round(sum(r["all_evidence_ids"] for r in mine) / len(mine), 3)
                         if mine else None}
    return summary


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "read":  # dense.py read DB LOCOMO AFTER:LIMIT COUNT RECORDS
        _, db, locomo, way, count, out = args
        print(json.dumps(read(db, locomo, tuple(int(x) for x in way.split(":")), int(count), Path(out)), indent=2))
        sys.exit(0)
    pairs = [a for a in args if ":" in a and not a.endswith((".json", ".db"))]
    paths = [a for a in args if a not in pairs]
    ways = [tuple(int(x) for x in p.split(":")) for p in pairs] or [(1000, 20), (500, 30), (1000, 40)]
    result = measure(paths[0], paths[1] if len(paths) > 1 else str(DEFAULT_LOCOMO), ways)
    print(f"{'fill':10} {'category':12} {'n':>5} {'all evidence':>12} {'nothing cut':>11} {'answer words':>12}")
    for name, rows in result.items():
        for category, row in rows.items():
            print(f"{name:10} {category:12} {row['n']:5} {row['all_evidence']:12.3f} {row['nothing_cut']:11.3f}"
                  f" {row['answer_words']:12.3f}")
