"""Cold-process latency of `cuemem ask --context-only --json` against `python -c "import onnxruntime"`.

Both are run N times as fresh processes, alternating, and reported as medians and their ratio, so a
noisy machine moves both alike. Also checks which heavy modules the ask path imported.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(db: str, conversation: str, runs: int = 7) -> dict:
    ask = [sys.executable, "-m", "cuemem_cli", "--db", db, "ask", "--conversation", conversation,
           "--context-only", "--json", "When did Caroline go to the LGBTQ support group?"]
    ref = [sys.executable, "-c", "import onnxruntime"]
    timed(ask), timed(ref)  # warm the page cache: "cold" means a new process, not a cold disk
    asks, refs = [], []
    for _ in range(runs):
        asks.append(timed(ask))
        refs.append(timed(ref))
    probe = subprocess.run(
        [sys.executable, "-c",
         "import sys, runpy; sys.argv = " + repr(["cuemem", *ask[3:]]) + "\n"
         "from cuemem_cli.cli.app import app\n"
         "try:\n    app()\nexcept SystemExit:\n    pass\n"
         "print('HEAVY', [m for m in ('torch', 'spacy', 'litellm') if m in sys.modules], file=sys.stderr)"],
        capture_output=True, text=True)
    heavy = [line for line in probe.stderr.splitlines() if line.startswith("HEAVY")]
    result = {
        "ask_median_s": round(statistics.median(asks), 3),
        "ask_max_s": round(max(asks), 3),
        "import_onnxruntime_median_s": round(statistics.median(refs), 3),
        "ratio": round(statistics.median(asks) / statistics.median(refs), 2),
        "heavy_modules_on_ask_path": heavy[0][6:] if heavy else "unknown",
        "goal": "ask ≤ 1.0 s wall",
        "met": statistics.median(asks) <= 1.0,
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
