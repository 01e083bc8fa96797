"""LoCoMo written as LongMemEval: one person's history of sessions among real chats about something else,
for `cuemem eval longmemeval` in both of its layouts (issue 34: "LongMemEval … scores well only because the
evaluation pours every session into one conversation; a real export gives one conversation per chat").

LongMemEval's own haystacks are not in this workspace. This writes the closest real-shaped thing in its
format: for each LoCoMo sample one haystack, its sessions with `speaker_a` as the user and `speaker_b` as
the assistant, among FILLER real ShareGPT chats (each one session, re-dated at random between the sample's
first and last session: LongMemEval builds its haystacks from ShareGPT and UltraChat sessions the same way);
its questions are the sample's questions that name the user and not the assistant, asked in the first
person (`first_person.first_person`), with `has_answer` on their gold turns. Every question of a sample has
the same haystack, so `cuemem eval` ingests it once per layout.

    python bench/experiments/longmemeval_shaped.py LOCOMO_JSON SHAREGPT_JSON OUT_JSON [FILLER] [SAMPLE …]
    cuemem eval longmemeval OUT_JSON --budget 2000 --systems cuemem,naive-rag,bm25 --out one.json
    cuemem eval longmemeval OUT_JSON --budget 2000 --systems cuemem,naive-rag,bm25 --setting as-exports \
        --out as-exports.json

FILLER defaults to 30 chats a haystack (with a sample's 19–32 sessions about the size of LongMemEval-S's
~50). What the two runs measured is in bench/memory_notes.md ("LongMemEval as exports").
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

from first_person import first_person

from cuemem_cli.input.formats import FORMATS
from cuemem_cli.evaluate.datasets import load_locomo


def lme_date(iso: str) -> str:
    """LongMemEval's date format: 2023/05/20 (Sat) 02:21."""
    return datetime.fromisoformat(iso).strftime("%Y/%m/%d (%a) %H:%M")


def filler_chats(path: str) -> list[list[dict]]:
    """Each real chat as a LongMemEval session: its messages' roles and words, in order."""
    chats: dict[str, list[dict]] = defaultdict(list)
    for m in FORMATS["chatgpt"].convert(json.loads(Path(path).read_text())):
        chats[m.conversation].append({"role": m.role, "content": m.text})
    return [turns for turns in chats.values() if any(t["role"] == "user" for t in turns)]


def haystack(sample: dict, filler: list[list[dict]], count: int) -> tuple[list[str], list[str], list[list[dict]],
                                                                        dict[str, tuple[str, int]]]:
    """The sample's sessions and `count` filler chats in time order: session ids, dates, sessions, and where
    each of the sample's turns is (LoCoMo id → session id, index)."""
    user = sample["conversation"]["speaker_a"]
    said: dict[str, list] = defaultdict(list)
    for m in FORMATS["locomo"].convert([sample]):
        said[m.session].append(m)
    sessions = [(said[n][0].time, f"{sample['sample_id']}_s{n}", said[n]) for n in said]
    times = [datetime.fromisoformat(t) for t, _, _ in sessions]
    rng = random.Random(sample["sample_id"])
    span = (max(times) - min(times)).total_seconds()
    chosen = rng.sample(range(len(filler)), count)
    for number, index in enumerate(chosen):
        when = min(times) + timedelta(seconds=rng.uniform(0, span))
        sessions.append((when.isoformat(timespec="seconds"), f"sharegpt_{sample['sample_id']}_{number}",
                         filler[index]))
    sessions.sort(key=lambda s: s[0])
    where: dict[str, tuple[str, int]] = {}
    out = []
    for _, sid, turns in sessions:
        if turns and isinstance(turns[0], dict):
            out.append([dict(t, has_answer=False) for t in turns])
            continue
        for index, m in enumerate(turns):
            where[m.source_id] = (sid, index)
        out.append([{"role": "user" if m.speaker == user else "assistant", "content": m.text, "has_answer": False}
                    for m in turns])
    return [sid for _, sid, _ in sessions], [lme_date(t) for t, _, _ in sessions], out, where


def questions(locomo_path: str, sample: dict, filler: list[list[dict]], count: int) -> list[dict]:
    """The sample's first-person questions, each with the sample's haystack and its own has_answer marks."""
    user, other = sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"]
    ids, dates, sessions, where = haystack(sample, filler, count)
    out = []
    for q in load_locomo(locomo_path, conversations=[sample["sample_id"]]).questions:
        names = [n for n in (user, other) if re.search(rf"\b{re.escape(n)}\b", q.question, re.I)]
        if q.abstention or not q.gold_turns or names != [user] or q.as_of is None:
            continue
        marked = [where[g] for g in q.gold_turns]
        marks = {(sid, index) for sid, index in marked}
        out.append({
            "question_id": q.qid.replace("/", "_"), "question_type": q.category,
            "question": first_person(q.question, user), "answer": q.answer, "question_date": lme_date(q.as_of),
            "haystack_session_ids": ids, "haystack_dates": dates,
            "haystack_sessions": [[dict(t, has_answer=(sid, i) in marks) for i, t in enumerate(session)]
                                  for sid, session in zip(ids, sessions, strict=True)],
            "answer_session_ids": list(dict.fromkeys(sid for sid, _ in marked)),
        })
    return out


def main(locomo_path: str, sharegpt_path: str, out_path: str, count: str = "30", *wanted: str) -> None:
    samples = [s for s in json.loads(Path(locomo_path).read_text()) if not wanted or s["sample_id"] in wanted]
    filler = filler_chats(sharegpt_path)
    items = [item for sample in samples for item in questions(locomo_path, sample, filler, int(count))]
    Path(out_path).write_text(json.dumps(items))
    print(f"{len(items)} questions over {len(samples)} haystacks, {count} real chats in each: {out_path}")
    if items:
        print("e.g.", items[0]["question"], "→", items[0]["answer"])


if __name__ == "__main__":
    main(*sys.argv[1:])
