"""Where a person waits on their own chat history (issue 58): every question-path command, this tree beside a
base tree, measured in one run on memories of the same export.

    python bench/bench_question_path.py EXPORT.json --base /work/base [--folder DIR] [--runs 5] [--only NAMES]
        [--inspect-runs N] [--profile DIR] [--out bench/results/question_path.json]

EXPORT is a ChatGPT-shaped export of real chats (`python bench/corpus.py EXPORT.json --conversations 500`).
DIR (default: a folder beside EXPORT named after it) holds its two memories, `base.db` ingested by the base
tree and `new.db` by this one (`cuemem ingest --from chatgpt EXPORT`); each is built when missing, 4+ minutes
on 2 cores, and reused afterwards. `--base-db`/`--db` name other memories instead. Each tree is measured on
its own memory, the two alternating, every figure the median of RUNS (one question per run: the first RUNS
questions of the tune half of bench/sharegpt_questions.json, whose chats the 500-chat export holds):

- `ask`: `cuemem ask QUESTION` in a fresh process, as typed (offline answer line, evidence rendered; stdout is a
  pipe, so no pager): wall seconds, and CPU seconds beside them (they move less with the load). Goal ≤ 1.0 s.
  `context`: `cuemem ask QUESTION --context-only --json`, goal ≤ 0.6 s. `inspect`, `inspect_json`: `cuemem
  inspect-graph` and `--json`, goal ≤ 1.0 s.
- `library`: `Memory.ask` and `Memory.context` in one process, RUNS questions after two that are not counted
  (the first loads the models, the second builds the in-memory view): p50 ms, wall and CPU. Goal Memory.ask
  ≤ 100 ms.
- `mcp`: a `cuemem mcp` server through the SDK's stdio client, its `ask` and `recall` tools after one call of
  each: p50 ms. Goal ≤ 150 ms each.
- `browse`: a `cuemem browse` server: each page after one request (the list, a search, a conversation, a turn,
  the question page and its JSON twin), median ms, goal ≤ 300 ms each; then 16 requests at once (8 lists, 8
  question pages of different questions): p50, p95 and max ms, goal p95 ≤ 1 s.

`--profile DIR` also runs each cold command once under cProfile per tree (DIR/<tree>-<command>.prof) and
prints the 15 functions with the most cumulative time: the profiles of bench/RESULTS.md. The machine's load
average is recorded before and after every block: on a shared machine compare the two trees' columns, which
were measured together, not the absolute figures.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
QUESTIONS = HERE / "sharegpt_questions.json"
AT_ONCE = 16
GOALS = {"ask": 1.0, "context": 0.6, "inspect": 1.0, "inspect_json": 1.0}  # seconds, cold
GOAL_LIBRARY_MS, GOAL_MCP_MS, GOAL_PAGE_MS, GOAL_AT_ONCE_P95_MS = 100, 150, 300, 1000


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def env_of(tree: Path) -> dict[str, str]:
    """A child process running `tree`'s cuemem_cli, offline (run in `tree`: `python -m` puts the working
    folder first on the path)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.pop("CUEMEM_MODEL", None)
    return env


def questions(count: int) -> list[str]:
    found = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    return [q["question"] for q in found if q["split"] == "tune"][:count]


def build(tree: Path, db: Path, export: Path) -> dict:
    """Ingest `export` into a new `db` with `tree`'s cuemem: seconds and size."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cuemem_cli", "--db", str(db), "ingest", "--from", "chatgpt",
                           str(export), "--json"], env=env_of(tree), cwd=tree, capture_output=True, text=True)
    if done.returncode not in (0, 3):
        raise SystemExit(f"ingest with {tree} failed: {done.stderr[-2000:]}")
    return {"seconds": round(time.perf_counter() - started, 1), "bytes": db.stat().st_size, "load": load()}


# ------------------------------------------------------------------ cold commands
def commands(question: str) -> dict[str, list[str]]:
    return {"ask": ["ask", question], "context": ["ask", question, "--context-only", "--json"],
            "inspect": ["inspect-graph"], "inspect_json": ["inspect-graph", "--json"]}


def cold(tree: Path, db: Path, args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of `cuemem ARGS` in a fresh process: the CPU seconds move less with the load."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cuemem_cli", "--db", str(db), *args], env=env_of(tree), cwd=tree,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} with {tree} failed: {done.stderr[-2000:]}")
    return wall, after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime


def cold_block(trees: dict[str, tuple[Path, Path]], asked: list[str], inspect_runs: int | None = None) -> dict:
    """Each command for each tree, alternating, one question per run; `inspect-graph` (which asks nothing)
    only in the first `inspect_runs` runs when given (the base's took minutes a run on a loaded machine)."""
    times: dict[str, dict[str, list[tuple[float, float]]]] = {name: {c: [] for c in GOALS} for name in trees}
    before = load()
    for tree, db in trees.values():  # once each, not counted: the page cache, not the process, is cold
        cold(tree, db, commands(asked[0])["context"])
    for run, question in enumerate(asked):
        for command, args in commands(question).items():
            if command.startswith("inspect") and inspect_runs is not None and run >= inspect_runs:
                continue
            for name, (tree, db) in trees.items():
                times[name][command].append(cold(tree, db, args))
    return {"load_before": before, "load_after": load(),
            **{name: {c: {"median_s": round(statistics.median(w for w, _ in v), 2),
                          "cpu_median_s": round(statistics.median(c for _, c in v), 2),
                          "s": [round(w, 2) for w, _ in v], "goal_s": GOALS[c],
                          "met": statistics.median(w for w, _ in v) <= GOALS[c]} for c, v in by.items()}
               for name, by in times.items()}}


PROFILED = """
import cProfile, sys, time
target, sys.argv = sys.argv[1], ["cuemem", *sys.argv[2:]]
profile = cProfile.Profile(time.process_time)  # CPU seconds: what a loaded machine moves least
try:
    profile.runcall(__import__("cuemem_cli.cli.app", fromlist=["run"]).run)
except SystemExit:
    pass
profile.dump_stats(target)
"""


def profile(trees: dict[str, tuple[Path, Path]], question: str, folder: Path) -> dict:
    """Each cold command once under cProfile (CPU time) per tree: the 15 functions with the most cumulative
    seconds, imports included."""
    folder.mkdir(parents=True, exist_ok=True)
    out: dict = {}
    for name, (tree, db) in trees.items():
        for command, args in commands(question).items():
            target = folder / f"{name}-{command}.prof"
            subprocess.run([sys.executable, "-c", PROFILED, str(target), "--db", str(db), *args], env=env_of(tree),
                           cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            stats = pstats.Stats(str(target))
            rows = sorted(stats.stats.items(), key=lambda item: -item[1][3])[:15]  # type: ignore[attr-defined]
            out.setdefault(name, {})[command] = {
                "total_cpu_s": round(stats.total_tt, 2),  # type: ignore[attr-defined]
                "top_cumulative": [f"{round(v[3], 2)} s {Path(k[0]).name}:{k[1]} {k[2]}" for k, v in rows]}
    return out


# ------------------------------------------------------------------ one process (a child per tree)
def child_library(db: str, asked: list[str]) -> dict:
    """Memory.ask (offline) and Memory.context, each question once, after two that are not counted (the first
    loads the models, the second builds the in-memory view): wall and CPU ms."""
    from cuemem_cli import Memory

    with Memory(db, create=False) as memory:
        for question in asked[:2]:
            memory.ask(question, record_retrieval=False)
        took: dict[str, list[tuple[float, float]]] = {"ask": [], "context": []}
        for question in asked[2:]:
            for what in took:
                started, cpu = time.perf_counter(), time.process_time()
                if what == "ask":
                    memory.ask(question, record_retrieval=False)
                else:
                    memory.context(question)
                took[what].append(((time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000))
    return {**{f"{what}_p50_ms": round(statistics.median(w for w, _ in v), 1) for what, v in took.items()},
            **{f"{what}_cpu_p50_ms": round(statistics.median(c for _, c in v), 1) for what, v in took.items()},
            "ask_ms": [round(w) for w, _ in took["ask"]]}


async def _mcp(db: str, asked: list[str]) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "cuemem_cli", "--db", db, "mcp"],
                                   env=dict(os.environ))
    out: dict[str, list[float]] = {"ask": [], "recall": []}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for tool in out:
            await session.call_tool(tool, {"question": asked[0]})  # loads the models
        for question in asked:
            for tool in out:
                started = time.perf_counter()
                result = await session.call_tool(tool, {"question": question})
                out[tool].append((time.perf_counter() - started) * 1000)
                if result.is_error:
                    raise RuntimeError(f"{tool}: {getattr(result.content[0], 'text', result.content[0])}")
    return {f"{tool}_p50_ms": round(statistics.median(ms), 1) for tool, ms in out.items()}


def in_child(tree: Path, what: str, db: Path, asked: list[str]) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", what, str(db), *asked], env=env_of(tree), cwd=tree,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{what} with {tree} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


# ------------------------------------------------------------------ browse
class Browse:
    """A `cuemem browse --no-open` server of one tree on its memory."""

    def __init__(self, tree: Path, db: Path):
        self.process = subprocess.Popen([sys.executable, "-m", "cuemem_cli", "--db", str(db), "browse", "--no-open"],
                                        env=env_of(tree), cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        line = self.process.stdout.readline().strip() if self.process.stdout else ""
        if not line.startswith("http://"):
            self.process.kill()
            said = self.process.stderr.read() if self.process.stderr else ""
            raise SystemExit(f"browse with {tree} did not start: {line} {said[-2000:]}")
        parts = urlsplit(line)
        self.port, self.prefix = parts.port or 0, parts.path

    def get(self, path: str, **params: str) -> float:
        """ms to fetch the page (status 200 required)."""
        query = f"?{urlencode(params)}" if params else ""
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        conn.request("GET", self.prefix + path + query, headers={"Host": f"127.0.0.1:{self.port}"})
        response = conn.getresponse()
        body = response.read()
        conn.close()
        if response.status != 200:
            raise SystemExit(f"{path}{query}: HTTP {response.status} {body[:300]!r}")
        return (time.perf_counter() - started) * 1000

    def json(self, path: str, **params: str) -> Any:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        conn.request("GET", self.prefix + path + (f"?{urlencode(params)}" if params else ""),
                     headers={"Host": f"127.0.0.1:{self.port}"})
        data = json.loads(conn.getresponse().read())
        conn.close()
        return data

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()


def pages_of(server: Browse, asked: list[str]) -> dict[str, tuple[str, dict[str, str]]]:
    listed = server.json("api/conversations")["conversations"]
    longest = max(listed, key=lambda c: c["turns"])["conversation"]
    turn = server.json("api/conversation", name=longest)["turns"][0]["id"]
    return {"list": ("", {}), "search": ("", {"q": "python"}), "conversation": ("conversation", {"name": longest}),
            "turn": (f"turn/{turn}", {}), "ask_page": ("ask", {"q": asked[0]}),
            "context_json": ("api/context", {"q": asked[0]})}


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def at_once(server: Browse, jobs: list[tuple[str, dict[str, str]]]) -> list[float]:
    """ms of each of `jobs`, all sent at once (they wait for each other before sending)."""
    start = threading.Barrier(len(jobs))

    def fetch(job: tuple[str, dict[str, str]]) -> float:
        start.wait()
        return server.get(job[0], **job[1])

    with ThreadPoolExecutor(len(jobs)) as pool:
        return list(pool.map(fetch, jobs))


def browse_block(trees: dict[str, tuple[Path, Path]], asked: list[str], runs: int) -> dict:
    out: dict = {"load_before": load()}
    servers = {name: Browse(tree, db) for name, (tree, db) in trees.items()}
    try:
        pages = {name: pages_of(server, asked) for name, server in servers.items()}
        times: dict[str, dict[str, list[float]]] = {name: {page: [] for page in pages[name]} for name in servers}
        for name, server in servers.items():  # the first request of each page (models load on the first question)
            out.setdefault(name, {})["first_ms"] = {page: round(server.get(path, **params))
                                                    for page, (path, params) in pages[name].items()}
        for _ in range(runs):
            for page in pages[next(iter(servers))]:
                for name, server in servers.items():
                    path, params = pages[name][page]
                    times[name][page].append(server.get(path, **params))
        for name, server in servers.items():
            out[name]["warm_ms"] = {page: round(statistics.median(v)) for page, v in times[name].items()}
            out[name]["warm_met"] = all(statistics.median(v) <= GOAL_PAGE_MS for v in times[name].values())
            mix = [("", {}) if i % 2 == 0 else ("ask", {"q": asked[(i // 2) % len(asked)]}) for i in range(AT_ONCE)]
            for path, params in mix:  # each question once before, as a person's second look would be
                server.get(path, **params)
            took = sorted(at_once(server, mix))
            out[name]["at_once"] = {"requests": AT_ONCE, "p50_ms": round(statistics.median(took)),
                                    "p95_ms": round(p95(took)), "max_ms": round(took[-1]),
                                    "met": p95(took) <= GOAL_AT_ONCE_P95_MS}
    finally:
        for server in servers.values():
            server.stop()
    out["load_after"] = load()
    return out


# ------------------------------------------------------------------ the run
BLOCKS = ("cold", "library", "mcp", "browse")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("export", type=Path)
    parser.add_argument("--base", type=Path, required=True, help="the base tree (e.g. /work/base, a clone of main)")
    parser.add_argument("--folder", type=Path, help="where the two memories are (built when missing)")
    parser.add_argument("--base-db", type=Path, help="the base tree's memory, instead of FOLDER/base.db")
    parser.add_argument("--db", type=Path, help="this tree's memory, instead of FOLDER/new.db")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--inspect-runs", type=int, help="run inspect-graph only this many times (default: RUNS)")
    parser.add_argument("--only", default=",".join(BLOCKS), help=f"some of {','.join(BLOCKS)}")
    parser.add_argument("--profile", type=Path, metavar="DIR", help="also profile each cold command (module doc)")
    parser.add_argument("--out", type=Path, help="write the result here as JSON too")
    args = parser.parse_args(argv)
    folder = args.folder or args.export.with_name(args.export.stem + "-memories")
    folder.mkdir(parents=True, exist_ok=True)
    trees = {"base": (args.base.resolve(), args.base_db or folder / "base.db"),
             "new": (REPO, args.db or folder / "new.db")}
    result: dict = {"command": " ".join(["python bench/bench_question_path.py", *(argv or sys.argv[1:])]),
                    "date": time.strftime("%Y-%m-%d %H:%M"), "cores": os.cpu_count(), "load_before": load(),
                    "export": str(args.export), "trees": {name: str(tree) for name, (tree, _) in trees.items()},
                    "memories": {}}
    for name, (tree, db) in trees.items():
        if not db.exists():
            result.setdefault("built", {})[name] = build(tree, db, args.export)
        result["memories"][name] = {"db": str(db), "bytes": db.stat().st_size}
    asked = questions(args.runs)
    result["questions"] = asked
    only = set(args.only.split(","))
    if "cold" in only:
        result["cold"] = cold_block(trees, asked, args.inspect_runs)
    if "library" in only:
        result["library"] = {"load_before": load(), **{name: in_child(tree, "library", db, questions(args.runs + 2))
                                                        for name, (tree, db) in trees.items()}, "load_after": load()}
    if "mcp" in only:
        result["mcp"] = {"load_before": load(), **{name: in_child(tree, "mcp", db, asked)
                                                    for name, (tree, db) in trees.items()}, "load_after": load()}
    if "browse" in only:
        result["browse"] = browse_block(trees, asked, args.runs)
    if args.profile:
        result["profile"] = profile(trees, asked[0], args.profile)
    result["load_after"] = load()
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return result


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        what, db, *asked = sys.argv[2:]
        found = child_library(db, asked) if what == "library" else asyncio.run(_mcp(db, asked))
        print(json.dumps(found))
    else:
        main()
