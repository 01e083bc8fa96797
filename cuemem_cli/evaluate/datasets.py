"""Benchmark questions with their gold evidence, and the dialogue messages they are asked about.

Messages come from the file as `cuemem convert` and `ingest --from` read it (input.convert.convert), so
evaluation ingests exactly what a user would. Evidence ids that do not name a turn are reported and skipped,
never fatal: LoCoMo has a few malformed ones ("D8:6; D9:17", "D", "D:11:26") and some that point at no turn.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from ..errors import CuememError
from ..input.convert import convert
from ..input.formats.base import load_json
from ..records import Message
from ..timeparse import parse_time

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
LONGMEMEVAL_TYPES = ("single-session-user", "single-session-assistant", "single-session-preference",
                     "multi-session", "temporal-reasoning", "knowledge-update")
TITLE_CHARS = 40  # export_title
_DIA_ID = re.compile(r"D\d+:\d+")
_ID_LIST = re.compile(r"[;,\s]+")


@dataclass(frozen=True)
class Question:
    qid: str
    conversation: str
    question: str
    answer: str  # the gold answer; LongMemEval: a rubric for preference, an explanation for abstention
    category: str
    as_of: str | None
    gold_turns: tuple[str, ...] = ()  # source ids of the evidence turns that exist
    gold_sessions: tuple[str, ...] = ()  # LongMemEval only
    abstention: bool = False  # the right answer is to decline (LongMemEval `_abs`, LoCoMo category 5)
    memory: str = ""  # the memory it is asked in: a key of `Dataset.memories`, "" where there is one memory


@dataclass
class Dataset:
    name: str  # locomo | longmemeval
    path: Path
    questions: list[Question]
    messages: dict[str, list[Message]]  # per conversation, only those the questions need
    problems: list[dict[str, Any]] = field(default_factory=list)  # evidence ids reported and skipped
    categories: tuple[str, ...] = ()  # display order
    memory_wide: bool = False  # every question asked over the whole memory, no conversation named
    memories: dict[str, list[str]] = field(default_factory=dict)  # memory → its conversations; {}: one memory

    def split(self) -> list[tuple[str, list[Question], dict[str, list[Message]]]]:
        """The memories the questions are asked in, each with its questions and its conversations' messages:
        one memory of every conversation, unless `memories` lays them out as several (LongMemEval: a memory per
        haystack)."""
        if not self.memories:
            return [("", self.questions, self.messages)]
        return [(name, [q for q in self.questions if q.memory == name], {c: self.messages[c] for c in names})
                for name, names in self.memories.items()]


def normalise_evidence(raw: Sequence[Any], known: set[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """LoCoMo evidence → valid turn ids, and a note for each id that was split or skipped.

    An entry holding an obvious list ("D8:6; D9:17", "D9:1 D4:4") is split; a piece that is not a
    `D<session>:<turn>` id, or names no turn of the conversation, is skipped.
    """
    ids: list[str] = []
    notes: list[dict[str, Any]] = []
    for entry in raw:
        text = str(entry).strip()
        pieces = [p for p in _ID_LIST.split(text) if p]
        if len(pieces) > 1 and all(_DIA_ID.fullmatch(p) for p in pieces):
            notes.append({"evidence": text, "problem": "a list in one entry", "action": f"split into {pieces}"})
        for piece in pieces or [text]:
            if not _DIA_ID.fullmatch(piece):
                notes.append({"evidence": piece, "problem": "malformed id", "action": "skipped"})
            elif piece not in known:
                notes.append({"evidence": piece, "problem": "no such turn", "action": "skipped"})
            elif piece not in ids:
                ids.append(piece)
    return ids, notes


def _select(items: list[dict[str, Any]], key: str, wanted: Sequence[str] | None, what: str) -> list[dict[str, Any]]:
    if not wanted:
        return items
    names = [str(item.get(key)) for item in items]
    known = set(names)
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise CuememError(f"no {what} named {', '.join(unknown)}", f"known: {', '.join(names[:12])}"
                          + (" …" if len(names) > 12 else ""))
    chosen = set(wanted)
    return [item for item, name in zip(items, names, strict=True) if name in chosen]


def _group(messages) -> dict[str, list[Message]]:
    grouped: dict[str, list[Message]] = {}
    for message in messages:
        grouped.setdefault(message.conversation, []).append(message)
    return grouped


def load_locomo(path: str | Path, conversations: Sequence[str] | None = None, limit: int | None = None,
                adversarial: bool = False, as_exports: bool = False) -> Dataset:
    """Categories 1–4 (the standard 1,540 questions), plus 5 with `adversarial`.

    Questions are asked after the dialogue: their time is the date of the conversation's last session.
    `as_exports` lays the data out as a chat export would: every session its own conversation (see
    `as_export_sessions`), all of them in one memory, every question asked over the whole memory; gold
    turns are then named `conversation/source id` (source ids repeat across sessions' conversations).
    """
    data = load_json(path)
    if not isinstance(data, list):
        raise CuememError(f"{path}: not a LoCoMo file (expected a list of samples)")
    samples = _select([s for s in data if isinstance(s, dict)], "sample_id", conversations, "LoCoMo conversation")
    wanted = {1, 2, 3, 4, 5} if adversarial else {1, 2, 3, 4}
    raw: list[tuple[dict[str, Any], int, dict[str, Any]]] = []
    for sample in samples:
        for index, qa in enumerate(sample.get("qa") or []):
            if isinstance(qa, dict) and qa.get("category") in wanted:
                raw.append((sample, index, qa))
    raw = raw[:limit] if limit is not None else raw
    needed = {str(s.get("sample_id")) for s in samples if any(s is r[0] for r in raw)}
    messages = _group(m for m in convert("locomo", [str(path)]) if m.conversation in needed)
    exported = as_export_sessions(messages) if as_exports else messages
    questions, problems = [], []
    for sample, index, qa in raw:
        name = str(sample["sample_id"])
        turns = messages.get(name, [])
        qid = f"{name}/q{index}"
        gold, notes = normalise_evidence(qa.get("evidence") or [], {m.source_id for m in turns if m.source_id})
        if as_exports:
            where = {m.source_id: exported_name(m) for m in turns}
            gold = [f"{where[sid]}/{sid}" for sid in gold]
        problems += [{"question_id": qid, **note} for note in notes]
        category = qa["category"]
        answer = qa.get("answer") if category != 5 else qa.get("adversarial_answer")
        questions.append(Question(
            qid=qid, conversation=name, question=str(qa.get("question", "")), answer=str(answer or ""),
            category=LOCOMO_CATEGORIES[category], as_of=max((m.time for m in turns if m.time), default=None),
            gold_turns=tuple(gold), abstention=category == 5,
        ))
    order = tuple(LOCOMO_CATEGORIES[c] for c in sorted(wanted))
    return Dataset("locomo", Path(path), questions, exported, problems, order, memory_wide=as_exports)


def exported_name(message: Message) -> str:
    """The conversation a LoCoMo session becomes in the "as exports" layout: `conv-26/session_3`."""
    return f"{message.conversation}/session_{message.session}"


def as_export_sessions(messages: dict[str, list[Message]]) -> dict[str, list[Message]]:
    """LoCoMo as a chat export: each session of each sample its own conversation (`exported_name`), keeping
    its date and two speakers, titled like a chat list would show it ("Caroline and Melanie, session 3", in
    every message's extra, as input/formats/chatgpt.py keeps an export's title); sample by sample, session by
    session, the order an export file would be ingested in."""
    out: dict[str, list[Message]] = {}
    for items in messages.values():
        sessions: dict[str, list[Message]] = {}
        for m in items:
            sessions.setdefault(exported_name(m), []).append(m)
        for name, said in sessions.items():
            speakers = list(dict.fromkeys(m.speaker for m in said if m.speaker))
            title = f"{' and '.join(speakers)}, session {said[0].session}"
            out[name] = [replace(m, conversation=name, extra={**m.extra, "title": title}) for m in said]
    return out


def load_longmemeval(path: str | Path, questions: Sequence[str] | None = None, limit: int | None = None,
                     as_exports: bool = False) -> Dataset:
    """Each question with its own haystack as one conversation (named by the question id), a memory of its own.

    Gold turns are those marked `has_answer`, gold sessions the `answer_session_ids`; abstention
    questions (`_abs`) keep theirs in the record but are left out of retrieval metrics. Questions whose
    haystacks are the same sessions (`_haystack_key`: `has_answer` marks are the question's, not the
    history's) are asked in one conversation, named by the first of them: ingested once.

    A memory per haystack, in both layouts: the haystacks are different users' histories that share their
    filler sessions, and in one memory every cue of a haystack would be compared with every cue of all the
    others as the graph is built (ingest/graph.py: semantic edges range over the whole memory), a cost that grows
    with the square of the benchmark (LongMemEval-S: ~500 haystacks) and edges that lead only to other
    haystacks' copies of a session.

    `as_exports` lays each haystack out as one person's chat export (`haystack_as_export`): every session in
    its memory a titled chat, the question asked over all of them with none named (in one memory of every
    haystack, another question's copy of a filler session could answer for this one).
    """
    data = load_json(path)
    if not isinstance(data, list):
        raise CuememError(f"{path}: not a LongMemEval file (expected a list of questions)")
    items = _select([q for q in data if isinstance(q, dict)], "question_id", questions, "LongMemEval question")
    items = items[:limit] if limit is not None else items
    asked = {str(item.get("question_id")) for item in items}
    converted = _group(m for m in convert("longmemeval", [str(path)]) if m.conversation in asked)
    first: dict[str, str] = {}  # haystack → the first question asked in it
    home = {str(item["question_id"]): first.setdefault(_haystack_key(item), str(item["question_id"]))
            for item in items}
    messages = {name: said for name, said in converted.items() if home.get(name) == name}
    memories = {name: [name] for name in messages}  # a haystack is a memory: one conversation, or its chats
    if as_exports:
        messages, memories = haystack_as_export(messages)
    for memory in home.values():
        memories.setdefault(memory, [])  # a haystack with no words in it is still asked about
    out, problems = [], []
    for item in items:
        qid = str(item["question_id"])
        turns = [m for name in memories[home[qid]] for m in messages[name]]
        known = {m.source_id: m.conversation for m in turns}
        gold_turns = tuple(f"{known[sid]}/{sid}" if as_exports else sid for sid in _marked(item) if sid in known)
        sessions = {m.session for m in turns}
        gold_sessions = []
        for sid in item.get("answer_session_ids") or []:
            if str(sid) in sessions:
                gold_sessions.append(str(sid))
            else:
                problems.append({"question_id": qid, "evidence": str(sid), "problem": "no such session",
                                 "action": "skipped"})
        try:
            as_of = parse_time(item["question_date"]) if item.get("question_date") else None
        except ValueError as exc:
            raise CuememError(f"longmemeval: {qid}: bad question_date: {exc}") from None
        out.append(Question(
            qid=qid, conversation=home[qid], question=str(item.get("question", "")),
            answer=str(item.get("answer", "")), category=str(item.get("question_type", "unknown")), as_of=as_of,
            gold_turns=gold_turns, gold_sessions=tuple(gold_sessions), abstention=qid.endswith("_abs"),
            memory=home[qid],
        ))
    seen = [t for t in LONGMEMEVAL_TYPES if any(q.category == t for q in out)]
    extra = sorted({q.category for q in out} - set(seen))
    return Dataset("longmemeval", Path(path), out, messages, problems, tuple(seen + extra), memory_wide=as_exports,
                   memories=memories)


def _haystack_key(item: dict[str, Any]) -> str:
    """What makes two questions' haystacks one history: their sessions' ids, dates, roles and words."""
    sessions = [[(t.get("role"), t.get("content")) if isinstance(t, dict) else t for t in session]
                if isinstance(session, list) else session for session in item.get("haystack_sessions") or []]
    parts = [item.get("haystack_session_ids"), item.get("haystack_dates"), sessions]
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()


def _marked(item: dict[str, Any]) -> list[str]:
    """The ids (`SESSION_ID:INDEX`, as input.formats.longmemeval names turns) of the turns a question marks
    `has_answer`, in haystack order."""
    return [f"{sid}:{index}"
            for sid, session in zip(item.get("haystack_session_ids") or [], item.get("haystack_sessions") or [],
                                    strict=False) if isinstance(session, list)
            for index, turn in enumerate(session) if isinstance(turn, dict) and turn.get("has_answer") is True]


def export_title(text: str) -> str:
    """A chat's title as ShareGPT's exports have it, and the closest a chat without one gets to ChatGPT's:
    its first message's opening words, at most TITLE_CHARS characters, then "…"."""
    text = " ".join(text.split())
    if len(text) <= TITLE_CHARS:
        return text
    return text[:TITLE_CHARS].rsplit(" ", 1)[0].rstrip(",.;:") + "…"


def haystack_as_export(messages: dict[str, list[Message]]) -> tuple[dict[str, list[Message]], dict[str, list[str]]]:
    """LongMemEval haystacks (by the question they are named after) as chat exports: each haystack a memory
    of its own, each of its sessions a conversation of it, `MEMORY/SESSION_ID`, titled by its first user
    message's opening words (`export_title`; a session id such as `answer_4be1b6b4_2` would tell the reader
    where the answer is), with its date and roles. Returns the messages by conversation, and each memory's
    conversations in haystack order."""
    out: dict[str, list[Message]] = {}
    memories: dict[str, list[str]] = {}
    for memory, said in messages.items():
        sessions: dict[str, list[Message]] = {}
        for m in said:
            sessions.setdefault(f"{memory}/{m.session}", []).append(m)
        for name, turns in sessions.items():
            title = export_title(next((m.text for m in turns if m.role == "user"), turns[0].text))
            out[name] = [replace(m, conversation=name, extra={**m.extra, "title": title}) for m in turns]
        memories[memory] = list(sessions)
    return out, memories
