"""Retrieval quality on LoCoMo (issue 6): cuemem, one ablation per scoring term and the baselines, all in
the same `cuemem eval` runs; writes the "Quality" section of bench/RESULTS.md and bench/quality.json.

    python bench/quality.py [LOCOMO_JSON]      # ~10 min on 2 idle cores once the eval cache is built
    python bench/quality.py --render           # rewrite the section from quality.json (notes edited)

Four runs of the documented command `cuemem eval locomo FILE --budget B --systems ... --json`:
every system at 2,000 tokens; cuemem at top-m 50 and 200 (the default is 100); cuemem and the
baselines at 1,000 and 4,000 tokens; cuemem and the baselines with the float embedder (`--embedder
onnx`, the paper's exact vectors) against the int8 default.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
MARKER = "<!-- quality: written by bench/quality.py -->"
ABLATIONS = ["no-graph", "no-semantic", "no-temporal", "no-lexical", "no-speaker", "no-date", "cue-only", "turn-only",
             "no-context", "mixed-context", "whole-turns"]
BASELINES = ["naive-rag", "bm25", "full-history"]
WHAT = {
    "cuemem": "all terms (the defaults of `cuemem ask`)",
    "no-graph": "no expansion: anchors and BM25 hits only",
    "no-semantic": "no semantic neighbours (sem-k 0)",
    "no-temporal": "no temporal neighbours (window 0)",
    "no-lexical": "no BM25 term or candidates",
    "no-speaker": "no lift for the named person's turns",
    "no-date": "no lift for turns said in a named period",
    "cue-only": "turn scored by its best cue only",
    "turn-only": "turn scored by its whole-text vector only",
    "no-context": "turn vector from the turn alone, nothing of the turn before it",
    "mixed-context": "turn vector from the turn alone, 0.3 of the previous turn's vector added (before m005)",
    "whole-turns": "no excerpts: a turn over 150 tokens shown whole",
    "naive-rag": "baseline: turns by MiniLM cosine",
    "bm25": "baseline: turns by FTS5 BM25",
    "full-history": "every turn, no budget",
}
CATEGORIES = ["multi-hop", "temporal", "open-domain", "single-hop"]


def run_eval(locomo: str, systems: list[str], budgets: list[int], extra: list[str] = ()) -> dict:
    command = [sys.executable, "-m", "cuemem_cli", "eval", "locomo", locomo, "--systems", ",".join(systems), "--json"]
    for budget in budgets:
        command += ["--budget", str(budget)]
    done = subprocess.run(command + list(extra), capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def cells(summary: dict, system: str, budget: int | None) -> dict:
    rows = {r["category"]: r for r in summary["rows"] if r["system"] == system and r["budget"] == budget}
    return rows


def main(locomo: str = str(HERE.parent.parent / "shared" / "data" / "locomo10.json")) -> None:
    main_run = run_eval(locomo, ["cuemem", *ABLATIONS, *BASELINES], [2000])
    top_m = {m: run_eval(locomo, ["cuemem"], [2000], ["--top-m", str(m)]) for m in (50, 200)}
    budgets = run_eval(locomo, ["cuemem", "naive-rag", "bm25"], [1000, 4000])
    float_run = run_eval(locomo, ["cuemem", "naive-rag", "bm25"], [2000], ["--embedder", "onnx"])
    measured_at = datetime.now().isoformat(timespec="minutes")
    (HERE / "quality.json").write_text(json.dumps(
        {"measured_at": measured_at, "main": main_run, "top_m": {str(k): v for k, v in top_m.items()},
         "budgets": budgets, "float": float_run}, indent=1))
    write_section(main_run, top_m, budgets, float_run, measured_at)


def render() -> None:
    """Rewrite the section from quality.json (after editing quality_notes.md), keeping the run's own date."""
    data = json.loads((HERE / "quality.json").read_text())
    write_section(data["main"], {int(k): v for k, v in data["top_m"].items()}, data["budgets"], data["float"],
                  data["measured_at"])


def pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def write_section(main_run: dict, top_m: dict, budgets: dict, float_run: dict, measured_at: str) -> None:
    overall = cells(main_run, "cuemem", 2000)
    goal_all = overall["overall"]["all_evidence"] >= 0.85 and overall["overall"]["recall"] >= 0.90
    worst = min(overall[c]["all_evidence"] for c in CATEGORIES)
    ahead = all(overall["overall"]["all_evidence"] > cells(main_run, b, 2000)["overall"]["all_evidence"]
                for b in ("naive-rag", "bm25"))
    lines = [
        MARKER,
        "## Quality: LoCoMo evidence in a 2,000-token context (issue 6)",
        "",
        f"Measured by `python bench/quality.py` on {measured_at}: "
        f"{overall['overall']['retrieval_questions']} questions with gold evidence, offline spaCy cues, all-MiniLM-L6-v2 "
        "(ONNX with int8 matrix products, the default `onnx-int8`), tokens = characters / 4 of the evidence "
        "block as the answer model sees it. Every row comes from "
        "the same `cuemem eval` run, database and budget. all-ev = share of questions whose context holds every "
        "gold evidence turn; recall = mean share of gold turns in the context.",
        "",
        f"- Goal all-evidence ≥ 0.85 and recall ≥ 0.90: {'**met**' if goal_all else '**not met**'} "
        f"({pct(overall['overall']['all_evidence'])}, {pct(overall['overall']['recall'])}).",
        f"- No category below 0.75: {'**met**' if worst >= 0.75 else '**not met**'} (lowest {pct(worst)}).",
        f"- Ahead of naive-rag and bm25 at the same budget: {'**met**' if ahead else '**not met**'}.",
        "",
        "| system | what changes | all-ev | recall | " + " | ".join(CATEGORIES) + " | tokens | recon p50 ms |",
        "|---|---|---|---|" + "---|" * len(CATEGORIES) + "---|---|",
    ]
    for system in ["cuemem", *ABLATIONS, *BASELINES]:
        budget = None if system == "full-history" else 2000
        row = cells(main_run, system, budget)
        o = row["overall"]
        lines.append(f"| `{system}` | {WHAT[system]} | {pct(o['all_evidence'])} | {pct(o['recall'])} | "
                     + " | ".join(pct(row[c]["all_evidence"]) for c in CATEGORIES)
                     + f" | {round(o['tokens']['estimate']):,} | {o['reconstruct_ms']['p50']} |")
    lines += ["", "Top-m (cues retrieved as anchors), cuemem at 2,000 tokens:", "",
              "| top-m | all-ev | recall |", "|---|---|---|"]
    for m, summary in [("50", top_m[50]), ("100 (default)", main_run), ("200", top_m[200])]:
        o = cells(summary, "cuemem", 2000)["overall"]
        lines.append(f"| {m} | {pct(o['all_evidence'])} | {pct(o['recall'])} |")
    lines += ["", "Other budgets:", "", "| system | budget | all-ev | recall | tokens |", "|---|---|---|---|---|"]
    for system in ("cuemem", "naive-rag", "bm25"):
        for budget in (1000, 4000):
            o = cells(budgets, system, budget)["overall"]
            lines.append(f"| `{system}` | {budget:,} | {pct(o['all_evidence'])} | {pct(o['recall'])} | "
                         f"{round(o['tokens']['estimate']):,} |")
    lines += ["", "Embedder: the default `onnx-int8` against the same model in float32 (`--embedder onnx`, the "
              "paper's exact vectors), each with its own database, at 2,000 tokens:", "",
              "| system | embedder | all-ev | recall | " + " | ".join(CATEGORIES) + " |",
              "|---|---|---|---|" + "---|" * len(CATEGORIES)]
    for system in ("cuemem", "naive-rag", "bm25"):
        for label, summary in (("onnx-int8", main_run), ("onnx", float_run)):
            row = cells(summary, system, 2000)
            lines.append(f"| `{system}` | {label} | {pct(row['overall']['all_evidence'])} | "
                         f"{pct(row['overall']['recall'])} | "
                         + " | ".join(pct(row[c]["all_evidence"]) for c in CATEGORIES) + " |")
    lines += ["", (HERE / "quality_notes.md").read_text().rstrip(), ""]
    results = HERE / "RESULTS.md"
    before = results.read_text().split(MARKER)[0].rstrip() + "\n\n" if results.exists() else ""
    results.write_text(before + "\n".join(lines))


if __name__ == "__main__":
    render() if sys.argv[1:] == ["--render"] else main(*sys.argv[1:])
