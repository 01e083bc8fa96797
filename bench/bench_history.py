"""Ingest of a whole chat history, as a user runs it: `cuemem --db DB ingest --from chatgpt EXPORT`.

    python bench/bench_history.py EXPORT.json [--db DB] [--out summary.json] [-- more ingest options, e.g. --workers 2]
    python bench/bench_history.py EXPORT.json --db DB --count-only   # only the counts below, no ingest
    python bench/bench_history.py EXPORT.json --compare /work/base --repeat 3 [--into BIG.db] [--profile DIR]

Comparing (issue 58): `--compare CODE` times the same ingest with the cuemem_cli found at CODE (PYTHONPATH=CODE;
e.g. /work/base, main at 4fd05f7) beside this one's, alternating run by run (this code, then CODE, `--repeat`
times), each into a memory of its own: new and empty, or a fresh copy of `--into BIG.db` (the growth measure:
run it once with `--into` and once without, or give `--compare-empty` to time, alternating, the same code into
an empty memory and into the copy). Printed: each run's wall and CPU seconds, database bytes and load averages,
and per code the median and the ratio to the first code's median. `--profile DIR` runs each ingest's main
process under cProfile (DIR/<label>-<run>.prof) and adds its 15 costliest functions by cumulative time.

EXPORT is a ChatGPT-shaped `conversations.json`, e.g. from `bench/corpus.py` (real ShareGPT chats; writing
one needs the extra `cuemem[corpus]`, this script does not). `python bench/run_all.py --history EXPORT` runs
it after the suite and records its result as bench/results/history.json for RESULTS.md. The ingest runs in
its own process under `/usr/bin/time -v`; printed as JSON: wall seconds, turns/s, cues, cues per turn, CPU
seconds (user + system), peak RSS, database bytes against the export's, the machine's load average before,
during (highest of a sample every 5 s) and after, and what the stored cues come from:
- `cues_from_code`: cues whose turn holds a fenced code block (```) and whose subject and object (bar the
  turn's own speaker) all occur in the turn's code blocks but not all in its prose: cues made out of code. An estimate
  (a cue records its turn, not where in the turn it was found); `cues_on_turns_with_code` is the upper bound.
- `cues_of_padding_turns`: cues of user turns that only ask for more ("Continue", "continue writing please", "go on";
  the rule is `corpus.is_padding`). Exact: a cue belongs to one turn.
Without --db the database goes to a temporary folder that is removed afterwards. With --db into an existing
memory, the ingest adds what is new (stored turns are skipped) and the counts are those of the whole memory.
A load average above 1.5 on 2 cores means the timing is not a result: re-run on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from corpus import FENCE, has_code, is_padding, prose
from cuemem_cli.records import Cue, Turn
from cuemem_cli.store.base import conversation_names
from cuemem_cli.store.sqlite import SQLiteStore


def peak_rss_mb(time_v: str) -> float | None:
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", time_v)
    return round(int(found.group(1)) / 1024, 1) if found else None


def cpu_seconds(time_v: str) -> float | None:
    """User + system CPU seconds of the ingest: less sensitive than wall time to other work on the machine."""
    found = [float(m) for m in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", time_v)]
    return round(sum(found), 1) if len(found) == 2 else None


def db_bytes(db: Path) -> int:
    return sum(Path(f"{db}{suffix}").stat().st_size for suffix in ("", "-wal") if Path(f"{db}{suffix}").exists())


def from_code(cue: Cue, turn: Turn, code: str, text: str) -> bool:
    """The cue's subject and object are in the turn's code, and not both in its prose. The turn's own speaker
    (a statement cue's subject, or a resolved "I") says nothing about where the cue was found: left out."""
    own = {(turn.speaker or "").lower(), (turn.role or "").lower()}
    parts = [p.lower() for p in (cue.subject, cue.object) if p.strip() and p.lower() not in own]
    return bool(parts) and all(p in code for p in parts) and not all(p in text for p in parts)


def cue_sources(db: Path) -> dict[str, Any]:
    """Turns and cues of the memory, and how many cues come from code blocks and from padding turns."""
    store = SQLiteStore.open(db, create=False, readonly=True)
    counts = {"turns": 0, "turns_with_code": 0, "padding_turns": 0, "turns_without_cues": 0, "cues": 0,
              "cues_from_code": 0, "cues_on_turns_with_code": 0, "cues_of_padding_turns": 0}
    try:
        for name in conversation_names(store):
            turns = store.turns(store.conversation_id(name))  # type: ignore[arg-type]
            cues = store.cues_of_turns(t.id for t in turns)
            for turn in turns:
                mine = cues.get(turn.id, [])
                counts["turns"] += 1
                counts["cues"] += len(mine)
                counts["turns_without_cues"] += not mine
                if has_code(turn.text):
                    code = " ".join(FENCE.findall(turn.text)).lower()
                    text = prose(turn.text).lower()
                    counts["turns_with_code"] += 1
                    counts["cues_on_turns_with_code"] += len(mine)
                    counts["cues_from_code"] += sum(from_code(c, turn, code, text) for c in mine)
                if turn.role == "user" and is_padding(turn.text):
                    counts["padding_turns"] += 1
                    counts["cues_of_padding_turns"] += len(mine)
    finally:
        store.close()
    return counts


def _help_of(code: Path) -> str:
    done = subprocess.run([sys.executable, "-P", "-m", "cuemem_cli", "ingest", "--help"], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(code)})
    return done.stdout


def top_functions(profile: Path, count: int = 15) -> list[str]:
    """The costliest functions of a cProfile dump by cumulative time, one line each."""
    import io
    import pstats

    out = io.StringIO()
    pstats.Stats(str(profile), stream=out).sort_stats("cumulative").print_stats(count)
    return [line.strip() for line in out.getvalue().splitlines() if re.match(r"\s*\d", line)]


def compare(export: Path, code: Path | None, repeat: int, into: Path | None, empty_too: bool, profile: Path | None,
            extra: list[str]) -> dict[str, Any]:
    """Alternating runs of two variants (this code and `code`; or, with `empty_too`, this code into an empty
    memory and into a copy of `into`), each into a memory of its own; per variant the runs and their medians."""
    import shutil
    import statistics

    variants: list[tuple[str, Path | None, Path | None]] = [("new", None, into)]
    variants.append(("new-into-empty", None, None) if empty_too else ("base", code, into))
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in variants}
    with tempfile.TemporaryDirectory(prefix="cuemem-history-", dir=os.environ.get("CUEMEM_BENCH_TMP")) as folder:
        for number in range(repeat):
            for label, variant_code, start in variants:
                db = Path(folder) / f"{label}-{number}.db"
                if start is not None:
                    for suffix in ("", "-wal"):
                        if Path(f"{start}{suffix}").exists():
                            shutil.copyfile(f"{start}{suffix}", f"{db}{suffix}")
                prof = profile / f"{label}-{number}.prof" if profile else None
                if prof:
                    prof.parent.mkdir(parents=True, exist_ok=True)
                result = measure(export, db, extra, variant_code, prof, count=False)
                if prof:
                    result["profile_top"] = top_functions(prof)
                runs[label].append(result)
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{db}{suffix}").unlink(missing_ok=True)
    summary: dict[str, Any] = {"export": str(export), "into": str(into) if into else None, "repeat": repeat,
                               "extra": extra, "variants": {}}
    first = None
    for label, variant_code, _ in variants:
        rows = runs[label]
        medians = {key: statistics.median(r[key] for r in rows if r.get(key) is not None)
                   for key in ("wall_seconds", "cpu_seconds", "db_bytes", "peak_rss_mb")
                   if any(r.get(key) is not None for r in rows)}
        first = first or medians
        summary["variants"][label] = {
            "code": str(variant_code or Path(__file__).resolve().parent.parent), "medians": medians,
            "ratio_to_new": {k: round(v / first[k], 3) for k, v in medians.items() if first.get(k)},
            "runs": rows}
    return summary


class LoadSampler(threading.Thread):
    """The highest 1-minute load average seen while the ingest runs."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.highest = os.getloadavg()[0]
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(5):
            self.highest = max(self.highest, os.getloadavg()[0])


def measure(export: Path, db: Path, extra: list[str], code: Path | None = None, profile: Path | None = None,
            count: bool = True) -> dict[str, Any]:
    """One ingest of `export` into `db` in its own process, with this cuemem_cli or the one at `code`."""
    before = os.getloadavg()
    sampler = LoadSampler()
    sampler.start()
    runner = ["-m", "cProfile", "-o", str(profile)] if profile else []
    # -P with another code: `python -m` would put the working directory (this checkout) before PYTHONPATH,
    # and the "base" run would time this code again
    isolated = ["-P"] if code else []
    command = ["/usr/bin/time", "-v", sys.executable, *isolated, *runner, "-m", "cuemem_cli", "--db", str(db),
               "ingest", "--from", "chatgpt", str(export), "--json", "--quiet", *extra]
    env = {**os.environ, "PYTHONPATH": str(code)} if code else None
    if code and "--quiet" not in _help_of(code):  # the reference code may predate --quiet
        command.remove("--quiet")
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    sampler.done.set()
    after = os.getloadavg()
    if done.returncode not in (0, 3):  # 3: partial ingest, still measured
        sys.stderr.write(done.stderr)
        sys.exit(f"bench_history.py: ingest exited {done.returncode}")
    report = json.loads(done.stdout)
    sources = cue_sources(db) if count else None
    added = report["turns_added"]
    return {
        "measured_at": datetime.now().isoformat(timespec="minutes"),
        "export": str(export), "export_bytes": export.stat().st_size, "db": str(db),
        "command": " ".join(command[2:]), "exit_code": done.returncode,
        "wall_seconds": round(wall, 1), "turns_added": added, "turns_existing": report["turns_existing"],
        "turns_per_second": round(added / wall, 2) if wall else None,
        "cues_added": report["cues"], "cues_per_turn_added": round(report["cues"] / added, 2) if added else None,
        "texts_embedded": report["texts_embedded"], "stage_seconds": report["stage_seconds"],
        "conversations_in_report": len(report["conversations"]),
        "cpu_seconds": cpu_seconds(done.stderr), "peak_rss_mb": peak_rss_mb(done.stderr),
        "db_bytes": db_bytes(db), "db_over_export": round(db_bytes(db) / export.stat().st_size, 2),
        "memory": sources,
        "load_average": {"before": round(before[0], 2), "highest_during": round(sampler.highest, 2),
                         "after": round(after[0], 2), "cores": os.cpu_count()},
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export", type=Path, help="a ChatGPT-shaped conversations.json")
    parser.add_argument("--db", type=Path, help="the memory to ingest into (kept); default: a temporary one")
    parser.add_argument("--out", type=Path, help="also write the JSON summary here")
    parser.add_argument("--count-only", action="store_true",
                        help="no ingest: count what the memory --db holds (a build that was stopped, say)")
    parser.add_argument("--compare", type=Path, metavar="CODE",
                        help="also time the ingest with the cuemem_cli at CODE (e.g. /work/base), alternating")
    parser.add_argument("--compare-empty", action="store_true",
                        help="with --into: time this code into an empty memory and into --into's copy, alternating")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each code when comparing (medians)")
    parser.add_argument("--into", type=Path, help="when comparing, ingest into a fresh copy of this memory")
    parser.add_argument("--profile", type=Path, metavar="DIR", help="when comparing, cProfile each ingest into DIR")
    argv = sys.argv[1:] if argv is None else argv
    # What follows `--` goes to `cuemem ingest` as is (argparse would not take "--workers 2" as a positional).
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if args.count_only:
        if not args.db:
            parser.error("--count-only needs --db")
        result = {"db": str(args.db), "db_bytes": db_bytes(args.db), "memory": cue_sources(args.db)}
    elif args.compare or args.compare_empty:
        result = compare(args.export, args.compare, args.repeat, args.into, args.compare_empty, args.profile, extra)
    elif args.db:
        args.db.parent.mkdir(parents=True, exist_ok=True)
        result = measure(args.export, args.db, extra)
    else:
        with tempfile.TemporaryDirectory(prefix="cuemem-history-") as folder:
            result = measure(args.export, Path(folder) / "memory.db", extra)
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
