"""In-process reconstruction latency on one LoCoMo conversation: p50 and p95 over its questions.

In-process means a library user's long-lived process, so the embedder keeps the optimised ONNX graph
(`cuemem ask` starts with the quick-loading one instead) and, from the second question on, the
conversation is held in memory (cuemem_cli/recall/view.py). Reported with and without the question's
embedding, which is model time rather than memory work, and beside the SQL path every process's
first question takes.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from cuemem_cli.models.embedders import get_embedder, spec_for
from cuemem_cli.recall.reconstruct import reconstruct
from cuemem_cli.store.sqlite import SQLiteStore
from cuemem_cli.recall.view import drop_view


def main(db: str, locomo: str, conversation: str = "conv-26") -> dict:
    store = SQLiteStore.open(db)
    embedder = get_embedder(spec_for(store.get_meta("embedding_model")))
    questions = [q["question"] for c in json.loads(Path(locomo).read_text()) if c["sample_id"] == conversation
                 for q in c["qa"]]
    first = []
    for question in questions:  # each as a process's first question: SQL, no view
        drop_view(store)
        context = reconstruct(store, embedder, question, conversation)
        first.append(context.timings_ms["total"] - context.timings_ms["embed_query"])
    reconstruct(store, embedder, questions[0], conversation)  # the view is built here, outside the timing
    totals: list[float] = []
    searches: list[float] = []
    parts: dict[str, list[float]] = {}
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
        "first_question_sql_p50_ms": round(statistics.median(first), 2),
        "memory_work_met": statistics.median(searches) <= 5 and statistics.quantiles(searches, n=20)[18] <= 15,
        "goal": "p50 ≤ 5 ms, p95 ≤ 15 ms",
        "met": statistics.median(totals) <= 5 and q[18] <= 15,
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main(*sys.argv[1:])
