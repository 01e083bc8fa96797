#!/usr/bin/env bash
# The benchmark suite in one go (about 10–15 minutes on 2 idle cores): records bench/results/*.json and renders
# bench/RESULTS.md from them (bench/run_all.py, bench/report.py). The whole-history benchmarks run only when
# asked, after the two positions: --history EXPORT (a chat export's ingest), --browse (browse's pages).
# Usage: bench/run_all.sh [LOCOMO_JSON] [N_CUES_FOR_THE_LARGE_TEST] [--history EXPORT] [--browse]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
locomo="${1:-$here/../../shared/data/locomo10.json}"
python "$here/run_all.py" "$locomo" "${2:-1000000}" "${@:3}"
