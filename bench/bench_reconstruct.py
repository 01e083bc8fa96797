"""In-process reconstruction latency on one LoCoMo conversation: p50 and p95 over its questions.

In-process means a library user's long-lived process, so the embedder keeps the optimised ONNX graph
(`cuemem ask` starts with the quick-loading one instead). Reported with and without the question's
embedding, which is model time rather than memory work.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from cuemem_cli.embed import OnnxMiniLM
from cuemem_cli.reconstruct import reconstruct
from cuemem_cli.store import Store


def main(db: str, locomo: str, conversation: str = "conv-26") -> dict:
    store = Store.open(db)
    embedder = OnnxMiniLM()
    questions = [q["question"] for c in json.load(open(locomo)) if c["sample_id"] == conversation for q in c["qa"]]
    reconstruct(store, embedder, questions[0], conversation)  # load the model outside the timing
    totals, searches, parts = [], [], {}
    for question in questions:
        start = time.perf_counter()
        context = reconstruct(store, embedder, question, conversation)
        totals.append((time.perf_counter() - start) * 1000)
        searches.append(totals[-1] - context.timings_ms["embed_query"])
        for key, value in context.timings_ms.items():
            parts.setdefault(key, []).append(value)
    q = statistics.quantiles(totals, n=20)
    result = {
        "questions": len(totals), "p50_ms": round(statistics.median(totals), 2), "p95_ms": round(q[18], 2),
        "without_query_embedding_p50_ms": round(statistics.median(searches), 2),
        "without_query_embedding_p95_ms": round(statistics.quantiles(searches, n=20)[18], 2),
        "stage_p50_ms": {k: round(statistics.median(v), 2) for k, v in parts.items()},
        "goal": "p50 ≤ 5 ms, p95 ≤ 15 ms",
        "met": statistics.median(totals) <= 5 and q[18] <= 15,
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main(*sys.argv[1:])
