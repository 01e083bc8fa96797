"""How far the offline answer line can go on the evidence it reads (issue 49): does one evidence sentence
hold every content word of the gold answer at all, where does the first such sentence rank among the
sentences the answer quotes from, and how much abstention a floor on the best sentence's score buys.

    python bench/experiments/answer_ceiling.py DATA_JSON [--cache-dir DIR] [--adversarial]

DATA_JSON is a LoCoMo-shaped file (locomo10.json, realtalk-dev.json). The eval's cuemem memory is built
(or reused) by `cuemem eval locomo DATA_JSON --systems cuemem --budget 2000 --offline-answers
--cache-dir DIR`, exactly as bench/bench_answers.py runs it, and each question's evidence is rebuilt from
that database with `Memory.context` (what `cuemem ask -c CONVERSATION --as-of TIME` gives). Per category:

- one sentence: some evidence sentence holds every content word of the gold answer (the metric of
  `cuemem eval --offline-answers`), as stored, before relative dates are resolved;
- one turn / whole evidence: the same for one turn, and for all the evidence together;
- rank: where the first such sentence sits in the answering ranking (answer/sentences.py `answering`);
- with `--adversarial`: abstention on category 5 against false abstention on the answerable questions,
  for today's rules alone and with a floor on the best answering score at a few false-abstention rates.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/, for bench_answers

from bench_answers import run_eval

from cuemem_cli.answer.sentences import answering, matched, rank_sentences, sentences, someone_elses
from cuemem_cli.evaluate.metrics import answer_holds
from cuemem_cli.memory import Memory
from cuemem_cli.models.embedders import get_embedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "cuemem-bench-answers")
    parser.add_argument("--adversarial", action="store_true")
    args = parser.parse_args()
    summary, records = run_eval(args.data, args.cache_dir, args.adversarial)
    embedder = get_embedder()
    holds: dict[str, Counter[str]] = defaultdict(Counter)
    ranks: dict[str, Counter[str]] = defaultdict(Counter)
    scores: list[tuple[bool, float, bool]] = []  # (adversarial, best answering score, today's rules abstain)
    with Memory(summary["database"], create=False) as memory:
        for r in records:
            context = memory.context(r["question"], r["conversation"], as_of=r["as_of"])
            ranked = rank_sentences(context, embedder)
            best = answering(context, ranked)
            abstains = not matched(context, ranked) or someone_elses(context, best)
            scores.append((r["abstention"], best[0][0] if best else -9.0, abstains))
            if r["abstention"] or not r.get("gold_answer"):
                continue
            gold, c = r["gold_answer"], holds[r["category"]]
            c["n"] += 1
            c["one sentence"] += any(answer_holds(gold, s) for ev in context.evidence for s in sentences(ev.text))
            c["one turn"] += any(answer_holds(gold, ev.text) for ev in context.evidence)
            c["whole evidence"] += bool(answer_holds(gold, "\n".join(ev.text for ev in context.evidence)))
            at = next((k for k, (_, s, _) in enumerate(best) if answer_holds(gold, s)), None)
            ranks[r["category"]]["none" if at is None else str(at + 1) if at < 3 else "4-10" if at < 10 else ">10"] += 1
    print(f"{args.data.name}: {len(records)} questions, database {summary['database']}")
    print("| category | n | one sentence | one turn | whole evidence | rank 1 | 2 | 3 | 4-10 | >10 | none |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for category, c in sorted(holds.items()):
        n = c["n"]
        shares = " | ".join(f"{ranks[category][k] / n:.3f}" for k in ("1", "2", "3", "4-10", ">10", "none"))
        print(f"| {category} | {n} | {c['one sentence'] / n:.3f} | {c['one turn'] / n:.3f} | "
              f"{c['whole evidence'] / n:.3f} | {shares} |")
    if args.adversarial:
        adv = np.array([(s, a) for is_adv, s, a in scores if is_adv])
        ans = np.array([(s, a) for is_adv, s, a in scores if not is_adv])
        print(f"\ntoday's rules: abstain {adv[:, 1].mean():.3f} on category 5 ({len(adv)}), "
              f"false abstention {ans[:, 1].mean():.3f} ({len(ans)})")
        for rate in (0.02, 0.05, 0.10, 0.20):
            floor = float(np.quantile(ans[:, 0], rate))
            a = ((adv[:, 0] < floor) | (adv[:, 1] > 0)).mean()
            f = ((ans[:, 0] < floor) | (ans[:, 1] > 0)).mean()
            print(f"a floor of {floor:.3f} on the best answering score: abstain {a:.3f}, false abstention {f:.3f}")


if __name__ == "__main__":
    main()
