"""The answer line a person reads, on every question set (issue 49): does the offline answer's first line
hold the gold answer, and when does it say nothing answers?

    python bench/bench_answers.py [--cache-dir DIR] [--local N] [--sets sharegpt,realtalk,locomo,samples]

records bench/results/answers.json and renders bench/RESULTS.md ("Answers: the line a person reads";
notes in bench/answers_notes.md). About 50 minutes on 2 idle cores, most of it LoCoMo's 1,986 questions;
`--local N` adds N questions of each set answered by `local/qwen2.5-1.5b` (about 20-40 s each); without it a
set keeps the local sample recorded before, shown with the day it was measured.

- sharegpt: bench/sharegpt_questions.json over its export (bench/sharegpt_questions.py: 120 real chats, one
  memory), every question asked with no conversation named, as `cuemem ask` does offline; the `tune` and
  `check` halves apart (only `tune` was looked at while the answer changed), abstention on the questions
  nothing answers.
- realtalk: `cuemem eval locomo realtalk-dev.json --offline-answers`: category 2 (one fact or a date),
  category 1 (several facts gathered) apart.
- locomo: `cuemem eval locomo locomo10.json --adversarial --offline-answers`: single-hop and temporal
  together (the issue's goal), the other categories, abstention on category 5 and false abstention on
  the answerable questions.
- samples: the sample dialogues' question tables (tests/questions.py's rule, bench/bench_questions.py).

Per set: line = the answer line (the first, at most 240 characters) holds every content word of the gold
answer; F1 its token F1; block = the line and its quoted sources hold them; none = no answer given;
lone = lines of at most two words that are not the answer.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.pop("CUEMEM_MODEL", None)  # offline answers, whatever the environment names

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data"
sys.path.insert(0, str(HERE))

import report  # noqa: E402
import sharegpt_questions  # noqa: E402

from cuemem_cli.evaluate.metrics import answer_holds, answer_line, offline_scores, token_f1  # noqa: E402

SETS = ("sharegpt", "realtalk", "locomo", "samples")
LOCAL_GROUPS = ("category 2", "single-hop + temporal")  # the local model answers these (and the abstention ones)
LOCAL_MODEL = "local/qwen2.5-1.5b"
_DONT_KNOW = re.compile(r"\b(?:do(?:es)? not know|don't know|not (?:mentioned|specified|stated|provided)|"
                        r"no information|cannot (?:be )?(?:determine|answer|find)|unknown|"
                        r"not (?:in|clear from) the excerpts)\b", re.I)


def score(records: list[dict[str, Any]]) -> dict[str, Any]:
    """line / F1 / block over the records with a gold answer, none over all, lone wrong lines counted."""
    def mean(key: str) -> float | None:
        values = [r[key] for r in records if r.get(key) is not None]
        return round(sum(values) / len(values), 3) if values else None

    lone = [r for r in records if r.get("offline_line_correct") is False and r.get("form") == "answer"
            and len((answer_line(r["answer"]) or "").split()) <= 2]
    return {"questions": len(records), "scored": sum(r.get("offline_correct") is not None for r in records),
            "line": mean("offline_line_correct"), "f1": mean("offline_line_f1"), "block": mean("offline_correct"),
            "none": mean("offline_abstained"), "lone_wrong": len(lone), "all_evidence": mean("all_evidence")}


# ------------------------------------------------------------------ ShareGPT: a person's own ChatGPT history
def sharegpt(folder: Path, questions: dict[str, Any] | None = None, export: Path | None = None,
             local: int = 0) -> dict[str, Any]:
    """Ingest the export (written here unless given) into a memory in `folder` and ask every question of the
    set offline, with no conversation named."""
    from cuemem_cli.memory import Memory

    questions = questions or sharegpt_questions.load()
    if export is None:
        export = folder / "sharegpt-export.json"
        sharegpt_questions.write_export(export, questions)
    db = folder / "sharegpt.db"
    db.unlink(missing_ok=True)
    subprocess.run([sys.executable, "-m", "cuemem_cli", "--db", str(db), "ingest", "--from", "chatgpt", str(export)],
                   check=True, capture_output=True, text=True)
    records = []
    with Memory(db, create=False) as memory:
        for q in questions["questions"]:
            asked = memory.ask(q["question"], record_retrieval=False)
            answer, shown = asked.answer, {e.source_id for e in asked.context.evidence}
            records.append({"id": q["id"], "question": q["question"], "gold": q["answer"], "kind": q["kind"],
                            "split": q["split"], "answer": answer.text, "form": answer.form,
                            # the context holds every message the answer is in (none for an abstention question)
                            "all_evidence": set(q["evidence"]) <= shown if q["answer"] is not None else None,
                            **offline_scores(q["answer"] or "", answer.text, q["answer"] is None)})
        local_result = _local_sharegpt(memory, questions["questions"], local, records) if local else None
    answerable = [r for r in records if r["gold"] is not None]
    result = {"all": score(answerable), **{split: score([r for r in answerable if r["split"] == split])
                                           for split in ("tune", "check")},
              "abstention": score([r for r in records if r["gold"] is None]),
              "kinds": {kind: score([r for r in answerable if r["kind"] == kind])
                        for kind in sorted({r["kind"] for r in answerable})},
              "wrong": [_wrong(r) for r in answerable if not r["offline_line_correct"]]}
    if local_result:
        result["local"] = local_result
    return result


def _wrong(record: dict[str, Any]) -> dict[str, Any]:
    return {"question": record["question"], "gold": record["gold"], "form": record["form"],
            "line": answer_line(record["answer"])}


# ------------------------------------------------------------------ LoCoMo-shaped sets, through `cuemem eval`
def run_eval(file: Path, cache_dir: Path, adversarial: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`cuemem eval locomo FILE --systems cuemem --budget 2000 --offline-answers`: its summary and records."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "eval.json"
        command = [sys.executable, "-m", "cuemem_cli", "eval", "locomo", str(file), "--systems", "cuemem",
                   "--budget", "2000", "--offline-answers", "--cache-dir", str(cache_dir), "--out", str(out), "--json"]
        subprocess.run(command + (["--adversarial"] if adversarial else []), check=True, capture_output=True, text=True)
        data = json.loads(out.read_text(encoding="utf-8"))
    records = [{**r, "form": r.get("offline_form"), "answer": r.get("offline_answer")} for r in data["records"]]
    return data["summary"], records


def eval_set(file: Path, cache_dir: Path, adversarial: bool, groups: dict[str, tuple[str, ...]],
             local: int = 0) -> dict[str, Any]:
    summary, records = run_eval(file, cache_dir, adversarial)
    result: dict[str, Any] = {name: score([r for r in records if r["category"] in categories])
                              for name, categories in groups.items()}
    answerable = [r for r in records if not r["abstention"]]
    result["answerable"] = score(answerable)
    if adversarial:
        result["abstention"] = score([r for r in records if r["abstention"]])
    result["questions"] = len(records)
    if local:
        result["local"] = _local_eval(summary["database"], records, groups, local)
    return result


# ------------------------------------------------------------------ the sample dialogues' questions
def samples() -> dict[str, Any]:
    import bench_questions

    return bench_questions.measure()


# ------------------------------------------------------------------ the local model on a sample of each set
def _local_answer(memory, question: str, conversation: str | None = None, as_of: str | None = None):
    import time

    started = time.perf_counter()
    answer = memory.ask(question, conversation, as_of=as_of, model=LOCAL_MODEL, record_retrieval=False).answer
    return answer.text, time.perf_counter() - started


def _local_scores(gold: str | None, text: str | None, seconds: float) -> dict[str, Any]:
    abstained = not text or bool(_DONT_KNOW.search(text))
    line = answer_line(text)
    return {"line": None if gold is None else bool(answer_holds(gold, line)),
            "f1": None if gold is None else token_f1(gold, line), "none": abstained, "seconds": round(seconds, 1)}


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def mean(key: str) -> float | None:
        values = [r[key] for r in rows if r[key] is not None]
        return round(sum(values) / len(values), 3) if values else None

    return {"questions": len(rows), "line": mean("line"), "f1": mean("f1"), "none": mean("none"),
            "seconds": mean("seconds")}


def _local_sharegpt(memory, questions: list[dict[str, Any]], n: int, records: list[dict[str, Any]]) -> dict[str, Any]:
    """`n` answerable questions and up to 4 that nothing answers, answered by the local model, beside the
    offline answer to the same questions (`records`)."""
    rng = random.Random(49)
    answerable = rng.sample([q for q in questions if q["answer"] is not None], n)
    nothing = rng.sample([q for q in questions if q["answer"] is None], min(n, 4))
    offline_of = {r["id"]: r for r in records}
    out: dict[str, Any] = {}
    for key, asked in (("answerable", answerable), ("abstention", nothing)):
        rows = []
        for q in asked:
            text, seconds = _local_answer(memory, q["question"])
            offline = offline_of[q["id"]]
            rows.append({**_local_scores(q["answer"], text, seconds), "question": q["question"], "answer": text,
                         "offline": {"line": offline["offline_line_correct"], "f1": offline["offline_line_f1"],
                                     "none": offline["offline_abstained"]}})
        out[key] = _summary(rows) | {"offline": _summary([{**row["offline"], "seconds": None} for row in rows]),
                                     "answers": rows}
    return out


def _local_eval(database: str, records: list[dict[str, Any]], groups: dict[str, tuple[str, ...]],
                n: int) -> dict[str, Any]:
    """`n` questions of each group (and of the abstention questions) answered by the local model over the
    eval's own database, with the evidence `cuemem ask` gives (the eval's cuemem system)."""
    from cuemem_cli.memory import Memory

    rng = random.Random(49)
    chosen = {name: rng.sample([r for r in records if r["category"] in categories], n)
              for name, categories in groups.items() if name in LOCAL_GROUPS}
    adversarial = [r for r in records if r["abstention"]]
    if adversarial:
        chosen["abstention"] = rng.sample(adversarial, n)
    out: dict[str, Any] = {}
    with Memory(database, create=False) as memory:
        for name, asked in chosen.items():
            rows = []
            for r in asked:
                text, seconds = _local_answer(memory, r["question"], r["conversation"], r["as_of"])
                offline = {"line": r["offline_line_correct"], "f1": r["offline_line_f1"],
                           "none": r["offline_abstained"]}
                rows.append({**_local_scores(None if r["abstention"] else r["gold_answer"], text, seconds),
                             "offline": offline, "question": r["question"], "answer": text})
            out[name] = _summary(rows) | {"offline": _summary([{**row["offline"], "seconds": None} for row in rows]),
                                          "answers": rows}
    return out


# ------------------------------------------------------------------ the run
Groups = dict[str, tuple[str, ...]]  # a row of the result: the categories it is measured over
REALTALK_GROUPS: Groups = {"category 2": ("temporal",), "category 1": ("multi-hop",), "category 3": ("open-domain",)}
LOCOMO_GROUPS: Groups = {"single-hop + temporal": ("single-hop", "temporal"), "single-hop": ("single-hop",),
                 "temporal": ("temporal",), "multi-hop": ("multi-hop",), "open-domain": ("open-domain",)}


def run(sets: tuple[str, ...], cache_dir: Path, local: int = 0, data: Path = DATA) -> dict[str, Any]:
    """Each set's result, with the time it was measured and how many questions the local model answered."""
    result: dict[str, Any] = {}
    cache_dir.mkdir(parents=True, exist_ok=True)
    for name in sets:
        started = datetime.now().isoformat(timespec="minutes")
        if name == "sharegpt":
            with tempfile.TemporaryDirectory(dir=cache_dir) as folder:
                result[name] = sharegpt(Path(folder), local=local)
        elif name == "realtalk":
            result[name] = eval_set(data / "realtalk-dev.json", cache_dir, False, REALTALK_GROUPS, local)
        elif name == "locomo":
            result[name] = eval_set(data / "locomo10.json", cache_dir, True, LOCOMO_GROUPS, local)
        else:
            result[name] = samples()
        result[name] |= {"measured_at": started, "local_model": LOCAL_MODEL if local and name != "samples" else None}
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "cuemem-bench-answers",
                        help="the eval cache and the ShareGPT memory (default: a folder in the system's temp dir)")
    parser.add_argument("--local", type=int, default=0, help="also answer N questions of each set with the local model")
    parser.add_argument("--sets", default=",".join(SETS), help=f"which sets ({', '.join(SETS)})")
    args = parser.parse_args(argv)
    sets = tuple(s for s in args.sets.split(",") if s)
    unknown = set(sets) - set(SETS)
    if unknown:
        parser.error(f"unknown set {', '.join(sorted(unknown))}: choose from {', '.join(SETS)}")
    result = run(sets, args.cache_dir, args.local)
    previous = report.load("answers") or {}
    for name, figures in result.items():  # without --local, a set keeps the local sample recorded before, dated
        before = previous.get(name, {})
        if args.local:
            figures["local_measured_at"] = figures["measured_at"]
        elif before.get("local"):
            figures |= {"local": before["local"], "local_model": before.get("local_model"),
                        "local_measured_at": before.get("local_measured_at", before.get("measured_at"))}
    report.save("answers", previous | result)  # a run of some sets keeps the others' recorded figures
    print(report.render())


if __name__ == "__main__":
    main()
