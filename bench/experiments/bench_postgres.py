"""PostgreSQL + pgvector against SQLite on the same data (issue 24).

    python bench/experiments/bench_postgres.py LOCOMO_JSON [--server URL] [--parts concurrent knn all] [--knn N ...]

1. concurrent: conv-26 is ingested into both; then 8 asker processes ask its LoCoMo questions (`Memory.ask`,
   extractive answer, retrieval times recorded: what `cuemem ask` does) while 2 ingester processes each
   ingest another conversation (conv-30, conv-41). Reports p50/p95 per ask and each ingest's wall time.
2. knn: exact scan against an HNSW index for one conversation of N random 384-d cues (pgvector 0.8,
   iterative index scans): latency and overlap of the top-100 with the exact one.
3. all: all of LoCoMo ingested into each backend (wall time, turns, cues).

Without --server, a throwaway server is started with .ci/postgres-up. Prints a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402 - after the repository is on sys.path, as the imports below

ASKERS, INGESTERS, ASKS_EACH = 8, 2, 12


def new_database(server: str) -> str:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return urlunsplit(urlsplit(server)._replace(path=f"/{name}"))


def conversation(locomo: str, name: str):
    from cuemem_cli.input.formats import FORMATS
    from cuemem_cli.input.formats.base import load_json

    return list(FORMATS["locomo"].convert([s for s in load_json(locomo) if s["sample_id"] == name]))


def questions(locomo: str, name: str) -> list[str]:
    from cuemem_cli.input.formats.base import load_json

    return [qa["question"] for s in load_json(locomo) if s["sample_id"] == name for qa in s["qa"]]


def _asker(db: str, qs: list[str], start, out) -> None:
    from cuemem_cli.memory import Memory

    memory = Memory(db, create=False)
    memory.embedder(quick_start=True).embed(["warm-up"])
    start.wait()
    times = []
    for q in qs:
        t0 = time.perf_counter()
        memory.ask(q, "conv-26")
        times.append(time.perf_counter() - t0)
    memory.close()
    out.put(("ask", times))


def _ingester(db: str, locomo: str, name: str, start, out) -> None:
    from cuemem_cli.memory import Memory

    memory = Memory(db)
    messages = conversation(locomo, name)
    memory.embedder().embed(["warm-up"])
    start.wait()
    t0 = time.perf_counter()
    report = memory.add(messages)
    out.put(("ingest", [time.perf_counter() - t0, report.turns_added]))
    memory.close()


def concurrent(db: str, locomo: str) -> dict:
    from cuemem_cli.memory import Memory

    with Memory(db) as memory:
        t0 = time.perf_counter()
        memory.add(conversation(locomo, "conv-26"))
        base_ingest = time.perf_counter() - t0
    qs = questions(locomo, "conv-26")
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(ASKERS + INGESTERS + 1), ctx.Queue()
    procs = [ctx.Process(target=_asker, args=(db, qs[i::ASKERS][:ASKS_EACH], start, out)) for i in range(ASKERS)]
    procs += [ctx.Process(target=_ingester, args=(db, locomo, name, start, out)) for name in ("conv-30", "conv-41")]
    for p in procs:
        p.start()
    start.wait()
    t0 = time.perf_counter()
    results = [out.get(timeout=1800) for _ in procs]
    wall = time.perf_counter() - t0
    for p in procs:
        p.join()
    asks = sorted(t for kind, ts in results if kind == "ask" for t in ts)
    ingests = [ts for kind, ts in results if kind == "ingest"]
    return {"base_ingest_s": round(base_ingest, 1), "asks": len(asks),
            "ask_p50_ms": round(1000 * statistics.median(asks), 1),
            "ask_p95_ms": round(1000 * asks[int(0.95 * (len(asks) - 1))], 1),
            "ingest_s": [round(t, 1) for t, _ in ingests], "turns_ingested": [n for _, n in ingests],
            "wall_s": round(wall, 1)}


def knn(server: str, n: int, dim: int = 384, queries: int = 30) -> dict:
    """One conversation of n random unit cues (and another of 1,000): exact scan vs HNSW."""
    import psycopg
    from psycopg.types import TypeInfo

    from cuemem_cli.store.postgres import register_vector

    url = new_database(server)
    rng = np.random.default_rng(0)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        TypeInfo.fetch(conn, "vector").register(conn)  # by name, for COPY's set_types
        conn.execute(f"CREATE TABLE v (id bigint PRIMARY KEY, conversation_id bigint, embedding vector({dim}))")
        conn.execute("CREATE INDEX ON v(conversation_id)")
        with conn.cursor().copy("COPY v FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int8", "vector"])
            for i in range(n + 1000):
                vec = rng.normal(size=dim).astype(np.float32)
                copy.write_row((i, 0 if i < n else 1, vec / np.linalg.norm(vec)))
        conn.execute("VACUUM ANALYZE v")
        qs = rng.normal(size=(queries, dim)).astype(np.float32)
        sql = ("SELECT id FROM v WHERE conversation_id = 0 ORDER BY embedding <=> %s LIMIT 100")

        def run() -> tuple[list[float], list[list[int]]]:
            times, found = [], []
            for q in qs:
                t0 = time.perf_counter()
                found.append([r[0] for r in conn.execute(sql, (q,)).fetchall()])
                times.append(1000 * (time.perf_counter() - t0))
            return times, found

        exact_t, exact = run()
        t0 = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute("CREATE INDEX ON v USING hnsw (embedding vector_cosine_ops)")
        build = time.perf_counter() - t0
        conn.execute("SET hnsw.ef_search = 200")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        hnsw_t, approx = run()
        size = conn.execute("SELECT pg_relation_size('v_embedding_idx')").fetchone()[0]
    overlap = statistics.mean(len(set(a) & set(b)) / 100 for a, b in zip(exact, approx, strict=True))
    return {"cues_per_conversation": n, "exact_p50_ms": round(statistics.median(exact_t), 1),
            "hnsw_p50_ms": round(statistics.median(hnsw_t), 1), "hnsw_overlap_top100": round(overlap, 3),
            "hnsw_build_s": round(build, 1), "hnsw_index_bytes": size}


def ingest_all(db: str, locomo: str) -> dict:
    from cuemem_cli.input.formats import FORMATS
    from cuemem_cli.input.formats.base import load_json
    from cuemem_cli.memory import Memory

    messages = list(FORMATS["locomo"].convert(load_json(locomo)))
    with Memory(db) as memory:
        memory.embedder().embed(["warm-up"])
        t0 = time.perf_counter()
        report = memory.add(messages)
        return {"turns": report.turns_added, "cues": report.cues, "wall_s": round(time.perf_counter() - t0, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("locomo")
    parser.add_argument("--server")
    parser.add_argument("--parts", nargs="*", default=["concurrent", "knn", "all"])
    parser.add_argument("--knn", type=int, nargs="*", default=[10_000, 100_000])
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    server = args.server
    if server is None:
        up = subprocess.run(["bash", str(REPO / ".ci/postgres-up"), str(folder / "pg")], check=True,
                            capture_output=True, text=True)
        server = up.stdout.strip().splitlines()[-1]
    try:
        result: dict = {"concurrent": {}, "knn": [], "all": {}}
        for backend, db in (("sqlite", str(folder / "memory.db")), ("postgres", new_database(server))):
            if "concurrent" in args.parts:
                result["concurrent"][backend] = concurrent(db, args.locomo)
                print(backend, result["concurrent"][backend], file=sys.stderr)
        for n in args.knn if "knn" in args.parts else []:
            result["knn"].append(knn(server, n))
            print(result["knn"][-1], file=sys.stderr)
        if "all" in args.parts:
            for backend, db in (("sqlite", str(folder / "all.db")), ("postgres", new_database(server))):
                result["all"][backend] = ingest_all(db, args.locomo)
                print(backend, result["all"][backend], file=sys.stderr)
        print(json.dumps(result, indent=1))
    finally:
        if args.server is None:
            subprocess.run(["bash", str(REPO / ".ci/postgres-down"), str(folder / "pg")], check=False,
                           capture_output=True)


if __name__ == "__main__":
    main()
