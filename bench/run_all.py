"""Run the benchmark suite, record each benchmark's result as bench/results/<name>.json and render
bench/RESULTS.md from them (bench/report.py, its one writer): figures as measured, goals met or not.

    python bench/run_all.py [LOCOMO_JSON]            # the suite (bench/run_all.sh): ~10–15 min on 2 idle cores
        [--history EXPORT]                           # then a whole chat history's ingest (bench_history.py)
        [--browse]                                   # then browse's pages on 23,528 turns (bench_browse.py)
    python bench/run_all.py --smoke FOLDER           # every benchmark of the suite, the two above and quality.py,
                                                     # on a tiny input; results and page in FOLDER (test_bench.py)

The two whole-history benchmarks run only when asked: each takes tens of minutes on 2 idle cores, and
--history needs an export (one of real chats: bench/corpus.py, with the extra `cuemem[corpus]`). Without
them their recorded results stay as they are and are rendered again with the dates they were measured on.

The smoke run checks that each benchmark still runs and that its result still renders, so none rots
between the rare full runs; its figures mean nothing and never reach bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parent / "sample_dialogues"
SMOKE_DIALOGUES = ("maya_and_leo.jsonl", "assistant_chat.jsonl")  # the smoke run's input (the held-out ones stay out)
DEFAULT_LOCOMO = HERE.parent.parent / "shared" / "data" / "locomo10.json"
sys.path.insert(0, str(HERE))

import bench_browse  # noqa: E402
import bench_cli  # noqa: E402
import bench_history  # noqa: E402
import bench_ingest  # noqa: E402
import bench_llm_calls  # noqa: E402
import bench_mcp  # noqa: E402
import bench_reconstruct  # noqa: E402
import bench_scale  # noqa: E402
import bench_stream  # noqa: E402
import report  # noqa: E402


@dataclass(frozen=True)
class Sizes:
    """What each benchmark is run on: the conversation measured alone, the cold processes of bench_cli and
    of bench_mcp, the turns of bench_llm_calls, the file sizes of bench_stream (none: its own), bench_scale's
    sizes and bench_browse's (when it runs)."""

    conversation: str = "conv-26"
    cli_runs: int = 7
    llm_turns: int = 200
    stream: tuple[str, ...] = ()
    scale: bench_scale.Sizes = bench_scale.FULL
    mcp_cold_runs: int = bench_mcp.COLD_RUNS
    browse: bench_browse.Sizes = bench_browse.FULL


FULL = Sizes()
SMOKE = Sizes("maya-and-leo", 1, 20, ("600",), bench_scale.SMOKE, 1, bench_browse.SMOKE)


def run(locomo: str, folder: Path, sizes: Sizes, history: str | None = None, browse: bool = False) -> dict:
    """Each benchmark of the suite in turn (the order report.SUITE renders), each result saved as it comes;
    then, when asked, the whole-history ones (report.WHOLE_HISTORY): the ingest of `history` and browse."""
    started = time.perf_counter()
    conversation = sizes.conversation
    results: dict = {}

    def record(name: str, result: dict) -> dict:
        results[name] = result
        report.save(name, result, folder)
        return result

    with tempfile.TemporaryDirectory(prefix="cuemem-bench-") as work:  # several GB by the end; never left behind
        db = record("ingest", bench_ingest.main(locomo, work))["db"]
        record("scale", bench_scale.main(locomo, conversation, sizes.scale))
        record("cli", bench_cli.main(db, conversation, sizes.cli_runs))
        record("reconstruct", bench_reconstruct.main(db, locomo, conversation))
        record("llm_calls", bench_llm_calls.main(locomo, conversation, sizes.llm_turns))
        record("stream", bench_stream.main(*sizes.stream))
        record("mcp", bench_mcp.main(locomo, conversation, cold_runs=sizes.mcp_cold_runs))
        if history:
            record("history", bench_history.main([history]))
        if browse:
            record("browse", bench_browse.run(Path(locomo), sizes.browse))
    meta = {"measured_at": datetime.now().isoformat(timespec="minutes"),
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                       f"Python {platform.python_version()}",
            "total_s": round(time.perf_counter() - started, 1)}
    report.save("run_all", meta, folder)
    return results | meta


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("locomo", nargs="?", default=str(DEFAULT_LOCOMO), help="LoCoMo's locomo10.json")
    parser.add_argument("--history", metavar="EXPORT", help="also ingest this ChatGPT-shaped export (bench_history)")
    parser.add_argument("--browse", action="store_true", help="also time browse on 23,528 turns (bench_browse)")
    parser.add_argument("--smoke", metavar="FOLDER", help="everything on a tiny input, recorded in FOLDER")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = arguments(argv)
    if args.smoke:
        smoke(args.smoke)
        return
    run(args.locomo, report.RESULTS, FULL, args.history, args.browse)
    report.render()


def tiny_locomo(path: Path) -> Path:
    """LoCoMo's shape holding the two sample dialogues (SMOKE_DIALOGUES), with the questions of
    sample_dialogues/README.md and the turns it names as their evidence, labelled with LoCoMo's four
    categories in turn (so every table has its rows; the labels mean nothing): the smoke run's input,
    since LoCoMo itself is not in the repository."""
    readme = (SAMPLES / "README.md").read_text(encoding="utf-8")
    samples = []
    for section in readme.split("\n## ")[1:]:
        if section.split("\n", 1)[0].strip() not in SMOKE_DIALOGUES:
            continue
        rows = [json.loads(line) for line in (SAMPLES / section.split("\n", 1)[0].strip()).read_text().splitlines()]
        speakers = list(dict.fromkeys(row["speaker"] for row in rows))
        conversation: dict = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
        for row in rows:
            number = row["session"].removeprefix("s")
            said = datetime.fromisoformat(row["time"])
            conversation.setdefault(f"session_{number}_date_time",
                                    f"{said.hour % 12 or 12}:{said.minute:02d} {'am' if said.hour < 12 else 'pm'} "
                                    f"on {said.day} {said:%B}, {said.year}")
            conversation.setdefault(f"session_{number}", []).append(
                {"speaker": row["speaker"], "dia_id": "D" + row["id"].removeprefix("s"), "text": row["text"]})
        rows_qa = re.findall(r"^\| \d+ \| (.+?) \| (.+?) \| (.+?) \|$", section, re.M)
        qa = [{"question": question, "answer": answer, "category": 1 + number % 4,
               "evidence": ["D" + turn.removeprefix("s") for turn in re.findall(r"`(s\d+:\d+)`", turns)]}
              for number, (question, answer, turns) in enumerate(rows_qa)]
        samples.append({"sample_id": rows[0]["conversation"], "conversation": conversation, "qa": qa})
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def tiny_export(path: Path) -> Path:
    """The sample dialogues as a ChatGPT export (bench/corpus.py's shape), a chat per session: the smoke
    run's history. A dialogue between two people is written as the first speaker's chat with the second."""
    from corpus import Chat, export

    rows = [json.loads(line) for name in sorted(SMOKE_DIALOGUES) for line in (SAMPLES / name).read_text().splitlines()]
    chats: dict[tuple[str, str], list[tuple[str, str]]] = {}
    first: dict[str, str] = {}
    for row in rows:
        speaker = first.setdefault(row["conversation"], row["speaker"])
        role = row.get("role") or ("user" if row["speaker"] == speaker else "assistant")
        chats.setdefault((row["conversation"], row["session"]), []).append((role, row["text"]))
    rng = random.Random(0)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    written = [export(Chat(f"{name}-{session}", messages, 0), "en", start + timedelta(days=day), rng)
               for day, ((name, session), messages) in enumerate(chats.items())]
    path.write_text(json.dumps(written), encoding="utf-8")
    return path


def smoke(folder: str) -> None:
    """The suite, the whole-history benchmarks, quality.py and evidence.py on the sample dialogues, recorded
    and rendered inside `folder`. quality.py and evidence.py (eval processes, with a cache of their own) run
    beside the suite rather than after it: the smoke run's figures mean nothing, and on two idle cores the
    suite's processes, one at a time and mostly on one core, leave the other free for them."""
    from concurrent.futures import ThreadPoolExecutor

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    locomo = str(tiny_locomo(out / "tiny_locomo.json"))
    with ThreadPoolExecutor(1, thread_name_prefix="smoke-evals") as aside:
        evals = aside.submit(_smoke_evals, locomo, out)
        run(locomo, out / "results", SMOKE, str(tiny_export(out / "tiny_export.json")), browse=True)
        evals.result()
    report.render(out / "results", out / "RESULTS.md")


def _smoke_evals(locomo: str, out: Path) -> None:
    """quality.py and evidence.py on the smoke run's tiny LoCoMo, one after the other (they share a cache)."""
    import evidence
    import quality

    quality.run(locomo, out / "results", ["--cache-dir", str(out / "eval-cache")])
    evidence.run(out, out / "results", ["--cache-dir", str(out / "eval-cache")],
                 {name: Path(locomo) for name in ("realtalk-dev.json", "locomo10.json")})


if __name__ == "__main__":
    main()
