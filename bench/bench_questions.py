"""Offline answers to the sample questions: the share right, per table and per kind of question.

    python bench/bench_questions.py [--wrong] [--table questions|held-out]

Ingests every dialogue of sample_dialogues/README.md into a temporary database through the real CLI,
asks each question of its tables offline (`cuemem ask QUESTION -c CONVERSATION --json`) and scores the
answer's span with the rule of tests/questions.py (the one tests/test_showcase.py applies). Prints a
markdown table for bench/RESULTS.md; `--wrong` also lists every wrong answer with its span; `--table`
asks only the questions of one kind of table (the held-out set stays unseen while the answerer changes).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.pop("CUEMEM_MODEL", None)  # offline answers, whatever the environment names

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the question tables' reader, shared with the tests

from questions import ask, ingest_samples, questions, span, verdict  # noqa: E402 - after the path is set
from typer.testing import CliRunner  # noqa: E402

from cuemem_cli.cli.app import app  # noqa: E402


def main() -> None:
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, list(args), catch_exceptions=False)

    only = sys.argv[sys.argv.index("--table") + 1] if "--table" in sys.argv else None
    asked = [q for q in questions() if only is None or only == ("held-out" if q.held_out else "questions")]
    rows: Counter[tuple[str, str]] = Counter()
    right: Counter[tuple[str, str]] = Counter()
    wrong = []
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "samples.db"
        ingest_samples(invoke, db, {q.dialogue for q in asked})
        for q in asked:
            table = "held-out" if q.held_out else "questions"
            answer = ask(invoke, db, q)["answer"]
            problem = verdict(q, answer)
            for key in ((table, f"kind: {q.kind}"), (table, f"conversation: {q.conversation}"), (table, "all")):
                rows[key] += 1
                right[key] += problem is None
            if problem:
                wrong.append((q, problem, span(answer)))
    print("| table | questions | n | right | share |")
    print("|---|---|---|---|---|")
    for table, group in sorted(rows, key=lambda k: (k[0] != "questions", k[1] == "all", k[1])):
        n, r = rows[(table, group)], right[(table, group)]
        print(f"| {table} | {group} | {n} | {r} | {r / n:.2f} |")
    if "--wrong" in sys.argv:
        for q, problem, first in wrong:
            print(f"{q.where} [{q.conversation}] {q.text} → {first!r}: {problem}")


if __name__ == "__main__":
    main()
