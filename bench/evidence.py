"""Evidence per data set at one average budget (issue 48): cuemem, naive RAG and BM25 on real people's chats
(REALTALK's dev half) and on LoCoMo, in one conversation and as exports; every category's all-evidence, with
the mean and the largest context in tokens. Records bench/results/evidence.json and renders bench/RESULTS.md
(bench/report.py: "Evidence per data set", with the lever-by-lever notes in bench/quality_notes.md).

    python bench/evidence.py [--data DIR] [--cache-dir DIR]    # ~40 min on 2 idle cores, ingest included
    python bench/report.py                                       # render again after editing the notes

Three runs of the documented command, each `cuemem eval locomo FILE --systems cuemem,naive-rag,bm25
--budget 2000 --json` (FILE: DIR/realtalk-dev.json, DIR/locomo10.json, then DIR/locomo10.json with
`--setting as-exports`); DIR defaults to ../shared/data beside the repository.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import report  # noqa: E402

SYSTEMS = ("cuemem", "naive-rag", "bm25")
BUDGET = 2000
# (name in the results, data file, extra eval options)
RUNS = (("realtalk-dev", "realtalk-dev.json", ()), ("locomo", "locomo10.json", ()),
        ("locomo as exports", "locomo10.json", ("--setting", "as-exports")))


def run_eval(path: Path, extra: list[str]) -> dict:
    command = [sys.executable, "-m", "cuemem_cli", "eval", "locomo", str(path), "--systems", ",".join(SYSTEMS),
               "--budget", str(BUDGET), "--json", *extra]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def run(data: Path, folder: Path = report.RESULTS, extra: list[str] | None = None,
        files: dict[str, Path] | None = None) -> dict:
    """The three eval runs, recorded as folder/evidence.json; `extra` goes to every run (`--cache-dir`),
    `files` replaces a data file by name (the smoke run's tiny input)."""
    runs = {}
    for name, file, options in RUNS:
        path = (files or {}).get(file, data / file)
        runs[name] = {"command": f"cuemem eval locomo {file} --systems {','.join(SYSTEMS)} --budget {BUDGET} "
                                 + " ".join(options),
                      "summary": run_eval(path, [*options, *(extra or [])])}
    result = {"measured_at": datetime.now().isoformat(timespec="minutes"), "budget": BUDGET, "runs": runs}
    report.save("evidence", result, folder)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data",
                        help="the folder holding realtalk-dev.json and locomo10.json")
    parser.add_argument("--cache-dir", help="the eval cache (cuemem eval's --cache-dir)")
    args = parser.parse_args(argv)
    run(args.data, extra=["--cache-dir", args.cache_dir] if args.cache_dir else [])
    report.render()


if __name__ == "__main__":
    main()
