"""Ingest at the scale of a real chat history (issue 23): long assistant turns, one huge turn, file size.

    python bench/bench_scale.py [LOCOMO_JSON]

- Long-turn chat: a stand-in for a year of ChatGPT or agent history, built from LoCoMo's own text
  (`long_chat`): 500 turns alternating a user turn (one LoCoMo turn) and an assistant turn (the LoCoMo
  turns that follow, joined until a length drawn uniformly from 900–2,800 characters, seed 23), about
  490 KB of text, like LongMemEval-S's assistant turns of 1–3 KB. Ingested offline in a fresh process:
  wall seconds, stage seconds, peak RSS, database bytes over JSONL bytes. Reference from the same run:
  spaCy's `nlp.pipe` alone over the same texts, the parse every offline ingest must pay.
- One huge turn: LoCoMo text joined into one turn of 250 KB and of 1 MB (the most a turn may hold,
  ingest.MAX_TURN_CHARS): seconds and peak RSS of each, and seconds per MB of both (linear when equal);
  then a 5 MB turn, which must be refused at once, naming its line, with nothing written.
- Database size of LoCoMo conv-26 over its JSONL, after the ingest process closed the file (SQLite then
  checkpoints its WAL into it).

Every ingest runs as `python -m cuemem_cli ingest` in its own process; peak RSS is that process's own
high-water mark (VmHWM, read every 50 ms), so no figure includes this script's memory.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


@dataclass(frozen=True)
class Sizes:
    """The long chat's turns and the two huge turns' characters (a 5 MB turn is always tried: refused)."""

    chat_turns: int = 500
    huge: tuple[int, int] = (250_000, 1_000_000)


FULL = Sizes()
SMOKE = Sizes(chat_turns=20, huge=(5_000, 20_000))  # bench/run_all.py --smoke


def locomo_turns(locomo: str) -> list[dict]:
    """Every LoCoMo turn as cuemem JSONL records, in order (`cuemem convert locomo`)."""
    done = subprocess.run([sys.executable, "-m", "cuemem_cli", "convert", "locomo", locomo],
                          capture_output=True, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


def long_chat(turns: list[dict], count: int = 500, seed: int = 23) -> list[dict]:
    """The long-turn stand-in described in the module doc."""
    rng = random.Random(seed)
    out: list[dict] = []
    i = 0
    while len(out) < count:  # LoCoMo holds enough turns; a smaller input is read round again
        out.append({"conversation": "long-chat", "id": f"t{len(out)}", "speaker": "user",
                    "text": turns[i % len(turns)]["text"]})
        i += 1
        target = rng.uniform(900, 2800)
        parts: list[str] = []
        while sum(len(p) + 1 for p in parts) < target:
            parts.append(turns[i % len(turns)]["text"])
            i += 1
        out.append({"conversation": "long-chat", "id": f"t{len(out)}", "speaker": "assistant", "text": " ".join(parts)})
    return out


def one_turn(turns: list[dict], chars: int) -> dict:
    """LoCoMo's text joined into one turn of exactly `chars` characters."""
    text, i = [], 0
    size = 0
    while size < chars:
        piece = turns[i % len(turns)]["text"]
        text.append(piece)
        size += len(piece) + 1
        i += 1
    return {"conversation": "huge", "id": "t0", "speaker": "assistant", "time": "2023-05-08T13:56:00",
            "text": " ".join(text)[:chars]}


def write_jsonl(path: Path, records: list[dict]) -> int:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path.stat().st_size


def high_water_mb(pid: int) -> float | None:
    """The process's peak RSS so far (VmHWM), of its own program: the rusage of a child counts the RSS
    of the parent it was forked from, before its exec (measured: 1.3 GB reported for a 0.5 GB ingest)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def ingest(jsonl: Path, db: Path) -> dict:
    """`cuemem ingest --json` in its own process: wall seconds, peak RSS (MB), exit code, report, DB bytes."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen([sys.executable, "-m", "cuemem_cli", "--db", str(db), "ingest", str(jsonl), "--json"],
                                 stdout=out, stderr=err)
        peak = 0.0
        while child.poll() is None:  # VmHWM only grows; read until the process is gone
            peak = max(peak, high_water_mb(child.pid) or 0.0)
            time.sleep(0.05)
        status = child.returncode
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    code = status
    files = [Path(f"{db}{suffix}") for suffix in ("", "-wal", "-shm")]
    return {"seconds": round(wall, 2), "peak_rss_mb": round(peak), "exit_code": code,
            "report": json.loads(stdout) if code == 0 else None, "stderr": stderr.strip().splitlines()[:3],
            "db_bytes": sum(f.stat().st_size for f in files if f.exists()), "db_exists": db.exists()}


def main(locomo: str | None = None, conversation: str = "conv-26", sizes: Sizes = FULL) -> dict:
    """`conversation` is the one whose database size is reported (the conv26 row)."""
    locomo = locomo or str(HERE.parent.parent / "shared" / "data" / "locomo10.json")
    from bench_ingest import spacy_reference

    turns = locomo_turns(locomo)
    result: dict = {}
    with tempfile.TemporaryDirectory(prefix="cuemem-bench-scale-") as folder:
        work = Path(folder)
        chat = long_chat(turns, sizes.chat_turns)
        jsonl_bytes = write_jsonl(work / "long.jsonl", chat)
        run = ingest(work / "long.jsonl", work / "long.db")
        report = run.pop("report")
        result["long_chat"] = {
            "turns": len(chat), "text_chars": sum(len(r["text"]) for r in chat), "jsonl_bytes": jsonl_bytes,
            **run, "cues": report["cues"], "stage_s": report["stage_seconds"],
            "db_to_jsonl": round(run["db_bytes"] / jsonl_bytes, 1),
            "spacy_pipe_alone_s": round(spacy_reference([r["text"] for r in chat]), 2)}
        huge = []
        for chars in sizes.huge:
            size = write_jsonl(work / f"huge{chars}.jsonl", [one_turn(turns, chars)])
            run = ingest(work / f"huge{chars}.jsonl", work / f"huge{chars}.db")
            report = run.pop("report")
            huge.append({"chars": chars, "jsonl_bytes": size, **run, "cues": report["cues"],
                         "stage_s": report["stage_seconds"], "s_per_mb": round(run["seconds"] / (chars / 1e6), 1)})
        write_jsonl(work / "huge5m.jsonl", [one_turn(turns, 5_000_000)])
        refused = ingest(work / "huge5m.jsonl", work / "huge5m.db")
        refused.pop("report")
        result["huge_turns"] = huge
        result["five_mb_turn"] = refused
        conv26 = [r for r in turns if r["conversation"] == conversation]
        size = write_jsonl(work / "conv26.jsonl", conv26)
        run = ingest(work / "conv26.jsonl", work / "conv26.db")
        result["conv26"] = {"turns": len(conv26), "jsonl_bytes": size, "db_bytes": run["db_bytes"],
                            "db_to_jsonl": round(run["db_bytes"] / size, 1), "seconds": run["seconds"]}
    return result


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1] if len(sys.argv) > 1 else None), indent=2))
