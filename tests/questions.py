"""The sample questions and their expected answers, read from their one source, the tables of
sample_dialogues/README.md, and the rule that says whether an offline answer is right.

Used by tests/test_showcase.py and bench/bench_questions.py. An expected answer marks what the answer's span
(its first line) must contain in **bold** and what it must not give as its answer in ~~strike-through~~
(it may name it as the earlier value: "Denver (said …; before: Portland, …)"); *no answer* means
the answer must be empty. Words are compared lower-cased, number words as digits and ordinals as
numbers, so "**15** to **19 December 2023**" holds for "15 December 2023 to 19 December 2023" and
"December 15th … the 19th, 2023" alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_dialogues"
README = SAMPLES / "README.md"


@dataclass(frozen=True)
class Question:
    where: str  # sample_dialogues/README.md:LINE
    dialogue: Path
    conversation: str
    text: str
    as_of: str | None
    kind: str
    expected: str
    must: tuple[str, ...]
    must_not: tuple[str, ...]
    turns: tuple[str, ...]
    held_out: bool

    @property
    def no_answer(self) -> bool:
        return "*no answer*" in self.expected

    def ask_args(self, whole_memory: bool = False) -> list[str]:
        """`cuemem ask` arguments for this question: narrowed to its conversation (`-c`), or asked of the
        whole memory as a user who does not know which chat holds the answer asks it."""
        narrowed = [] if whole_memory else ["-c", self.conversation]
        return ["ask", self.text, *narrowed, "--json"] + (["--as-of", self.as_of] if self.as_of else [])


def _conversation(dialogue: Path) -> str:
    with dialogue.open(encoding="utf-8") as lines:
        return json.loads(next(lines))["conversation"]


def questions(readme: Path = README) -> list[Question]:
    """Every row of every question table, in order: under `## FILE.jsonl`, the `### Questions` and
    `### Held-out questions` tables (columns #, Question, Kind, Expected answer, Turns)."""
    found: list[Question] = []
    dialogue: Path | None = None
    held_out = False
    header: list[str] = []
    for number, line in enumerate(readme.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("## "):
            dialogue, header = readme.parent / line[3:].strip(), []
        elif line.startswith("### "):
            held_out, header = "held-out" in line.lower(), []
        elif line.startswith("| # |"):
            header = [cell.strip() for cell in line.strip("|").split("|")]
        elif header and line.startswith("|") and not line.startswith("|---") and dialogue is not None:
            cells = dict(zip(header, (cell.strip() for cell in line.strip().strip("|").split("|")), strict=True))
            asked = re.fullmatch(r"(.+?)\s*(?:`--as-of ([^`]+)`)?", cells["Question"])
            assert asked is not None
            expected = cells["Expected answer"]
            found.append(Question(
                where=f"{readme.relative_to(REPO)}:{number}", dialogue=dialogue,
                conversation=_conversation(dialogue), text=asked.group(1), as_of=asked.group(2),
                kind=cells["Kind"], expected=expected,
                must=tuple(re.findall(r"\*\*(.+?)\*\*", expected)),
                must_not=tuple(re.findall(r"~~(.+?)~~", expected)),
                turns=tuple(re.findall(r"`(s\d+:\d+)`", cells["Turns"])), held_out=held_out))
        elif not line.startswith("|"):
            header = []
    return found


_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}


def words(text: str) -> set[str]:
    """Lower-cased words, number words as digits, "15th" as 15."""
    out = set()
    for word in re.findall(r"[^\W_]+", text.lower()):
        word = re.sub(r"^(\d+)(?:st|nd|rd|th)$", r"\1", word)
        out.add(_NUMBER_WORDS.get(word, word))
    return out


def span(answer: str | None) -> str | None:
    return answer.splitlines()[0] if answer else None


def sources(answer: str | None) -> list[str]:
    """The turn ids of the answer's `source:` lines ("source: Maya, s4:1, 8 October 2023: …")."""
    return re.findall(r"^source: [^\n]*?, (\S+), [^,\n]*?: ", answer or "", re.M)


def _without_earlier(span: str) -> str:
    """A span without the earlier value it names as such: "Denver (said 22 July 2023; before: Portland, said 14 May
    2023)" answers Denver; Portland is what it was (answer/changes.py)."""
    return re.sub(r"\s*\((?:said [^;()]*; )?before: [^()]*\)\s*$", "", span)


def verdict(question: Question, answer: str | None, check_source: bool = False) -> str | None:
    """None when `answer` is right for `question`, else what is wrong with it."""
    if question.no_answer:
        return None if answer is None else "an answer where the dialogue holds none"
    first = span(answer)
    if first is None:
        return "no answer"
    have = words(first)
    missing = [m for m in question.must if not words(m) <= have]
    if missing:
        return f"the span lacks {missing}"
    given = words(_without_earlier(first))
    wrong = [m for m in question.must_not if words(m) <= given]
    if wrong:
        return f"the span holds the outdated {wrong}"
    if check_source and question.turns and not set(sources(answer)) & set(question.turns):
        return f"no source among {list(question.turns)} (sources: {sources(answer)})"
    return None


Invoke = Callable[..., Any]  # the `cli` fixture: invoke("--db", PATH, "ask", …) → a Result


def ingest_samples(invoke: Invoke, db: Path, dialogues: set[Path]) -> None:
    for dialogue in sorted(dialogues):
        result = invoke("--db", str(db), "ingest", str(dialogue))
        assert result.exit_code == 0, result.stderr


def ask(invoke: Invoke, db: Path, question: Question, whole_memory: bool = False) -> dict[str, Any]:
    result = invoke("--db", str(db), *question.ask_args(whole_memory))
    assert result.exit_code == 0, f"{question.where}: {result.stderr}"
    return orjson.loads(result.stdout)
