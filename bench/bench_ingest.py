"""Offline ingest of all LoCoMo (spaCy extractor, default embedder, graph) in a fresh process.

Reference, measured in the same run: spaCy's `nlp.pipe` alone over the same texts (the parse every
offline ingest must pay), and the same ingest with the float embedder (`--embedder onnx`), which the
default `onnx-int8` replaced. Reports stage shares, peak RSS of the ingest process, and database size
per turn and per cue against the raw JSONL.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def spacy_reference(texts: list[str]) -> float:
    from cuemem_cli.cues.parser import load_pipeline

    nlp = load_pipeline()
    start = time.perf_counter()
    for _ in nlp.pipe(texts, batch_size=256):
        pass
    return time.perf_counter() - start


def timed_ingest(jsonl: Path, db: Path, *options: str) -> tuple[float, dict]:
    """Wall seconds and the `--json` report of `cuemem ingest` into a fresh `db`, in its own process."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    start = time.perf_counter()
    command = [sys.executable, "-m", "cuemem_cli", "--db", str(db), "ingest", str(jsonl), "--json", *options]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, json.loads(done.stdout)


def int8_dot_product() -> str:
    """The CPU's int8 dot-product instructions (what decides whether int8 products beat float ones)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        flags = next(line for line in lines if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return "unknown"
    found = [name for name in ("avx512_vnni", "avx_vnni") if name in flags]
    return ", ".join(found) if found else "none (no VNNI)"


def main(locomo: str, out_dir: str | None = None) -> dict:
    work = Path(out_dir or tempfile.mkdtemp(prefix="cuemem-bench-"))
    jsonl = work / "locomo.jsonl"
    with open(jsonl, "wb") as fh:
        subprocess.run([sys.executable, "-m", "cuemem_cli", "convert", "locomo", locomo], stdout=fh, check=True)
    db = work / "locomo.db"
    wall, report = timed_ingest(jsonl, db)
    peak_rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    float_wall, float_report = timed_ingest(jsonl, work / "locomo-float.db", "--embedder", "onnx")
    texts = [json.loads(line)["text"] for line in jsonl.open()]
    reference = spacy_reference(texts)
    stages = report["stage_seconds"]
    size = sum(os.path.getsize(f"{db}{s}") for s in ("", "-wal") if os.path.exists(f"{db}{s}"))
    result = {
        "turns": report["turns_added"], "cues": report["cues"],
        "wall_s": round(wall, 1), "ingest_s": report["seconds"],
        "stage_share": {k: round(v / report["seconds"], 3) for k, v in stages.items()},
        "stage_s": stages,
        "texts_embedded": report["texts_embedded"],  # distinct cue and whole-turn texts
        "embed_texts_per_s": round(report["texts_embedded"] / stages["embed"]),
        "startup_and_validation_s": round(wall - report["seconds"], 1),
        "spacy_pipe_alone_s": round(reference, 1),
        "ratio_to_spacy_alone": round(wall / reference, 2),
        "peak_rss_mb": round(peak_rss_mb),
        "db_bytes": size, "jsonl_bytes": jsonl.stat().st_size,
        "db_bytes_per_turn": round(size / report["turns_added"]),
        "db_bytes_per_cue": round(size / report["cues"]),
        "db_to_jsonl": round(size / jsonl.stat().st_size, 1),
        "float_embedder": {"wall_s": round(float_wall, 1), "embed_s": float_report["stage_seconds"]["embed"],
                           "embed_texts_per_s": round(float_report["texts_embedded"]
                                                      / float_report["stage_seconds"]["embed"])},
        "cpu_int8_dot_product": int8_dot_product(),
        "goal": "≤ 60 s total on 2 cores", "met": wall <= 60,
        "db": str(db),
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main(*sys.argv[1:])
