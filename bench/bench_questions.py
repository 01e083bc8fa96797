"""Offline answers to the sample questions: the share right, per table and per kind of question.

    python bench/bench_questions.py [--wrong] [--table questions|held-out]

Ingests every dialogue of sample_dialogues/README.md into a temporary database through the real CLI,
asks each question of its tables offline (`cuemem ask QUESTION -c CONVERSATION --json`), the Questions
tables' ones again over the whole memory, and scores the answer line with the rule of tests/questions.py
(the one tests/test_showcase.py applies). Prints a markdown table for bench/RESULTS.md; `--wrong` also
lists every wrong answer line by cause (no answer; a lone word that is not the answer; a line lacking
the answer); `--table` asks only the questions of one kind of table (the held-out set stays unseen
while the answerer changes). bench/bench_answers.py records its figures (`measure`).
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

from questions import Question, ask, ingest_samples, questions, span, verdict  # noqa: E402 - after the path is set
from typer.testing import CliRunner  # noqa: E402

from cuemem_cli.cli.app import app  # noqa: E402


def ask_all(only: str | None = None) -> list[tuple[Question, str, str | None, str | None]]:
    """(question, where it was asked, its answer, what is wrong with it) for every question of the tables
    (of one kind of table with `only`), each asked of its conversation (`-c`), and the Questions tables'
    ones again over a memory of every dialogue ("whole memory"), as tests/test_showcase.py asks them."""
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, list(args), catch_exceptions=False)

    asked = [q for q in questions() if only is None or only == ("held-out" if q.held_out else "questions")]
    out = []
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "samples.db"
        ingest_samples(invoke, db, {q.dialogue for q in questions()})
        for whole in (False, True):
            for q in asked:
                if whole and q.held_out:
                    continue
                answer = ask(invoke, db, q, whole_memory=whole)["answer"]
                table = "whole memory" if whole else "held-out" if q.held_out else "questions"
                out.append((q, table, answer, verdict(q, answer)))
    return out


def lone(answer: str | None, problem: str | None) -> bool:
    """A wrong answer line of at most two words: the kind of guess issue 49 rules out."""
    return problem is not None and answer is not None and len((span(answer) or "").split()) <= 2


def measure(only: str | None = None) -> dict[str, dict[str, int]]:
    """Per table (questions, held-out, whole memory): questions, right, wrong lines of at most two words."""
    out: dict[str, dict[str, int]] = {}
    for _, table, answer, problem in ask_all(only):
        row = out.setdefault(table, {"n": 0, "right": 0, "lone_wrong": 0})
        row["n"] += 1
        row["right"] += problem is None
        row["lone_wrong"] += lone(answer, problem)
    return out


def main() -> None:
    only = sys.argv[sys.argv.index("--table") + 1] if "--table" in sys.argv else None
    rows: Counter[tuple[str, str]] = Counter()
    right: Counter[tuple[str, str]] = Counter()
    wrong = []
    for q, table, answer, problem in ask_all(only):
        for key in ((table, f"kind: {q.kind}"), (table, f"conversation: {q.conversation}"), (table, "all")):
            rows[key] += 1
            right[key] += problem is None
        if problem:
            wrong.append((q, table, problem, span(answer), lone(answer, problem)))
    print("| table | questions | n | right | share |")
    print("|---|---|---|---|---|")
    order = {"questions": 0, "whole memory": 1, "held-out": 2}
    for table, group in sorted(rows, key=lambda k: (order[k[0]], k[1] == "all", k[1])):
        n, r = rows[(table, group)], right[(table, group)]
        print(f"| {table} | {group} | {n} | {r} | {r / n:.2f} |")
    if "--wrong" in sys.argv:  # by cause: no answer, a lone word that is not the answer, a line lacking the answer
        for cause, test in (("no answer", lambda w: w[3] is None), ("a lone word, wrong", lambda w: w[4]),
                            ("a line lacking the answer", lambda w: w[3] is not None and not w[4])):
            chosen = [w for w in wrong if test(w)]
            print(f"\n{cause}: {len(chosen)}")
            for q, table, problem, first, _ in chosen:
                print(f"  {q.where} [{table}, {q.conversation}] {q.text} → {first!r}: {problem}")


if __name__ == "__main__":
    main()
