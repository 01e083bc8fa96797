"""Does an answer model read a ditto mark for the leading words a chat's title shares with the header above
it ("— 〃 4 · 9 May 2023 —" under "— Ana and Ben, day 3 · … —") as meant?

    python bench/experiments/ditto_probe.py DB [--probes 20] [--seed 34] [--model local/qwen2.5-1.5b] [--short]

DB is the as-exports database `cuemem eval locomo … --setting as-exports --cache-dir DIR` caches (its
chats are titled "Caroline and Melanie, session 3"). Questions are drawn with `random.Random(--seed)`
from LoCoMo's; each is reconstructed over the whole memory as `ask` does, and where its evidence has a
header of another chat whose title begins like the one above it, one turn under that header becomes a
probe: the same evidence and `ask`'s answer prompt, the question replaced by "In which conversation did
SPEAKER say: "…"?". Asked twice, the shared leading words shown as a ditto mark ("〃 4", the rule this
probe tested, `prefix_ditto`) and as `ask` shows them today (the title whole), and scored by whether
the answer names the right session number ("session 4"). A model that reads the mark answers as often
right with it as without. `--short` keeps only the probe's run and the run above it (whose header the mark refers to):
reading the mark, without finding one line in 2,000 tokens. Records are written to
bench/experiments/results/ditto_probe[_short].records.jsonl.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
RESULTS = Path(__file__).resolve().parent / "results"


def prefix_ditto(label: str, above: str) -> str:
    """The rule measured: the leading words `label` shares with `above` as one ditto mark ("〃 4")."""
    words, before = label.split(" "), above.split(" ")
    same = 0
    while same < min(len(words), len(before)) and words[same] == before[same]:
        same += 1
    return " ".join(["〃", *words[same:]]) if same else label


def probes(db: str, count: int, seed: int, short: bool) -> list[tuple[object, str, str]]:
    """(context with the probe question, the chat's title, the line quoted) for `count` questions."""
    import cuemem_cli.recall.evidence as rc
    from cuemem_cli.models.embedders import get_embedder
    from cuemem_cli.recall.reconstruct import reconstruct
    from cuemem_cli.recall.settings import Settings
    from cuemem_cli.evaluate.datasets import load_locomo
    from cuemem_cli.store.open import open_store

    store, embedder = open_store(db), get_embedder(None)
    questions = [q for q in load_locomo(LOCOMO, as_exports=True).questions if q.gold_turns]
    random.Random(seed).shuffle(questions)
    found = []
    for q in questions:
        context = reconstruct(store, embedder, q.question, None, Settings(), q.as_of)
        previous = None
        dittoed = []
        for ev in context.evidence:
            if (previous is not None and previous.conversation != ev.conversation
                    and prefix_ditto(rc.chat_label(ev), rc.chat_label(previous)).startswith("〃 ")):
                dittoed.append(ev)
            previous = ev
        if not dittoed:
            continue
        ev = random.Random(f"{seed}/{q.qid}").choice(dittoed)
        quoted = " ".join(ev.text.split()[:14])
        probe = (f'In which conversation did {ev.speaker} say: "{quoted}…"? '
                 "Answer with the full name of the conversation.")
        if short:  # the run the probe's turn opens and the run above it, whose header the mark refers to
            at = context.evidence.index(ev)
            above = rc._run(context.evidence[at - 1])
            first = min(i for i, e in enumerate(context.evidence[:at]) if rc._run(e) == above)
            last = max(i for i, e in enumerate(context.evidence) if rc._run(e) == rc._run(ev))
            context = replace(context, evidence=context.evidence[first:last + 1])
        found.append((replace(context, question=probe), ev.title, quoted))
        if len(found) == count:
            break
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("db")
    parser.add_argument("--probes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--model", default="local/qwen2.5-1.5b")
    parser.add_argument("--short", action="store_true",
                        help="only the probe's run and the run above it: reading the mark, not finding the line")
    args = parser.parse_args()

    import cuemem_cli.recall.evidence as rc
    from cuemem_cli.answer.prompt import answer_with_model

    shipped = rc.header_label
    right = {"ditto": 0, "full titles": 0}
    out = RESULTS / f"ditto_probe{'_short' if args.short else ''}.records.jsonl"
    cases = probes(args.db, args.probes, args.seed, args.short)
    with out.open("w") as records:
        for context, title, quoted in cases:
            number = re.search(r"session (\d+)", title or "")
            for headers in right:
                rc.header_label = shipped if headers != "ditto" else (
                    lambda turn, previous: prefix_ditto(rc.chat_label(turn), rc.chat_label(previous))
                    if previous is not None else rc.chat_label(turn))
                started = time.perf_counter()
                answer = answer_with_model(context, args.model, temperature=0).text
                ok = bool(number and re.search(rf"\bsession\s*{number.group(1)}\b", answer, re.I))
                right[headers] += ok
                records.write(json.dumps({"headers": headers, "title": title, "quoted": quoted, "answer": answer,
                                          "right": ok, "seconds": round(time.perf_counter() - started, 1)}) + "\n")
                print(headers, ok, title, "|", answer.replace("\n", " ")[:100], flush=True)
    rc.header_label = shipped
    print({headers: f"{n}/{len(cases)}" for headers, n in right.items()})


if __name__ == "__main__":
    main()
