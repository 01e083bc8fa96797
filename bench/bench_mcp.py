"""`cuemem mcp` per-call latency through the official SDK's stdio client, as an agent's MCP client sees it.

One LoCoMo conversation is remembered into a new database through a real server process, in calls of
BATCH turns (the first call, which loads spaCy and the embedder, reported apart), then in calls of one
turn; then its questions are recalled (and the server's own reconstruction time beside each, so the
protocol's share shows) and asked offline (extractive answer); list_conversations, a small result, gives
the round trip's floor. Last, cold starts: a new server process
answering its first recall, against a cold `cuemem ask --json` process (offline answer) on the same
database, alternating, medians. The reference for warm recall is bench_reconstruct.py on the same
database and questions in the same run: in-process reconstruction, what a warm recall should cost.

    python bench/bench_mcp.py [LOCOMO_JSON] [CONVERSATION] [BATCH]
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
COLD_RUNS = 5


def _env() -> dict[str, str]:
    """The server runs the cuemem_cli this benchmark imports: the installed one, or your tree by PYTHONPATH."""
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.pop("CUEMEM_MODEL", None)  # ask is measured offline
    return env


def _params(db: Path):
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "cuemem_cli", "--db", str(db), "mcp"], env=_env())


async def _timed_call(session, tool: str, arguments: dict) -> tuple[float, dict]:
    start = time.perf_counter()
    result = await session.call_tool(tool, arguments)
    ms = (time.perf_counter() - start) * 1000
    if result.is_error:
        raise RuntimeError(f"{tool}: {result.content[0].text}")
    return ms, result.structured_content


def _stats(values: list[float]) -> dict:
    q = statistics.quantiles(values, n=20) if len(values) > 1 else values * 19
    return {"calls": len(values), "p50_ms": round(statistics.median(values), 1), "p95_ms": round(q[18], 1)}


async def _warm(db: Path, conversation: str, messages: list[dict], questions: list[str], batch: int) -> dict:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    def remember(turns: list[dict]) -> dict:
        return {"conversation": conversation, "messages": turns}

    with open(os.devnull, "w") as log:
        async with stdio_client(_params(db), errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            head, singles = messages[:-20], messages[-20:]  # the last 20 turns go one per call
            batches = [head[i:i + batch] for i in range(0, len(head), batch)]
            first_ms, _ = await _timed_call(session, "remember", remember(batches[0]))
            batch_ms = [(await _timed_call(session, "remember", remember(b)))[0] for b in batches[1:]]
            single_ms = [(await _timed_call(session, "remember", remember([m])))[0] for m in singles]
            recall_ms, server_ms = [], []
            for question in questions:
                ms, data = await _timed_call(session, "recall", {"question": question, "conversation": conversation})
                recall_ms.append(ms)
                server_ms.append(data["timings_ms"]["total"])
            list_ms = [(await _timed_call(session, "list_conversations", {}))[0] for _ in range(50)]
            ask_ms = [(await _timed_call(session, "ask", {"question": q, "conversation": conversation}))[0]
                      for q in questions[:50]]
    return {
        "turns": len(messages),
        "remember_first_call": {"turns": len(batches[0]), "ms": round(first_ms, 1),
                                "note": "loads spaCy and the embedder"},
        f"remember_{batch}_turns": {**_stats(batch_ms),
                                    "per_turn_p50_ms": round(statistics.median(batch_ms) / batch, 1)},
        "remember_1_turn": _stats(single_ms),
        "recall": _stats(recall_ms),
        "recall_server_reconstruction": _stats(server_ms),
        "recall_protocol_overhead_p50_ms": round(statistics.median(recall_ms) - statistics.median(server_ms), 1),
        "list_conversations": _stats(list_ms),
        "ask_offline": _stats(ask_ms),
    }


async def _cold_recall(db: Path, conversation: str, question: str) -> float:
    """Spawn, initialise, first recall: what an agent waits for on its first question."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    start = time.perf_counter()
    with open(os.devnull, "w") as log:
        async with stdio_client(_params(db), errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await _timed_call(session, "recall", {"question": question, "conversation": conversation})
            elapsed = time.perf_counter() - start
    return elapsed


def _cold_ask(db: Path, conversation: str, question: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cuemem_cli", "--db", str(db), "ask", "-c", conversation, "--json", question],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    return time.perf_counter() - start


def main(locomo: str = str(DEFAULT_LOCOMO), conversation: str = "conv-26", batch: str = "20", *,
         cold_runs: int = COLD_RUNS) -> dict:
    from cuemem_cli.input.convert import convert

    messages = [{k: v for k, v in m.to_json().items() if k != "conversation"}
                for m in convert("locomo", [str(locomo)]) if m.conversation == conversation]
    questions = [q["question"] for c in json.loads(Path(locomo).read_text()) if c["sample_id"] == conversation
                 for q in c["qa"]]
    with tempfile.TemporaryDirectory(prefix="cuemem-bench-mcp-") as work:
        db = Path(work) / "mcp.db"
        result = asyncio.run(_warm(db, conversation, messages, questions, int(batch)))
        sys.path.insert(0, str(HERE))
        import bench_reconstruct

        in_process = bench_reconstruct.main(str(db), locomo, conversation)
        result["in_process_reconstruction"] = {"p50_ms": in_process["p50_ms"], "p95_ms": in_process["p95_ms"]}
        cold_recall, cold_ask = [], []
        for i in range(cold_runs):
            question = questions[i]
            cold_recall.append(asyncio.run(_cold_recall(db, conversation, question)))
            cold_ask.append(_cold_ask(db, conversation, question))
    result["cold_first_recall_s"] = round(statistics.median(cold_recall), 3)
    result["cold_ask_process_s"] = round(statistics.median(cold_ask), 3)
    result["cold_ratio"] = round(result["cold_first_recall_s"] / result["cold_ask_process_s"], 2)
    result["goal"] = "first recall ≤ a cold ask; warm recall ≈ in-process reconstruction"
    result["met"] = result["cold_first_recall_s"] <= result["cold_ask_process_s"]
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main(*sys.argv[1:])
