"""LoCoMo asked over one memory (issue 34): the as-exports setting against the one-conversation one.

Reads the `--out` files of three `cuemem eval locomo` runs and writes bench/results/locomo_memory_wide.json:
all-evidence and recall per system and category, each setting's gap to one-conversation cuemem, and the
goals checked. The runs (about an hour each on 2 loaded cores; `nice` them):

    cuemem eval locomo locomo10.json --systems cuemem,naive-rag,bm25 --budget 2000 --out one.json
    cuemem eval locomo locomo10.json --setting as-exports --systems cuemem,naive-rag,bm25 --budget 2000 \\
        --out as-exports.json
    cuemem eval locomo locomo10.json --setting as-exports --conversations conv-26 \\
        --systems cuemem,naive-rag,bm25 --budget 2000 --out as-exports-conv26.json
    cuemem eval locomo locomo10.json --conversations conv-26 --systems cuemem --budget 2000 \
        --cache-dir NEW_DIR --out one-conv26-alone.json    # optional: conv-26 in a memory of its own
    python bench/locomo_memory_wide.py one.json as-exports.json as-exports-conv26.json [one-conv26-alone.json]

Goals (issue 34): as-exports all-evidence >= 0.85 at 2,000 tokens and every category within 0.03 of
one-conversation; one sample's sessions alone >= that sample's one-conversation figure - 0.01.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

BUDGET = 2000
OUT = Path(__file__).resolve().parent / "results" / "locomo_memory_wide.json"


def scores(records: list[dict[str, Any]], system: str, conversation: str | None = None,
           questions: set[str] | None = None) -> dict[str, Any]:
    """all-evidence and recall per category (and overall) of one system at BUDGET, from the records (of
    `questions` only, when given)."""
    chosen = [r for r in records if r["system"] == system and r["budget"] == BUDGET and r["retrieval"]
              and (conversation is None or r["conversation"] == conversation)
              and (questions is None or r["question_id"] in questions)]
    out: dict[str, Any] = {}
    for category in ["overall", *sorted({r["category"] for r in chosen})]:
        rows = [r for r in chosen if category in ("overall", r["category"])]
        out[category] = {"n": len(rows),
                         "all_evidence": round(sum(r["retrieval"]["all_evidence"] for r in rows) / len(rows), 4),
                         "recall": round(sum(r["retrieval"]["recall"] for r in rows) / len(rows), 4)}
    return out


def run(name: str, partial: bool = False) -> dict[str, Any]:
    """A run's --out file; only the as-exports run may be one interrupted (Ctrl-C), and is then compared
    with the one-conversation run on the questions it finished."""
    data = json.loads(Path(name).read_text())
    summary = data["summary"]
    if summary["interrupted"] and not partial:
        raise SystemExit(f"{name}: an interrupted run ({summary['questions']} of {summary['questions_selected']})")
    return data


def main(one_path: str, wide_path: str, conv26_path: str, alone_path: str | None = None) -> None:
    one, wide, conv26 = run(one_path), run(wide_path, partial=True), run(conv26_path)
    systems = wide["summary"]["systems"]
    asked = {r["question_id"] for r in wide["records"]} if wide["summary"]["interrupted"] else None
    table = {
        "one-conversation": {s: scores(one["records"], s) for s in systems},
        "as-exports": {s: scores(wide["records"], s) for s in systems},
        **({"one-conversation, the questions as-exports finished": {s: scores(one["records"], s, questions=asked)
                                                                    for s in systems}} if asked else {}),
        "one-conversation, conv-26": {s: scores(one["records"], s, "conv-26") for s in systems},
        "as-exports, conv-26 sessions only": {s: scores(conv26["records"], s) for s in systems},
    }
    if alone_path:  # conv-26 without the nine other samples in its memory (their semantic edges included)
        alone_run = run(alone_path)
        table["one-conversation, conv-26 alone in its memory"] = {
            s: scores(alone_run["records"], s) for s in alone_run["summary"]["systems"]}
    base = table["one-conversation, the questions as-exports finished" if asked else "one-conversation"]["cuemem"]
    mem = table["as-exports"]["cuemem"]
    gaps = {c: round(mem[c]["all_evidence"] - base[c]["all_evidence"], 4) for c in base}
    alone = table["as-exports, conv-26 sessions only"]["cuemem"]["overall"]["all_evidence"]
    alone_base = table["one-conversation, conv-26"]["cuemem"]["overall"]["all_evidence"]
    result: dict[str, Any] = {
        "budget": BUDGET,
        "runs": {key: {"setting": d["summary"]["setting"], "elapsed_s": d["summary"]["elapsed_s"],
                       "questions": d["summary"]["questions"], "interrupted": d["summary"]["interrupted"],
                       "ingest": {k: d["summary"]["ingest"][k] for k in ("turns_added", "cues", "seconds")},
                       "conversations": len(d["summary"]["ingest"]["cached"]) + len(d["summary"]["ingest"]["ingested"])}
                 for key, d in (("one-conversation", one), ("as-exports", wide), ("as-exports-conv26", conv26))},
        "all_evidence": table,
        "as_exports_minus_one_conversation": gaps,  # on the same questions (all, unless interrupted)
        "goals": {
            "as-exports overall >= 0.85": mem["overall"]["all_evidence"] >= 0.85,
            "as-exports every category >= one-conversation - 0.03": all(g >= -0.03 for g in gaps.values()),
            "conv-26 sessions alone >= one-conversation conv-26 - 0.01": alone >= alone_base - 0.01,
        },
    }
    if alone_path:
        alone_figure = table["one-conversation, conv-26 alone in its memory"]["cuemem"]["overall"]["all_evidence"]
        result["goals"]["conv-26 sessions alone >= conv-26 alone in its memory - 0.01"] = alone >= alone_figure - 0.01
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({"gaps": gaps, "conv26": [alone, alone_base], "goals": result["goals"]}, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:5])
