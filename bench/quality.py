"""Retrieval quality on LoCoMo (issue 6): cuemem, one ablation per scoring term and the baselines, all in
the same `cuemem eval` runs; records bench/results/quality.json and renders bench/RESULTS.md from it
(bench/report.py writes the "Quality" section, with bench/quality_notes.md under its tables).

    python bench/quality.py [LOCOMO_JSON]      # ~10 min on 2 idle cores once the eval cache is built
    python bench/report.py                     # render again after editing quality_notes.md (measures nothing)

Four runs of the documented command `cuemem eval locomo FILE --budget B --systems ... --json`:
every system at 2,000 tokens; cuemem at top-m 50 and 200 (the default is 100); cuemem and the
baselines at 1,000 and 4,000 tokens; cuemem and the baselines with the float embedder (`--embedder
onnx`, the paper's exact vectors) against the int8 default.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import report  # noqa: E402


def run_eval(locomo: str, systems: list[str], budgets: list[int], extra: Sequence[str] = ()) -> dict:
    command = [sys.executable, "-m", "cuemem_cli", "eval", "locomo", locomo, "--systems", ",".join(systems), "--json"]
    for budget in budgets:
        command += ["--budget", str(budget)]
    done = subprocess.run(command + list(extra), capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def run(locomo: str, folder: Path = report.RESULTS, extra: Sequence[str] = ()) -> dict:
    """The four eval runs, recorded as folder/quality.json; `extra` goes to every run (`--cache-dir`)."""
    extra = list(extra)
    main_run = run_eval(locomo, ["cuemem", *report.ABLATIONS, *report.BASELINES], [2000], extra)
    top_m = {str(m): run_eval(locomo, ["cuemem"], [2000], ["--top-m", str(m), *extra]) for m in (50, 200)}
    budgets = run_eval(locomo, ["cuemem", "naive-rag", "bm25"], [1000, 4000], extra)
    float_run = run_eval(locomo, ["cuemem", "naive-rag", "bm25"], [2000], ["--embedder", "onnx", *extra])
    data = {"measured_at": datetime.now().isoformat(timespec="minutes"), "main": main_run, "top_m": top_m,
            "budgets": budgets, "float": float_run}
    report.save("quality", data, folder)
    return data


def main(locomo: str = str(HERE.parent.parent / "shared" / "data" / "locomo10.json")) -> None:
    run(locomo)
    report.render()


if __name__ == "__main__":
    main(*sys.argv[1:])
