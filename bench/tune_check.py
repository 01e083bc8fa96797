"""Figures of `cuemem eval` records split into the part levers are tuned on and the part they are checked on
(bench/quality_notes.md, "What transfers"): per data set and category, all-evidence, recall and the offline
answer line, for each part and the whole.

    python bench/tune_check.py RECORDS.json [RECORDS.json ...]   # `cuemem eval … --out RECORDS.json`
    python bench/tune_check.py --check-only RECORDS.json            # no tune column (a held-out run)

The split (issue 56): tune on realtalk-dev rt-1…rt-3 and LoCoMo conv-26, conv-30, conv-41, conv-42, conv-43;
check on rt-4, rt-5 and LoCoMo conv-44, conv-47, conv-48, conv-49, conv-50. A lever is kept only when the
check part gains and no check category falls by more than 0.01. Read the check column only when a lever
is ready to be judged, and only as these aggregates.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

TUNE = frozenset({"rt-1", "rt-2", "rt-3", "conv-26", "conv-30", "conv-41", "conv-42", "conv-43"})
CHECK = frozenset({"rt-4", "rt-5", "conv-44", "conv-47", "conv-48", "conv-49", "conv-50"})


def part_of(conversation: str) -> str | None:
    """tune, check, or None for a conversation in neither part (another data set)."""
    name = conversation.split("/", 1)[0]  # LoCoMo as exports names a chat conv-26/session_3
    return "tune" if name in TUNE else "check" if name in CHECK else None


def figures(records: list[dict[str, Any]], parts: tuple[str, ...] = ("tune", "check", "all")) -> list[dict[str, Any]]:
    """A row per category (and "overall") and part: n, all-evidence, recall, answer line (where measured)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("abstention") or not record.get("gold_evidence"):
            continue
        part = part_of(record["conversation"])
        for category in (record["category"], "overall"):
            for wanted in parts:
                if wanted == "all" or wanted == part:
                    groups[(category, wanted)].append(record)
    rows = []
    for (category, part), group in sorted(groups.items(), key=lambda item: (item[0][0] != "overall", item[0])):
        lines = [r["offline_line_correct"] for r in group if r.get("offline_line_correct") is not None]
        rows.append({"category": category, "part": part, "n": len(group),
                     "all_evidence": sum(bool(r["retrieval"]["all_evidence"]) for r in group) / len(group),
                     "recall": sum(r["retrieval"]["recall"] for r in group) / len(group),
                     "line": sum(map(bool, lines)) / len(lines) if lines else None})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="+", type=Path)
    parser.add_argument("--check-only", action="store_true", help="leave the tune part out")
    args = parser.parse_args(argv)
    parts = ("check", "all") if args.check_only else ("tune", "check", "all")
    for path in args.records:
        records = orjson.loads(path.read_bytes())["records"]
        print(f"{path}")
        print(f"  {'category':12} {'part':6} {'n':>5} {'all-ev':>7} {'recall':>7} {'line':>6}")
        for row in figures(records, parts):
            line = f"{row['line']:6.3f}" if row["line"] is not None else "     -"
            print(f"  {row['category']:12} {row['part']:6} {row['n']:5} {row['all_evidence']:7.3f} "
                  f"{row['recall']:7.3f} {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
