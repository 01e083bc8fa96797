"""One person's chat history, shaped as a ChatGPT export: does asking it across every chat find what one
conversation found? (issue 34's held-out check is "real-shaped chat histories"; LoCoMo as exports has ten
people's lives in one memory and third-person questions, which a person's own export does not.)

For each LoCoMo sample one of its two speakers (`speaker_a`) is the user and the other the assistant, and
the sample is written as a ChatGPT `conversations.json` and ingested with `cuemem ingest --from chatgpt`, as
a user would, four ways:

- `one chat`: every session in one chat (the one-conversation setting, with roles), alone in its memory;
- `its chats`: every session its own chat, titled as ShareGPT's exports are (the opening words of its first
  message, "…"), alone in its memory;
- `… + 500 real chats`: each of the two in a memory that already holds 500 real ChatGPT chats
  (sharegpt-en-500.json: code, essays, advice; 6,414 messages), re-dated to fall among the sessions of
  the samples asked: a person's history has many chats that are about something else (LongMemEval's
  haystacks are built the same way, from ShareGPT and UltraChat sessions).

The questions are the sample's questions that name the user and not the assistant, asked in the first
person as the user would ask them ("What did Caroline research?" → "What did I research?",
`first_person.first_person`), with no chat named. Counted per category as `cuemem eval` counts: the share
of questions with every gold turn in the evidence at 2,000 tokens; for cuemem and for BM25 (the question's
content words against the turns' FTS5 index, filled to the same budget, as `cuemem eval`'s `bm25`).

    python bench/experiments/export_shaped.py LOCOMO_JSON SHAREGPT_JSON [SAMPLE …]

Everything it writes is in a temporary folder, removed at the end; with KEEP=DIR in the environment the
databases are kept in DIR instead (and DIR's base.db, the 500 chats, is reused) for a closer look. What it
printed is in results/export_shaped.txt, what it found in bench/memory_notes.md ("A person's own export").
"""

from __future__ import annotations

import calendar
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

from first_person import first_person

from cuemem_cli.input.formats import FORMATS
from cuemem_cli.models.embedders import get_embedder
from cuemem_cli.evaluate.datasets import export_title, load_locomo
from cuemem_cli.recall.evidence import fill_budget
from cuemem_cli.recall.question import fts_query
from cuemem_cli.recall.reconstruct import reconstruct
from cuemem_cli.recall.settings import Settings
from cuemem_cli.store.sqlite import SQLiteStore

SETTINGS = ("one chat", "its chats", "one chat + 500 real chats", "its chats + 500 real chats")
SYSTEMS = ("cuemem", "bm25")


def epoch(iso: str) -> float:
    return float(calendar.timegm(datetime.fromisoformat(iso).timetuple()))


def chat(chat_id: str, title: str, messages: list[tuple[str, str, float, str]]) -> dict:
    """A ChatGPT export conversation from (message id, role, epoch seconds, text), one branch."""
    mapping: dict[str, dict] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for mid, role, when, text in messages:
        mapping[parent]["children"].append(mid)
        mapping[mid] = {"id": mid, "parent": parent, "children": [], "message": {
            "id": mid, "author": {"role": role}, "create_time": when,
            "content": {"content_type": "text", "parts": [text]}, "status": "finished_successfully"}}
        parent = mid
    return {"title": title, "id": chat_id, "conversation_id": chat_id, "create_time": messages[0][2],
            "update_time": messages[-1][2], "mapping": mapping, "current_node": parent}


def sample_export(sample: dict, one_chat: bool) -> tuple[list[dict], str, str]:
    """The sample as a ChatGPT export (speaker_a the user), and the user's and assistant's names."""
    user, other = sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"]
    sessions: dict[str, list[tuple[str, str, float, str]]] = defaultdict(list)
    for m in FORMATS["locomo"].convert([sample]):
        start = epoch(m.time)
        sessions[m.session].append((m.source_id, "user" if m.speaker == user else "assistant",
                                    start + 20 * len(sessions[m.session]), m.text))
    if one_chat:
        turns = [t for session in sessions.values() for t in session]
        return [chat(sample["sample_id"], f"{user} and {other}", turns)], user, other
    return [chat(f"{sample['sample_id']}-{number}", export_title(turns[0][3]), turns)
            for number, turns in sessions.items()], user, other


def redated(chats: list[dict], first: float, last: float) -> list[dict]:
    """Real chats moved to fall between `first` and `last`, in their order, each keeping its own pace."""
    starts = [c["create_time"] for c in chats]
    low, high = min(starts), max(starts)
    for c in chats:
        shift = first + (c["create_time"] - low) / (high - low) * (last - first) - c["create_time"]
        for node in c["mapping"].values():
            message = node.get("message")
            if message and message.get("create_time"):
                message["create_time"] += shift
        c["create_time"] += shift
    return chats


def ingest(db: Path, export: list[dict], folder: Path) -> None:
    path = folder / f"{db.stem}-{len(export)}.json"
    path.write_text(json.dumps(export))
    subprocess.run([sys.executable, "-m", "cuemem_cli", "--db", str(db), "ingest", "--from", "chatgpt", str(path)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ)
    path.unlink()


def questions(path: str, sample: dict, user: str, other: str) -> list[tuple[str, str, str | None, frozenset[str]]]:
    """(category, first-person question, question time, gold turn ids) of the questions naming the user only."""
    asked = []
    for q in load_locomo(path, conversations=[sample["sample_id"]]).questions:
        names = [n for n in (user, other) if re.search(rf"\b{re.escape(n)}\b", q.question, re.I)]
        if q.abstention or not q.gold_turns or names != [user]:
            continue
        gold = frozenset(t.split("/")[-1] for t in q.gold_turns)
        asked.append((q.category, first_person(q.question, user), q.as_of, gold))
    return asked


def bm25(store: SQLiteStore, question: str) -> set[str]:
    """The source ids BM25 shows at the default budget (`cuemem eval`'s bm25 system, over the whole memory)."""
    query = fts_query(question)
    hits = store.search_turns_fts(query, 100_000, None) if query else []
    turns = store.turns_by_id([tid for tid, _ in hits])
    return {t.source_id for t in fill_budget([turns[tid] for tid, _ in hits], Settings().budget)}


def main(locomo_path: str, sharegpt_path: str, *wanted: str) -> None:
    samples = [s for s in json.loads(Path(locomo_path).read_text()) if not wanted or s["sample_id"] in wanted]
    embedder = get_embedder(None)
    found: dict[tuple[str, str], dict[str, list[bool]]] = {(s, m): defaultdict(list) for s in SETTINGS for m in SYSTEMS}
    keep = os.environ.get("KEEP")
    with tempfile.TemporaryDirectory(prefix="cuemem-export-shaped-") as tmp:
        folder = Path(keep or tmp)
        times = [epoch(m.time) for s in samples for m in FORMATS["locomo"].convert([s]) if m.time]
        base = folder / "base.db"
        started = time.time()
        if not base.exists():
            ingest(base, redated(json.loads(Path(sharegpt_path).read_text()), min(times), max(times)), folder)
            print(f"500 real chats ingested in {time.time() - started:.0f} s", flush=True)
        for sample in samples:
            sid = sample["sample_id"]
            dbs = {name: folder / f"{sid}-{i}.db" for i, name in enumerate(SETTINGS)}
            for db in dbs.values():
                db.unlink(missing_ok=True)
            source = SQLiteStore.open(base, create=False, readonly=True)
            for name in SETTINGS[2:]:
                source.copy_to(dbs[name])
            source.close()
            one, user, other = sample_export(sample, one_chat=True)
            chats, _, _ = sample_export(sample, one_chat=False)
            for name, db in dbs.items():
                ingest(db, one if name.startswith("one chat") else chats, folder)
            asked = questions(locomo_path, sample, user, other)
            for setting, db in dbs.items():
                store = SQLiteStore.open(db, create=False)
                for category, question, as_of, gold in asked:
                    shown = {"cuemem": {e.source_id for e in
                                        reconstruct(store, embedder, question, None, Settings(), as_of).evidence},
                             "bm25": bm25(store, question)}
                    for system in SYSTEMS:
                        for key in (category, "overall"):
                            found[(setting, system)][key].append(gold <= shown[system])
                store.close()
                if not keep:
                    db.unlink()
            print(f"{sid}: {len(asked)} questions ({user} asks); example: {asked[0][1] if asked else '-'}", flush=True)
    for (setting, system), per in found.items():
        print(f"{system:7} {setting:28}", {c: f"{sum(v) / len(v):.3f} (n={len(v)})" for c, v in sorted(per.items())})


if __name__ == "__main__":
    main(*sys.argv[1:])
