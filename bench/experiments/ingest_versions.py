"""What a change costs at ingest: the same inputs ingested by several versions of cuemem (source trees), in turns,
in one run, so that a loaded machine slows them alike.

    python bench/experiments/ingest_versions.py OUT_DIR NAME=TREE [NAME=TREE ...] --input FILE [--input FILE ...]
        [--repeat 2] [--from FORMAT]

Each (input, version) is ingested `--repeat` times into a fresh database by `python -m cuemem_cli` with
PYTHONPATH=TREE and `--workers 1` (one process: its CPU seconds are the work, whatever else runs), rounds
interleaved (version A, B, C, then A, B, C again). Prints, per input and version, the median CPU seconds of the
ingest process (user + system), its wall seconds, the database's size (the SQLite file after a checkpoint) and the
turns and cues stored, and each version's CPU and size against the first version's; JSON with every run in
OUT_DIR/ingest_versions.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path


def ingest(tree: str, source: Path, db: Path, fmt: str | None) -> dict:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": tree}
    command = [sys.executable, "-m", "cuemem_cli", "--db", str(db), "ingest", str(source), "--json", "--workers", "1",
               *(["--from", fmt] if fmt else [])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = json.loads(done.stdout)
    subprocess.run([sys.executable, "-c", "import sys, pysqlite3 as s; c = s.connect(sys.argv[1]);"
                    " c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()", str(db)], check=True, env=env)
    return {"cpu": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
            "wall": round(wall, 2), "bytes": db.stat().st_size, "turns": report["turns_added"],
            "cues": report["cues"], "changes": report.get("changes")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("versions", nargs="+", help="NAME=TREE: a name and the source tree put on PYTHONPATH")
    parser.add_argument("--input", action="append", required=True, type=Path)
    parser.add_argument("--from", dest="fmt", help="the inputs' format (cuemem ingest --from)")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    versions = [v.split("=", 1) for v in args.versions]
    args.out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, dict[str, list[dict]]] = {}
    for source in args.input:
        runs[source.name] = {name: [] for name, _ in versions}
        for _ in range(args.repeat):
            for name, tree in versions:
                run = ingest(tree, source, args.out / f"{name}.db", args.fmt)
                runs[source.name][name].append(run)
                print(f"{source.name} {name}: {run}", file=sys.stderr, flush=True)
    summary = {}
    for source, by_version in runs.items():
        first = None
        summary[source] = {}
        for name, done in by_version.items():
            row = {"cpu": statistics.median(r["cpu"] for r in done), "wall": statistics.median(r["wall"] for r in done),
                   "bytes": done[-1]["bytes"], "turns": done[-1]["turns"], "cues": done[-1]["cues"],
                   "changes": done[-1]["changes"]}
            first = first or row
            row["cpu_vs_first"] = round(row["cpu"] / first["cpu"] - 1, 4)
            row["bytes_vs_first"] = round(row["bytes"] / first["bytes"] - 1, 4)
            summary[source][name] = row
    (args.out / "ingest_versions.json").write_text(json.dumps({"summary": summary, "runs": runs}, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
