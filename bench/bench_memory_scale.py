"""A whole chat history as one memory (issue 34): how fast a question over all of it is, and how exact.

    python bench/bench_memory_scale.py DB EXPORT.json [EXPORT.json …] [--questions 40] [--cold 7]
        [--out bench/results/memory_scale.json] [--migrate]

DB is a SQLite memory of real chats (`bench/bench_history.py` builds one from a ShareGPT export made by
`bench/corpus.py`). It is opened as it is: with `--migrate`, DB is first copied (SQLite's backup API) into a
temporary folder and the copy opened by this cuemem, which migrates a database of an older schema (m012-m015:
titles, one vec0 table of every cue, the cues' sign bits); the migration's wall and CPU seconds are recorded
and the copy is what is measured. Questions are real: the first sentence (≥ 4 words) of the first user
message of chats in the EXPORTs that the memory does NOT hold (seed 34), so no question has its own chat in
the memory.

Measured:
- `cold`: `cuemem --db DB ask --context-only QUESTION` in a fresh process per question, wall and CPU seconds
  (this process's children's rusage), median over `--cold` questions. Goal ≤ 1.5 s wall.
- `warm`: `reconstruct` in one process, from the second question on (the in-memory view, recall/view.py): wall and CPU
  ms per question, p50 and p95 over `--questions`. Goal p50 ≤ 100 ms.
- `overlap`: per question, the top-100 cues of each search against the exact top-100 (every cue's int8 code
  decoded and scored against the float question; ties by lowest cue id): the store's search as `ask` runs it
  (`Store.knn_cues`: vec0's scan up to vectors.EXACT_CUES cues, else the sign bits of its `cue_signs` table
  and vec0 over vectors.PREFILTER_CANDIDATES of them), the view's search (the same rule in memory), and the
  prefilter at other candidate counts (the lever).
  Mean and minimum. Goal mean ≥ 0.95.
- `pgvector` (with `--pgvector URL`, an empty PostgreSQL database with pgvector ≥ 0.8): the memory's cue
  vectors (decoded codes, as PostgresStore stores them) in one table, an HNSW index (m 16, ef_construction
  64, cosine) built, and each question's top-100 by the index with iterative scans (`hnsw.iterative_scan =
  relaxed_order`, re-ordered by exact distance) at several `hnsw.ef_search`: overlap with the exact top-100
  and median ms; also the build's seconds. The table is dropped afterwards.
Every timing is beside the machine's load average (before, after) and core count: on a shared machine the
CPU seconds are the figure to compare; a load above the core count means the wall times are not a result.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cuemem_cli.models.embedders import embed_questions, get_embedder
from cuemem_cli.recall.reconstruct import reconstruct
from cuemem_cli.store.base import conversation_names
from cuemem_cli.store.sqlite import SQLiteStore
from cuemem_cli.store.vectors import decode, similarities
from cuemem_cli.store.vectors import EXACT_CUES, PREFILTER_CANDIDATES, nearest_signs, signs
from cuemem_cli.recall.view import MemoryView, top_k

TOP = 100
CANDIDATES = (500, 1_000, 2_000, 4_000, 8_000, 16_000)
SENTENCE = re.compile(r"(?<=[.!?])\s+")


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def first_user_sentence(chat: dict) -> str | None:
    """The first sentence of the chat's earliest user message, if it has ≥ 4 words (else None)."""
    messages = [node["message"] for node in chat.get("mapping", {}).values() if node.get("message")]
    users = [m for m in messages if (m.get("author") or {}).get("role") == "user"
             and any(isinstance(p, str) and p.strip() for p in (m.get("content") or {}).get("parts", []))]
    if not users:
        return None
    first = min(users, key=lambda m: m.get("create_time") or 0)
    text = " ".join(p for p in first["content"]["parts"] if isinstance(p, str)).strip()
    sentence = SENTENCE.split(" ".join(text.split()), maxsplit=1)[0][:300]
    return sentence if len(sentence.split()) >= 4 else None


def held_out_questions(exports: list[str], held: set[str], count: int, seed: int = 34) -> list[str]:
    """`count` first user sentences of chats the memory does not hold, drawn with `seed`."""
    found: dict[str, str] = {}
    for export in exports:
        for chat in json.loads(Path(export).read_text(encoding="utf-8")):
            name = str(chat.get("conversation_id") or chat.get("id"))
            if name not in held and name not in found and (sentence := first_user_sentence(chat)):
                found[name] = sentence
    names = sorted(found)
    random.Random(seed).shuffle(names)
    return list(dict.fromkeys(found[n] for n in names))[:count]


def copied(db: str, folder: Path) -> tuple[str, dict]:
    """DB copied with the backup API into `folder` and opened there (migrating it): the copy and the times."""
    target = folder / "memory.db"
    started = time.perf_counter()
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    copy_s = time.perf_counter() - started
    for leftover in folder.glob("memory.db.bak-*"):
        leftover.unlink()
    before, cpu = time.perf_counter(), time.process_time()
    store = SQLiteStore.open(str(target))
    migrate = {"copy_s": round(copy_s, 1), "wall_s": round(time.perf_counter() - before, 1),
               "cpu_s": round(time.process_time() - cpu, 1), "load": load()}
    store.close()
    for backup in folder.glob("memory.db.bak-*"):  # the migration's own safety copy: not measured
        migrate["backup_bytes"] = backup.stat().st_size
        backup.unlink()
    return str(target), migrate


def cold(db: str, questions: list[str]) -> dict:
    """Each question in a fresh `cuemem ask --context-only` process: wall and CPU seconds."""
    walls, cpus = [], []
    for question in questions:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "cuemem_cli", "--db", db, "ask", "--context-only", question],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime)
    return {"questions": len(questions), "wall_median_s": round(statistics.median(walls), 2),
            "wall_s": [round(w, 2) for w in walls], "cpu_median_s": round(statistics.median(cpus), 2)}


def warm(store: SQLiteStore, embedder, questions: list[str]) -> dict:
    """reconstruct per question in this process, after one question that builds the view."""
    reconstruct(store, embedder, questions[0])
    reconstruct(store, embedder, questions[0])
    walls, cpus, stages = [], [], []
    for question in questions:
        started, cpu = time.perf_counter(), time.process_time()
        context = reconstruct(store, embedder, question)
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        stages.append(context.timings_ms)
    quantile = statistics.quantiles
    return {"questions": len(questions), "p50_ms": round(statistics.median(walls), 1),
            "p95_ms": round(quantile(walls, n=20)[-1], 1), "cpu_p50_ms": round(statistics.median(cpus), 1),
            "stage_p50_ms": {key: round(statistics.median(s[key] for s in stages), 1) for key in stages[0]}}


def overlap(store: SQLiteStore, embedder, questions: list[str]) -> dict:
    """Top-100 overlap with the exact search, per search (module doc)."""
    ids, _, _, codes = store.cue_codes(embedder.dim)
    view = MemoryView(store, embedder.dim)
    bits = signs(codes)
    vectors = embed_questions(embedder, questions)
    found: dict[str, list[float]] = {"store_knn": [], "view": [], **{f"prefilter_{c}": [] for c in CANDIDATES}}
    times: dict[str, list[float]] = {key: [] for key in found}
    for vector in vectors:
        exact = exact_top(ids, codes, vector)
        started = time.perf_counter()
        found["store_knn"].append(len(exact & {c.id for c, _ in store.knn_cues(vector, TOP)}) / TOP)
        times["store_knn"].append(time.perf_counter() - started)
        started = time.perf_counter()
        found["view"].append(len(exact & {c.id for c, _ in view.knn_cues(vector, TOP, None)}) / TOP)
        times["view"].append(time.perf_counter() - started)
        for count in CANDIDATES:
            started = time.perf_counter()
            rows = nearest_signs(bits, ids, vector, count)
            best = rows[top_k(ids[rows], similarities(decode(codes[rows]), vector), TOP)]
            times[f"prefilter_{count}"].append(time.perf_counter() - started)
            found[f"prefilter_{count}"].append(len(exact & set(ids[best].tolist())) / TOP)
    return {key: {"mean": round(float(np.mean(v)), 4), "min": round(float(np.min(v)), 2),
                  "median_ms": round(statistics.median(times[key]) * 1000, 1)} for key, v in found.items()}


def exact_top(ids: np.ndarray, codes: np.ndarray, vector: np.ndarray) -> set[int]:
    sims = np.concatenate([similarities(decode(codes[lo:lo + 65_536]), vector) for lo in range(0, len(codes), 65_536)])
    return set(ids[top_k(ids, sims, TOP)].tolist())


def pgvector(url: str, store: SQLiteStore, embedder, questions: list[str], searches=(40, 100, 200, 400)) -> dict:
    """pgvector's HNSW index over the memory's cues, against the exact top-100 (module doc)."""
    import psycopg
    from psycopg.types import TypeInfo

    from cuemem_cli.store.postgres import register_vector

    ids, _, conversations, codes = store.cue_codes(embedder.dim)
    vectors = embed_questions(embedder, questions)
    exact = [exact_top(ids, codes, v) for v in vectors]
    out: dict = {"cues": len(ids), "load_before": load()}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        conn.execute("DROP TABLE IF EXISTS scale_cues")
        conn.execute(f"CREATE TABLE scale_cues (cue_id bigint PRIMARY KEY, conversation_id bigint,"
                     f" embedding vector({embedder.dim}))")
        info = TypeInfo.fetch(conn, "vector")  # not during the COPY
        assert info is not None, "pgvector's type, created above"
        started, vector_oid = time.perf_counter(), info.oid
        with conn.cursor().copy("COPY scale_cues (cue_id, conversation_id, embedding) FROM STDIN"
                                " (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int8", vector_oid])
            for lo in range(0, len(ids), 8_192):
                for cid, conv, vec in zip(ids[lo:lo + 8_192].tolist(), conversations[lo:lo + 8_192].tolist(),
                                          decode(codes[lo:lo + 8_192]), strict=True):
                    copy.write_row((cid, conv, vec))
        out["load_s"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute("CREATE INDEX ON scale_cues USING hnsw (embedding vector_cosine_ops)"
                     " WITH (m = 16, ef_construction = 64)")
        out["hnsw_build_s"] = round(time.perf_counter() - started, 1)
        out["hnsw_build_load"] = load()
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        for search in searches:
            conn.execute(f"SET hnsw.ef_search = {search}")
            found, times = [], []
            for vector, best in zip(vectors, exact, strict=True):
                started = time.perf_counter()
                rows = conn.execute("WITH hits AS (SELECT cue_id, embedding <=> %s AS d FROM scale_cues"
                                    " ORDER BY d LIMIT %s) SELECT cue_id FROM hits ORDER BY d, cue_id",
                                    (vector.astype(np.float32), TOP), binary=True).fetchall()
                times.append(time.perf_counter() - started)
                found.append(len(best & {r[0] for r in rows}) / TOP)
            out[f"ef_search_{search}"] = {"mean": round(float(np.mean(found)), 4),
                                          "min": round(float(np.min(found)), 2),
                                          "median_ms": round(statistics.median(times) * 1000, 1)}
        conn.execute("DROP TABLE scale_cues")
    out["load_after"] = load()
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("db")
    parser.add_argument("exports", nargs="+", help="ChatGPT-shaped exports the held-out questions come from")
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--cold", type=int, default=7)
    parser.add_argument("--migrate", action="store_true", help="measure a migrated copy (module doc)")
    parser.add_argument("--out", help="write the result here as JSON too")
    parser.add_argument("--pgvector", metavar="URL", help="also measure pgvector's HNSW index (module doc)")
    parser.add_argument("--only-pgvector", action="store_true", help="measure only that")
    args = parser.parse_args(argv)
    words = sys.argv[1:] if argv is None else argv
    shown = [w for i, w in enumerate(words) if w != "--out" and (i == 0 or words[i - 1] != "--out")]
    result: dict = {"command": " ".join(["python bench/bench_memory_scale.py", *shown]), "cores": os.cpu_count(),
                    "load_before": load(), "db": args.db}
    with tempfile.TemporaryDirectory(prefix="cuemem-scale-") as tmp:
        db = args.db
        if args.migrate:
            db, result["migration"] = copied(args.db, Path(tmp))
        store = SQLiteStore.open(db, create=False)
        held = set(conversation_names(store))
        result["memory"] = {"conversations": len(held), "turns": store.turn_count(), "cues": store.cue_count(),
                            "db_bytes": Path(db).stat().st_size}
        questions = held_out_questions(args.exports, held, args.questions)
        result["question_examples"] = questions[:3]
        embedder = get_embedder()
        if args.pgvector:
            result["pgvector"] = pgvector(args.pgvector, store, embedder, questions)
        if args.only_pgvector:
            store.close()
            print(json.dumps(result, indent=2, ensure_ascii=False))
            return result
        result["prefilter_candidates"] = PREFILTER_CANDIDATES
        result["exact_cues"] = EXACT_CUES
        result["overlap_top100"] = overlap(store, embedder, questions)
        result["warm"] = warm(store, embedder, questions)
        result["warm"]["load"] = load()
        store.close()
        result["cold"] = cold(db, questions[:args.cold])
        result["cold"]["load"] = load()
    result["load_after"] = load()
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    print(text)
    return result


if __name__ == "__main__":
    main()
