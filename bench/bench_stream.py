"""Peak memory of ingest against input size: `ingest` streams, so memory stays flat as a file of many
conversations grows.

The reading, validation pass, batching, transactions, store writes (turns, FTS, cues, vec0 vectors,
turn vectors) and graph building are cuemem's own (`sources.open_input`, `inputs.validate`, `read_messages`,
`Ingestor`). The spaCy extractor and the ONNX embedder are replaced by stand-ins (one cue per turn; a
hashed unit vector) because each holds only one batch at a time and, real, would take hours over a
million lines on 2 cores (bench_ingest measures them). Every size runs in a fresh process; peak RSS is
its VmHWM (/proc/self/status), which exec resets: getrusage's ru_maxrss carries over the peak of the
process that forked it (run_all.py, after the 1M benchmark, holds several GB). Conversations have 500
lines each.

    python bench/bench_stream.py [LINES ...]      # default: 10000 50000
"""

from __future__ import annotations

import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PER_CONVERSATION = 500


class HashEmbedder:
    model_id, dim, name = "hash-stand-in", 384, "hash"

    def embed(self, texts):
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out

    def embed_in_context(self, pairs):
        return self.embed([text if before is None else f"{text}\n{before}" for text, before in pairs])


class OneCue:
    name = "one-cue"

    def extract(self, turns):
        from cuemem_cli.records import Triple

        return [[Triple(t.speaker or "someone", "said", t.text[:60])] for t in turns]


def write_jsonl(path: Path, lines: int) -> None:
    with path.open("w") as fh:
        for i in range(lines):
            conv, pos = divmod(i, PER_CONVERSATION)
            fh.write(json.dumps({"conversation": f"c{conv}", "speaker": "Ana" if i % 2 else "Ben",
                                 "time": f"2023-01-01T00:{pos // 60 % 60:02d}:{pos % 60:02d}",
                                 "text": f"Message {i}: we talked about topic {i % 97} and the weather in town "
                                         f"{i % 13}."})
                     + "\n")


def one(lines: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="cuemem-stream-") as folder:
        return measure(Path(folder), lines)


def measure(folder: Path, lines: int) -> dict:
    from cuemem_cli.ingest.pipeline import Ingestor, IngestReport
    from cuemem_cli.input.jsonl import read_messages, validate
    from cuemem_cli.input.sources import open_input
    from cuemem_cli.store.sqlite import SQLiteStore

    source = folder / "in.jsonl"
    write_jsonl(source, lines)
    before = peak_rss_kb()
    start = time.perf_counter()
    store = SQLiteStore.open(folder / "m.db")
    with open_input([str(source)]) as parts:
        checked = validate(parts, None, False)
        report = Ingestor(store, OneCue(), HashEmbedder()).run(read_messages(parts, None, None, False),
                                                               IngestReport(lines=checked.lines))
    store.close()
    return {"lines": lines, "jsonl_bytes": source.stat().st_size, "turns_added": report.turns_added,
            "seconds": round(time.perf_counter() - start, 1),
            "peak_rss_mb_before": round(before / 1024, 1), "peak_rss_mb": round(peak_rss_kb() / 1024, 1)}


def peak_rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # not Linux: the best there is


def main(*sizes: str) -> dict:
    results = []
    for lines in [int(s) for s in sizes] or [10_000, 50_000]:
        done = subprocess.run([sys.executable, __file__, "--one", str(lines)], capture_output=True, text=True,
                              check=True)
        results.append(json.loads(done.stdout))
        print(json.dumps(results[-1]), flush=True)
    return {"runs": results, "per_conversation": PER_CONVERSATION}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(one(int(sys.argv[2]))))
    else:
        main(*sys.argv[1:])
