"""Measure `local/qwen2.5-1.5b` (extra `cuemem[local]`): answer latency per evidence budget, and QA accuracy.

    python bench/experiments/local_llm.py speed  [--budgets 500 1000 2000] [--questions 10]
    python bench/experiments/local_llm.py locomo [--budget 1000] [--limit 60]
    python bench/experiments/local_llm.py seeded [--per-category 20] [--seed 22] [--budget 2000]

`speed`: the ten questions of sample_dialogues/README.md about maya_and_leo.jsonl, asked through
`Memory.ask` at each budget; seconds per answer, prompt tokens, and whether the answer holds the
expected key (a rough check, not a benchmark).

`locomo`: the first `--limit` questions (categories 1–4) of LoCoMo conv-26, answered by the local model
from cuemem's context and from naive RAG's at the same budget, through `cuemem eval`'s runner (same
systems, same answer prompt, same judge prompt). Scored twice: by the same 1.5B model as judge (a weak
judge: read its numbers as a rough signal), and by string match against the gold answer. Every record
is written as JSON beside the summary, so the numbers can be checked by hand.

`seeded` (issue 22's measurement): `--per-category` questions drawn with `random.Random(--seed)` from each
of LoCoMo's single-hop, temporal and multi-hop questions over all ten conversations, answered by the
local model from cuemem's evidence and from naive RAG's at the same `--budget`, through `cuemem eval`'s
runner (same answer prompt as `ask`, no judge). Scored by the rule `cuemem eval --offline-answers` uses
(every content token of the gold answer occurs in the answer: `metrics.answer_holds`) and by token F1
over the same content tokens (SQuAD's F1 without its article rule), with seconds per answer.
"""

from __future__ import annotations

import argparse
import json
import re
import string
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

LOCAL = "local/qwen2.5-1.5b"
SAMPLE = REPO / "sample_dialogues" / "maya_and_leo.jsonl"
LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
OUT = Path(__file__).resolve().parent / "results"  # the records of these measurements

# (question, regex the answer must match to count as right) from sample_dialogues/README.md
SAMPLE_QUESTIONS = [
    ("Where does Maya live now?", r"denver"),
    ("Where did Maya live in March 2023?", r"portland"),
    ("What breed is the dog Maya adopted?", r"beagle"),
    ("When did Maya adopt her dog?", r"\b(6(th)? may|may 6(th)?)\b"),
    ("Where does Leo work?", r"fernwood"),
    ("When did Leo start his new job?", r"\b(1(st)? june|june 1(st)?)\b"),
    ("When did Maya move to Denver?", r"\b(19(th)? august|august 19(th)?)\b"),
    ("Where and when did Leo's sister Ana get married?", r"spokane"),
    ("What did Biscuit eat, and when?", r"sock"),
    ("When is Leo visiting Maya in Denver?", r"\b(15(th)?|december 15)"),
]


def speed(args) -> dict:
    from cuemem_cli import Memory
    from cuemem_cli.models import local_llm
    from cuemem_cli.recall.settings import Settings

    started = time.perf_counter()
    local_llm.load()
    load_s = time.perf_counter() - started
    rows, details = [], []
    with (tempfile.TemporaryDirectory(prefix="cuemem-bench-") as folder,
          Memory(Path(folder) / "maya_and_leo.db") as memory):
        memory.ingest_file(str(SAMPLE))
        memory.ask("warm-up", "maya-and-leo", model=LOCAL, record_retrieval=False)  # first call pays one-time setup
        for budget in args.budgets:
            seconds, prompt_tokens, right = [], [], 0
            for question, key in SAMPLE_QUESTIONS[:args.questions]:
                result = memory.ask(question, "maya-and-leo", Settings(budget=budget), as_of="2023-10-31",
                                    model=LOCAL, record_retrieval=False)
                answer = result.answer
                ok = bool(re.search(key, (answer.text or "").lower()))
                right += ok
                seconds.append(answer.timing_ms / 1000)
                prompt_tokens.append(answer.usage.get("prompt_tokens", 0))
                details.append({"budget": budget, "question": question, "answer": answer.text, "right": ok,
                                "seconds": round(answer.timing_ms / 1000, 2), "usage": answer.usage,
                                "evidence_tokens": result.context.tokens,
                                "evidence": [e.source_id for e in result.context.evidence]})
                print(f"budget {budget}: {answer.timing_ms / 1000:5.1f} s  {'ok ' if ok else 'no '} {question} → "
                      f"{(answer.text or '')[:90]!r}", file=sys.stderr)
            seconds.sort()
            rows.append({"budget": budget, "questions": len(seconds), "mean_s": round(sum(seconds) / len(seconds), 1),
                         "median_s": round(seconds[len(seconds) // 2], 1), "max_s": round(seconds[-1], 1),
                         "mean_prompt_tokens": round(sum(prompt_tokens) / len(prompt_tokens)),
                         "right": right})
    return {"model": LOCAL, "load_s": round(load_s, 1), "rows": rows, "answers": details}


_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalise(text: str) -> str:
    text = text.lower().translate(str.maketrans({c: " " for c in string.punctuation}))
    return " ".join(_ARTICLES.sub(" ", text).split())


def string_scores(answer: str | None, gold: str) -> dict:
    """exact: the normalised gold answer appears in the normalised answer; partial: at least half of the
    gold's words appear; recall: the share of the gold's words that appear."""
    said, wanted = normalise(answer or ""), normalise(gold)
    words = set(said.split())
    gold_words = wanted.split()
    recall = sum(w in words for w in gold_words) / len(gold_words) if gold_words else 0.0
    exact = bool(wanted) and f" {wanted} " in f" {said} "
    return {"exact": exact, "partial": recall >= 0.5, "recall": round(recall, 3)}


def locomo(args) -> dict:
    from cuemem_cli.models import local_llm
    from cuemem_cli.evaluate.runner import EvalConfig, run

    local_llm.load()
    config = EvalConfig(dataset="locomo", file=Path(args.file), systems=("cuemem", "naive-rag"), budgets=(args.budget,),
                        conversations=("conv-26",), limit=args.limit, model=LOCAL, judge_model=LOCAL, workers=1)
    records_file = OUT / f"locomo_conv26_{args.limit}q_b{args.budget}.records.jsonl"
    records_file.parent.mkdir(parents=True, exist_ok=True)

    def progress(phase, done, total):
        print(f"{phase}: {done}/{total}", file=sys.stderr)

    result = run(config, progress)
    rows = []
    with open(records_file, "w", encoding="utf-8") as out:
        for record in result.records:
            record["string_match"] = string_scores(record.get("answer"), record["gold_answer"])
            out.write(json.dumps(record) + "\n")
    for name in config.systems:
        mine = [r for r in result.records if r["system"] == name]
        answered = [r for r in mine if r.get("answer") is not None]
        judged = [r for r in mine if r.get("judgement")]

        def share(items, test):
            return round(sum(1 for r in items if test(r)) / len(items), 3) if items else None

        seconds = sorted((r["latency_ms"]["answer"] or 0) / 1000 for r in answered)
        rows.append({
            "system": name, "budget": args.budget, "questions": len(mine), "answered": len(answered),
            "judge_accuracy": share(judged, lambda r: r["judgement"] == "CORRECT"),
            "exact": share(answered, lambda r: r["string_match"]["exact"]),
            "partial": share(answered, lambda r: r["string_match"]["partial"]),
            "mean_recall": (round(sum(r["string_match"]["recall"] for r in answered) / len(answered), 3)
                            if answered else None),
            "evidence_recall": round(sum((r["retrieval"] or {}).get("recall") or 0 for r in mine) / len(mine), 3),
            "mean_context_tokens": round(sum(r["tokens"]["estimate"] for r in mine) / len(mine)),
            "median_answer_s": round(seconds[len(seconds) // 2], 1) if seconds else None,
        })
    return {"model": LOCAL, "judge": LOCAL, "limit": args.limit, "budget": args.budget,
            "interrupted": result.interrupted, "error": result.summary.get("error"),
            "elapsed_s": result.summary["elapsed_s"], "records": str(records_file.relative_to(REPO)), "rows": rows}


def token_f1(gold: str, answer: str | None) -> float:
    """F1 of the answer's content tokens against the gold answer's (multisets, as SQuAD counts them)."""
    from collections import Counter

    from cuemem_cli.evaluate.metrics import content_tokens

    wanted, said = Counter(content_tokens(gold)), Counter(content_tokens(answer or ""))
    common = sum((wanted & said).values())
    if not common:
        return 0.0
    precision, recall = common / sum(said.values()), common / sum(wanted.values())
    return 2 * precision * recall / (precision + recall)


SEEDED_CATEGORIES = {4: "single-hop", 2: "temporal", 1: "multi-hop"}  # LoCoMo's category numbers


def seeded_subset(source: Path, target: Path, per_category: int, seed: int) -> int:
    """Write a LoCoMo file whose samples keep only the drawn questions; returns how many were drawn."""
    import random

    data = json.loads(source.read_text(encoding="utf-8"))
    rng = random.Random(seed)
    drawn: set[tuple[str, int]] = set()
    for number in SEEDED_CATEGORIES:
        pool = [(s["sample_id"], i) for s in data for i, qa in enumerate(s["qa"]) if qa.get("category") == number]
        drawn |= set(rng.sample(pool, per_category))
    for sample in data:
        sample["qa"] = [qa for i, qa in enumerate(sample["qa"]) if (sample["sample_id"], i) in drawn]
    target.write_text(json.dumps([s for s in data if s["qa"]]), encoding="utf-8")
    return len(drawn)


def seeded(args) -> dict:
    """One question at a time through the runner, each record appended to the records file as it is
    answered: an interrupted run resumes where it stopped (same seed, same file), since an hour of a
    shared machine is not always available in one piece."""
    import dataclasses

    from cuemem_cli.models import local_llm
    from cuemem_cli.evaluate import runner
    from cuemem_cli.evaluate.metrics import answer_holds
    from cuemem_cli.evaluate.runner import EvalConfig, run

    if not args.summary_only:
        local_llm.load()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    subset = work / f"locomo_seeded{args.seed}_{args.per_category}.json"
    drawn = seeded_subset(Path(args.file), subset, args.per_category, args.seed)
    name = f"locomo_seeded{args.seed}_{drawn}q_b{args.budget}"
    records_file = OUT / f"{name}.records.jsonl"
    records_file.parent.mkdir(parents=True, exist_ok=True)
    records = [json.loads(line) for line in records_file.open()] if records_file.exists() else []
    done = {r["question_id"] for r in records}
    config = EvalConfig(dataset="locomo", file=subset, systems=("cuemem", "naive-rag"), budgets=(args.budget,),
                        model=LOCAL, judge_model=None, workers=1, cache_dir=work / "cache")
    everything = runner.load_dataset(config)
    load_dataset = runner.load_dataset
    elapsed = 0.0
    try:
        for number, question in enumerate(everything.questions, start=1):
            if question.qid in done or args.summary_only:
                continue
            runner.load_dataset = lambda config, q=question: dataclasses.replace(everything, questions=[q])
            result = run(config)
            elapsed += result.summary["elapsed_s"]
            if result.interrupted:
                raise SystemExit(f"stopped at {question.qid}: {result.summary.get('error')}")
            with open(records_file, "a", encoding="utf-8") as out:
                for record in result.records:
                    record["holds"] = answer_holds(record["gold_answer"], record.get("answer"))
                    record["token_f1"] = round(token_f1(record["gold_answer"], record.get("answer")), 3)
                    out.write(json.dumps(record) + "\n")
                    records.append(record)
            print(f"{number}/{drawn} {question.qid} {question.category}: "
                  + "; ".join(f"{r['system']} {r['holds']} {r['token_f1']} {(r.get('answer') or '')[:60]!r}"
                              for r in result.records), file=sys.stderr)
    finally:
        runner.load_dataset = load_dataset
    rows = []
    for system in config.systems:
        for category in ("all", *SEEDED_CATEGORIES.values()):
            mine = [r for r in records if r["system"] == system and category in ("all", r["category"])]
            answered = [r for r in mine if r.get("answer") is not None]
            scored = [r for r in answered if r["holds"] is not None]
            seconds = sorted((r["latency_ms"]["answer"] or 0) / 1000 for r in answered)
            rows.append({
                "system": system, "category": category, "questions": len(mine), "answered": len(answered),
                "token_rule": round(sum(r["holds"] for r in scored) / len(scored), 3) if scored else None,
                "token_f1": round(sum(r["token_f1"] for r in answered) / len(answered), 3) if answered else None,
                "all_evidence": (round(sum(bool((r["retrieval"] or {}).get("all_evidence")) for r in mine) / len(mine),
                                       3) if mine else None),
                "mean_s": round(sum(seconds) / len(seconds), 1) if seconds else None,
                "median_s": round(seconds[len(seconds) // 2], 1) if seconds else None,
            })
    return {"model": LOCAL, "seed": args.seed, "questions": drawn, "budget": args.budget,
            "answered_questions": len({r["question_id"] for r in records}), "elapsed_s_this_run": round(elapsed, 1),
            "records": str(records_file.relative_to(REPO)), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--budgets", type=int, nargs="+", default=[500, 1000, 2000])
    s.add_argument("--questions", type=int, default=len(SAMPLE_QUESTIONS))
    q = sub.add_parser("locomo")
    q.add_argument("--budget", type=int, default=1000)
    q.add_argument("--limit", type=int, default=60)
    q.add_argument("--file", default=str(LOCOMO))
    d = sub.add_parser("seeded")
    d.add_argument("--per-category", type=int, default=20)
    d.add_argument("--seed", type=int, default=22)
    d.add_argument("--budget", type=int, default=2000)
    d.add_argument("--file", default=str(LOCOMO))
    d.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "cuemem-local-llm"),
                   help="the drawn questions and the eval database, kept between resumed runs (delete after)")
    d.add_argument("--summary-only", action="store_true", help="summarise the answers recorded so far, answer none")
    args = parser.parse_args()
    summary = {"speed": speed, "locomo": locomo, "seeded": seeded}[args.command](args)
    OUT.mkdir(parents=True, exist_ok=True)
    name = {"speed": "speed", "locomo": f"locomo_conv26_{getattr(args, 'limit', 0)}q_b{args.budget}",
            "seeded": f"locomo_seeded{getattr(args, 'seed', 0)}_{summary.get('questions')}q_b{args.budget}",
            }[args.command]
    (OUT / f"{name}.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in summary.items() if k != "answers"}, indent=2))


if __name__ == "__main__":
    main()
