#!/usr/bin/env bash
# The benchmark suite in one go (about 10–15 minutes on 2 idle cores): records bench/results/*.json and renders
# bench/RESULTS.md from them (bench/run_all.py, bench/report.py). The whole-history benchmarks run only when
# asked: --history EXPORT (a chat export's ingest), --browse (browse's pages).
# Usage: bench/run_all.sh [LOCOMO_JSON] [--history EXPORT] [--browse]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [[ $# -eq 0 || "$1" == --* ]]; then
  set -- "$here/../../shared/data/locomo10.json" "$@"
fi
python "$here/run_all.py" "$@"
