"""Facts that change (issue 57): does a question about a changed fact get both statements, and does the answer line
give the latest value?

    python bench/bench_changes.py [--cache-dir DIR] [--split tune|check|all] [--out FILE] [--rebuild]

asks every question of bench/change_questions.json offline (written by hand before change detection existed; its
`about` says how) of three memories built in DIR: the four sample dialogues, the 120 real ShareGPT chats of
bench/sharegpt_questions.py and realtalk-dev (../shared/data). Per question:
- evidence: the context (`cuemem ask`'s, at its default budget) holds one of the turns that state the earlier value
  and one of those that state the later one (an --as-of question: the earlier one, the answer then);
- line: the answer line holds the latest value (every content word of `answer`, evaluate.metrics.answer_holds);
- only older: the line holds the earlier value and not the latest (the issue's "never");
- contradiction said: for a contradiction, the line says so.
`--split tune` prints and records only the tune half, which is what may be looked at while tuning; the check half
is measured at the end. Memories are kept in DIR and reused (`--rebuild` makes them again); the code measured is
whatever `cuemem_cli` imports (PYTHONPATH=/work/base measures the code before the change on the same set).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.pop("CUEMEM_MODEL", None)  # offline answers, whatever the environment names

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# ../shared/data beside the repository (a worktree's is one folder further up)
DATA = next((d for d in (REPO.parent / "shared" / "data", REPO.parent.parent / "shared" / "data") if d.exists()),
            REPO.parent / "shared" / "data")
QUESTIONS = HERE / "change_questions.json"
sys.path.insert(0, str(HERE))

import sharegpt_questions  # noqa: E402

from cuemem_cli.evaluate.metrics import answer_holds, answer_line  # noqa: E402


def load(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["questions"]


def _cuemem(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "cuemem_cli", *args], check=True, capture_output=True, text=True)


def build(folder: Path, rebuild: bool = False) -> dict[str, Path]:
    """The three memories (made once; `rebuild` makes them again): source name → database."""
    folder.mkdir(parents=True, exist_ok=True)
    dbs = {"samples": folder / "samples.db", "sharegpt": folder / "sharegpt.db", "realtalk": folder / "realtalk.db"}
    for name, db in dbs.items():
        if db.exists() and not rebuild:
            continue
        db.unlink(missing_ok=True)
        if name == "samples":
            _cuemem("--db", str(db), "ingest", *sorted(str(p) for p in (REPO / "sample_dialogues").glob("*.jsonl")))
        elif name == "sharegpt":
            export = folder / "sharegpt-export.json"
            if not export.exists():
                sharegpt_questions.write_export(export, sharegpt_questions.load())
            _cuemem("--db", str(db), "ingest", "--from", "chatgpt", str(export))
        else:
            _cuemem("--db", str(db), "ingest", "--from", "locomo", str(DATA / "realtalk-dev.json"))
    return dbs


def problems(memory, questions: list[dict[str, Any]]) -> list[str]:
    """Questions whose turns the memory does not hold (a changed export, a mistyped id)."""
    from cuemem_cli.store.base import maintenance

    store = maintenance(memory.store)
    wrong = []
    for q in questions:
        cid = memory.store.conversation_id(q["conversation"])
        for sid in q["older"] + q["newer"]:
            if cid is None or not store.turns_with_source_id(sid, cid):
                wrong.append(f"{q['id']}: turn {sid} is not in {q['conversation']}")
    return wrong


def holds(gold: str, line: str | None) -> bool:
    """The line holds every content word of `gold` (evaluate.metrics.answer_holds); a gold of stop words only
    ("give-to-get") must occur in it as written, case aside."""
    said = answer_holds(gold, line)
    return bool(said) if said is not None else gold.lower() in (line or "").lower()


def ask(memory, q: dict[str, Any]) -> dict[str, Any]:
    """One question asked as a user asks it (the sample and ShareGPT memories whole, realtalk narrowed to its chat)."""
    narrowed = q["conversation"] if q["source"] == "realtalk" else None
    started = time.perf_counter()
    result = memory.ask(q["question"], narrowed, as_of=q["as_of"], record_retrieval=False)
    seconds = time.perf_counter() - started
    got = {(e.conversation, e.source_id) for e in result.context.evidence}

    def held(ids: list[str]) -> bool:
        return any((q["conversation"], i) in got for i in ids)

    evidence = held(q["older"]) and (held(q["newer"]) if q["newer"] else True)
    line = answer_line(result.answer.text)
    latest = holds(q["answer"], line)
    older = holds(q["older_value"], line)
    return {"id": q["id"], "source": q["source"], "split": q["split"], "kind": q["kind"], "question": q["question"],
            "gold": q["answer"], "evidence": evidence, "older_in": held(q["older"]),
            "newer_in": held(q["newer"]) if q["newer"] else None, "tokens": result.context.tokens, "line": line,
            "line_holds": latest, "only_older": older and not latest,
            "contradiction_said": ("contradict" in (line or "").lower()) if q["kind"] == "contradiction" else None,
            "seconds": round(seconds, 3)}


def score(records: list[dict[str, Any]]) -> dict[str, Any]:
    def share(key: str) -> float | None:
        values = [r[key] for r in records if r[key] is not None]
        return round(sum(values) / len(values), 3) if values else None

    return {"questions": len(records), "evidence": share("evidence"), "line": share("line_holds"),
            "only_older": sum(r["only_older"] for r in records),
            "contradiction_said": share("contradiction_said"),
            "mean_tokens": round(sum(r["tokens"] for r in records) / len(records)) if records else None,
            "max_tokens": max((r["tokens"] for r in records), default=None)}


def run(folder: Path, split: str = "all", rebuild: bool = False) -> dict[str, Any]:
    from cuemem_cli.memory import Memory

    questions = [q for q in load() if split == "all" or q["split"] == split]
    dbs = build(folder, rebuild)
    records, wrong = [], []
    for source, db in dbs.items():
        asked = [q for q in questions if q["source"] == source]
        if not asked:
            continue
        with Memory(db, create=False) as memory:
            wrong += problems(memory, asked)
            records += [ask(memory, q) for q in asked]
    splits = ("tune", "check") if split == "all" else (split,)
    result: dict[str, Any] = {"problems": wrong}
    for name in splits:
        part = [r for r in records if r["split"] == name]
        result[name] = score(part) | {"sources": {s: score([r for r in part if r["source"] == s])
                                                  for s in ("samples", "sharegpt", "realtalk")}}
    result["records"] = records
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "cuemem-bench-changes")
    parser.add_argument("--split", choices=("tune", "check", "all"), default="tune")
    parser.add_argument("--out", type=Path, help="write the summary and every question's record here (JSON)")
    parser.add_argument("--rebuild", action="store_true", help="ingest the three memories again")
    args = parser.parse_args(argv)
    result = run(args.cache_dir, args.split, args.rebuild)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "records"}, indent=1))
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
