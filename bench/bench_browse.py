"""`cuemem browse` on a whole history: how long each page takes on a memory of 20,000+ turns (issue 37's
goal: every page under a second; the question box costs what `ask` costs).

It builds the memory through the real pipeline (`cuemem convert locomo` + `cuemem ingest`: spaCy cues,
MiniLM vectors, the turn graph), shaped as a chat export: every LoCoMo session becomes its own
conversation with a title ("conv-26 · session 3 · copy 0"), all ten conversations' sessions COPIES times under
new names (4 copies: 23,528 turns in 1,088 conversations). Building takes a while (the ingest of
~24,000 turns: tens of minutes on 2 cores); pass --db to time a memory built before (this script's,
or any other: a SQLite file or a postgresql:// URL).

Then it starts a real `cuemem browse` server on the memory and times, over HTTP, each kind of page
(first request and warm p50/max of REPEAT requests): the conversation list (first and last page), a
search for a common and a rare word, a conversation's first and middle page, turn pages, and the
question box (the first question, which loads the embedder as `ask` does, then warm ones) beside
`cuemem ask --context-only --json` on the same question, cold, as a user runs it.

    python bench/bench_browse.py [--locomo PATH] [--copies 4] [--db PATH_OR_URL] [--keep] [--turns N]

Run it on an idle machine (`uptime`): timings under load are not results. Run alone, it prints a table
and the result as JSON; `python bench/run_all.py --browse` runs it after the suite and records the result
as bench/results/browse.json for RESULTS.md (`--smoke` runs it on the sample dialogues, one copy).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
REPEAT = 5
GOAL_MS = 1000
QUESTIONS = ["When did Caroline go to the LGBTQ support group?", "What did Melanie paint recently?",
             "Where did Jolene buy the necklace?", "What instrument does Calvin play?"]


@dataclass(frozen=True)
class Sizes:
    """LoCoMo's sessions this many times, and the questions asked of a cold `cuemem ask` process (twice each:
    evidence only, then with the offline answer)."""

    copies: int = 4
    cold_questions: int = 3


FULL = Sizes()
SMOKE = Sizes(copies=1, cold_questions=1)  # bench/run_all.py --smoke


def _env() -> dict[str, str]:
    """The children run the cuemem_cli this benchmark imports: the installed one, or your tree by PYTHONPATH."""
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.pop("CUEMEM_MODEL", None)  # the question box answers offline, as `ask` without a model
    return env


def _cuemem(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuemem_cli", *args], env=_env(), check=True, capture_output=True,
                          text=True, **kwargs)


def build(db: str, locomo: Path, copies: int, folder: Path, limit: int | None = None) -> dict:
    """Ingest LoCoMo as an export of one conversation per session, COPIES times (its first `limit` turns
    only: a quick check of this script)."""
    converted = _cuemem("convert", "locomo", str(locomo)).stdout.splitlines()[:limit]
    source = folder / "export.jsonl"
    turns = 0
    with source.open("w") as out:
        for copy in range(copies):
            for line in converted:
                message = json.loads(line)
                session, origin = message.get("session") or "?", message["conversation"]
                message["conversation"] = f"{origin}-s{session}-c{copy}"
                message["title"] = f"{origin} · session {session} · copy {copy}"
                out.write(json.dumps(message) + "\n")
                turns += 1
    start = time.perf_counter()
    report = json.loads(_cuemem("--db", db, "ingest", str(source), "--json").stdout)
    return {"turns": turns, "conversations": len(report["conversations"]), "cues": report["cues"],
            "ingest_seconds": round(time.perf_counter() - start, 1)}


class Browse:
    """A `cuemem browse --no-open` process and timed GETs against it."""

    def __init__(self, db: str):
        self.process = subprocess.Popen([sys.executable, "-m", "cuemem_cli", "--db", db, "browse", "--no-open"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url.startswith("http://"):
            raise SystemExit(f"cuemem browse printed no address: {self.process.communicate()[1][-2000:]}")
        parts = urlsplit(self.url)
        self.port, self.root = parts.port or 0, parts.path

    def get(self, path: str) -> tuple[float, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        start = time.perf_counter()
        conn.request("GET", self.root + path)
        response = conn.getresponse()
        body = response.read()
        ms = (time.perf_counter() - start) * 1000
        conn.close()
        if response.status != 200:
            raise SystemExit(f"GET {path}: {response.status} {body[:300]!r}")
        return ms, body

    def json(self, path: str) -> dict:
        return json.loads(self.get(path)[1])

    def stop(self) -> None:
        self.process.send_signal(2)  # SIGINT: Ctrl-C
        self.process.communicate(timeout=60)


def timed(browse: Browse, paths: list[str]) -> dict:
    """The first request of the first path, then REPEAT rounds over all paths."""
    first, _ = browse.get(paths[0])
    warm = [browse.get(path)[0] for _ in range(REPEAT) for path in paths]
    return {"first_ms": round(first, 1), "p50_ms": round(statistics.median(warm), 1), "max_ms": round(max(warm), 1),
            "requests": len(warm) + 1}


def run(locomo: Path = DEFAULT_LOCOMO, sizes: Sizes = FULL, db: str | None = None, keep: bool = False,
        turns: int | None = None) -> dict[str, Any]:
    """Build the memory (unless `db` is given), time every page and the cold `ask` processes: the result."""
    out = HERE / "out"
    folder = Path(tempfile.mkdtemp(prefix="bench-browse-"))
    result: dict[str, Any] = {"measured_at": datetime.now().isoformat(timespec="minutes"),
                              "load_before": os.getloadavg(), "cores": os.cpu_count()}
    try:
        if db is None:
            if keep:
                out.mkdir(exist_ok=True)
            db = str((out if keep else folder) / "browse.db")
            if os.path.exists(db):
                os.remove(db)
            result["built"] = build(db, locomo, sizes.copies, folder, turns)
        result |= timed_pages(db, sizes.cold_questions)
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # the export built from; a kept memory is in bench/out
    result["load_after"] = os.getloadavg()
    return result


def timed_pages(db: str, cold_questions: int) -> dict[str, Any]:
    """Every kind of page of a `cuemem browse` server on `db`, then cold `cuemem ask` processes."""
    browse = Browse(db)
    try:
        listed = browse.json("api/conversations")
        biggest = max(listed["conversations"], key=lambda c: c["turns"])["conversation"]
        pages = {}
        pages["conversations, page 1"] = timed(browse, [""])
        pages["conversations, last page"] = timed(browse, [f"?page={listed['pages'] - 1}"])
        pages["search, a common word"] = timed(browse, ["?" + urlencode({"q": "today"})])
        pages["search, a rare word"] = timed(browse, ["?" + urlencode({"q": "necklace Sweden"})])
        chat = browse.json("api/conversation?" + urlencode({"name": biggest}))
        pages["conversation, first page"] = timed(browse, ["conversation?" + urlencode({"name": biggest})])
        middle = chat["pages"] // 2
        pages["conversation, middle page"] = timed(browse, ["conversation?" + urlencode({"name": biggest,
                                                                                          "page": middle})])
        sample = random.Random(0).sample([t["id"] for t in chat["turns"]], min(10, len(chat["turns"])))
        pages["turn (neighbourhood), 10 turns"] = timed(browse, [f"turn/{i}" for i in sample])
        only = ["ask?" + urlencode({"q": q, "c": biggest, "only": "1"}) for q in QUESTIONS]
        answered = ["ask?" + urlencode({"q": q, "c": biggest}) for q in QUESTIONS]
        first_ask, _ = browse.get(only[0])  # loads the embedder, as a cold `ask` does
        pages["question box, first question (loads the embedder)"] = {"first_ms": round(first_ask, 1)}
        pages["question box, evidence only, warm"] = timed(browse, only)
        pages["question box with the offline answer, warm"] = timed(browse, answered)
        for label, extra in (("cuemem ask --context-only, cold process", ("--context-only",)),
                             ("cuemem ask (offline answer), cold process", ())):
            cli = []
            for question in QUESTIONS[:cold_questions]:
                start = time.perf_counter()
                _cuemem("--db", db, "ask", question, "-c", biggest, "--json", *extra)
                cli.append((time.perf_counter() - start) * 1000)
            pages[label] = {"p50_ms": round(statistics.median(cli), 1), "max_ms": round(max(cli), 1),
                            "requests": len(cli)}
    finally:
        browse.stop()
    return {"memory": {"conversations": listed["total"], "db": db},
            "conversation_timed": {"name": biggest, "turns": len(chat["turns"]), "pages": chat["pages"]},
            "pages": pages}


def over_goal(name: str, timing: dict[str, Any]) -> bool:
    """A page (not the question box, which costs what `ask` costs) that took a second or more."""
    worst = max(timing.get("max_ms", 0), timing.get("first_ms", 0))
    return not ("question" in name or "ask" in name) and worst >= GOAL_MS


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--copies", type=int, default=FULL.copies,
                        help="LoCoMo's sessions this many times (4: 23,528 turns)")
    parser.add_argument("--db", help="time this memory instead of building one (SQLite file or postgresql:// URL)")
    parser.add_argument("--keep", action="store_true", help="keep the memory built (bench/out/browse.db)")
    parser.add_argument("--turns", type=int, help="build from LoCoMo's first TURNS turns only (a quick check)")
    args = parser.parse_args(argv)
    result = run(args.locomo, Sizes(copies=args.copies), args.db, args.keep, args.turns)
    print(f"memory: {result['memory']['conversations']} conversations"
          + (f", {result['built']['turns']} turns, {result['built']['cues']} cues" if "built" in result else "")
          + f"; load before/after {result['load_before'][0]:.2f}/{result['load_after'][0]:.2f}")
    print(f"{'page':58} {'first ms':>9} {'p50 ms':>8} {'max ms':>8}")
    for name, t in result["pages"].items():
        flag = "  over 1 s" if over_goal(name, t) else ""
        print(f"{name:58} {t.get('first_ms', ''):>9} {t.get('p50_ms', ''):>8} {t.get('max_ms', ''):>8}{flag}")
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
