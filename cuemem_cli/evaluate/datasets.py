"""Benchmark questions with their gold evidence, and the dialogue messages they are asked about.

Messages come from the same converters `cuemem convert` uses, so evaluation ingests exactly what a
user would. Evidence ids that do not name a turn are reported and skipped, never fatal: LoCoMo has
a few malformed ones ("D8:6; D9:17", "D", "D:11:26") and some that point at no turn.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..convert import CONVERTERS, Options, load_json
from ..errors import CuememError
from ..records import Message
from ..timeparse import parse_time

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
LONGMEMEVAL_TYPES = ("single-session-user", "single-session-assistant", "single-session-preference",
                     "multi-session", "temporal-reasoning", "knowledge-update")
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


@dataclass
class Dataset:
    name: str  # locomo | longmemeval
    path: Path
    questions: list[Question]
    messages: dict[str, list[Message]]  # per conversation, only those the questions need
    problems: list[dict[str, Any]] = field(default_factory=list)  # evidence ids reported and skipped
    categories: tuple[str, ...] = ()  # display order
    memory_wide: bool = False  # every question asked over the whole memory, no conversation named


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
    unknown = [w for w in wanted if w not in names]
    if unknown:
        raise CuememError(f"no {what} named {', '.join(unknown)}", f"known: {', '.join(names[:12])}"
                          + (" …" if len(names) > 12 else ""))
    return [item for item, name in zip(items, names, strict=True) if name in set(wanted)]


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
    needed = [s for s in samples if any(s is r[0] for r in raw)]
    messages = _group(CONVERTERS["locomo"](needed, Options()))
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
    every message's extra, as convert.py keeps an export's title); sample by sample, session by session, the
    order an export file would be ingested in."""
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


def load_longmemeval(path: str | Path, questions: Sequence[str] | None = None, limit: int | None = None) -> Dataset:
    """Each question with its own haystack as one conversation (named by the question id).

    Gold turns are those marked `has_answer`, gold sessions the `answer_session_ids`; abstention
    questions (`_abs`) keep theirs in the record but are left out of retrieval metrics.
    """
    data = load_json(path)
    if not isinstance(data, list):
        raise CuememError(f"{path}: not a LongMemEval file (expected a list of questions)")
    items = _select([q for q in data if isinstance(q, dict)], "question_id", questions, "LongMemEval question")
    items = items[:limit] if limit is not None else items
    messages = _group(CONVERTERS["longmemeval"](items, Options()))
    out, problems = [], []
    for item in items:
        qid = str(item["question_id"])
        turns = messages.get(qid, [])
        gold_turns = tuple(m.source_id for m in turns if m.source_id and m.extra.get("has_answer") is True)
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
            qid=qid, conversation=qid, question=str(item.get("question", "")), answer=str(item.get("answer", "")),
            category=str(item.get("question_type", "unknown")), as_of=as_of, gold_turns=gold_turns,
            gold_sessions=tuple(gold_sessions), abstention=qid.endswith("_abs"),
        ))
    seen = [t for t in LONGMEMEVAL_TYPES if any(q.category == t for q in out)]
    extra = sorted({q.category for q in out} - set(seen))
    return Dataset("longmemeval", Path(path), out, messages, problems, tuple(seen + extra))
