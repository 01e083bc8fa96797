"""The ShareGPT question set: the export it is asked of, and a check that the set still fits it.

    python bench/sharegpt_questions.py OUT.json

writes OUT.json, the ChatGPT-shaped export of real ShareGPT chats that bench/sharegpt_questions.json is
asked of (bench/corpus.py with the set's `export` arguments: the first 120 English chats of seed 36), and
checks every question against it: its conversation is in the export, its evidence ids are messages of
that conversation, and (for a question whose answer is copied rather than read: not yes/no, not a date)
every content word of the expected answer occurs in its evidence messages. Prints a JSON summary;
exits 1 naming the questions that no longer fit (the ShareGPT package changed, say).

The questions (issue 49) were written by hand, in the first person as someone asks about their own chat
history, paraphrased rather than copied from the text; `answer: null` marks questions nothing in the
export answers (an answer should then abstain). `split` halves the set by conversation: `tune` may be
looked at while the answer changes, `check` is reported apart.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "sharegpt_questions.json"
READ_NOT_COPIED = ("yes-no", "when")  # kinds whose answer is read off the evidence, not a span of it


def load(path: Path = QUESTIONS) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def write_export(out: Path, questions: dict[str, Any]) -> dict[str, Any]:
    """The export the set is asked of, written by bench/corpus.py; its summary."""
    sys.path.insert(0, str(HERE))
    import corpus

    spec = questions["export"]
    return corpus.main([str(out), "--conversations", str(spec["conversations"]), "--seed", str(spec["seed"]),
                        "--lang", spec["lang"]])


def messages(conversation: dict[str, Any]) -> dict[str, str]:
    """Message id → text of an exported conversation's visible messages."""
    return {node["message"]["id"]: "".join(p for p in node["message"]["content"]["parts"] if isinstance(p, str))
            for node in conversation["mapping"].values()
            if node.get("message") and node["message"]["author"]["role"] != "system"}


def problems(questions: list[dict[str, Any]], export: list[dict[str, Any]]) -> list[str]:
    """What no longer fits the export, one line per question."""
    from cuemem_cli.evaluate.metrics import content_tokens

    chats = {c["id"]: messages(c) for c in export}
    found = []
    for q in questions:
        if q["answer"] is None:
            continue
        said = chats.get(q["conversation"])
        if said is None:
            found.append(f"{q['id']}: conversation {q['conversation']} is not in the export")
            continue
        missing = [m for m in q["evidence"] if m not in said]
        if missing or not q["evidence"]:
            found.append(f"{q['id']}: evidence {missing or '(none)'} is not a message of its conversation")
            continue
        if q["kind"] not in READ_NOT_COPIED:
            words = set(content_tokens(" ".join(said[m] for m in q["evidence"])))
            if absent := set(content_tokens(q["answer"])) - words:
                found.append(f"{q['id']}: its evidence lacks {sorted(absent)} of {q['answer']!r}")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    out = Path(argv[0])
    data = load()
    summary = write_export(out, data)
    export = json.loads(out.read_text(encoding="utf-8"))
    wrong = problems(data["questions"], export)
    questions = data["questions"]
    print(json.dumps({
        "export": str(out), "conversations": summary["conversations"], "messages": summary["messages"],
        "questions": len(questions), "answerable": sum(q["answer"] is not None for q in questions),
        "conversations_asked": len({q["conversation"] for q in questions if q["conversation"]}),
        "problems": wrong}, indent=2))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
