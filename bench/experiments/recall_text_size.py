"""How much does an agent's model read of an MCP `recall`, against the evidence's own text? (50)

    python bench/experiments/recall_text_size.py DB [--questions FILE] [--sample 60] [--seed 50] [--budget 2000]

DB is any memory. Each question is recalled over the whole memory as the MCP tool does
(`mcp_server.MemoryTools.recall`), and three sizes are compared, in characters: the evidence's own text (its
turns' `text`), the tool's text block today (`recall_text`: the answer prompt's evidence block under one
line), and the text block before issue 50 (the SDK's indented JSON of the result's fields, cues left out, as
`_convert_to_content` wrote it). Clients hand their model the text block, so its size is what a recall
costs an agent. Questions: `--questions FILE`'s (a LoCoMo-layout file: locomo10.json, realtalk-dev.json),
`--sample` of them drawn with `--seed`; without it, the first sentence (at most 15 words) of `--sample` user
turns of the memory, as someone asking about what they said. Prints one JSON summary.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def questions_of(path: str | None, tools, sample: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    if path:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        asked = [qa["question"] for item in data for qa in item.get("qa", []) if qa.get("question")]
        return rng.sample(asked, min(sample, len(asked)))
    store = tools.memory.store
    turns = [t for cid, _, _ in store.conversations() for t in store.turns(cid) if t.role == "user"]
    chosen = rng.sample(turns, min(sample, len(turns)))
    return [" ".join(re.split(r"(?<=[.?!])\s", t.text.strip(), maxsplit=1)[0].split()[:15]) for t in chosen]


def before(data: dict) -> str:
    """The text block the tool sent before: the indented JSON of every field but the cues and the answer's."""
    old = {key: data[key] for key in ("question", "conversations", "as_of", "evidence", "tokens", "timings_ms")}
    return json.dumps(old, indent=2, ensure_ascii=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db")
    parser.add_argument("--questions")
    parser.add_argument("--sample", type=int, default=60)
    parser.add_argument("--seed", type=int, default=50)
    parser.add_argument("--budget", type=int, default=2000)
    args = parser.parse_args()
    from cuemem_cli.mcp_server import MemoryTools

    tools = MemoryTools(args.db)
    rows = []
    try:
        for question in questions_of(args.questions, tools, args.sample, args.seed):
            reply = tools.recall(question, budget=args.budget)
            evidence = sum(len(e["text"]) for e in reply.data["evidence"])
            if evidence:
                rows.append((evidence, len(reply.text), len(before(reply.data))))
    finally:
        tools.close()
    now = [text / evidence for evidence, text, _ in rows]
    old = [json_text / evidence for evidence, _, json_text in rows]
    print(json.dumps({"db": args.db, "questions": len(rows), "budget": args.budget,
                      "evidence_chars_mean": round(statistics.mean(r[0] for r in rows)),
                      "text_chars_mean": round(statistics.mean(r[1] for r in rows)),
                      "json_text_chars_mean_before": round(statistics.mean(r[2] for r in rows)),
                      "text_per_evidence_mean": round(statistics.mean(now), 3),
                      "text_per_evidence_max": round(max(now), 3),
                      "before_per_evidence_mean": round(statistics.mean(old), 3),
                      "before_per_evidence_max": round(max(old), 3)}, indent=2))


if __name__ == "__main__":
    main()
