#!/usr/bin/env bash
# Runs one fuzz target for SECONDS on a copy of its committed seed corpus (new inputs go to a
# temporary directory, so the committed corpus never changes under a test run). Exits non-zero
# with libFuzzer's report (and the crashing input kept under CRASH_DIR) on a finding.
# usage: run_fuzzer.sh BINARY SEED_CORPUS_DIR SECONDS CRASH_DIR
set -euo pipefail
binary=$1 seeds=$2 seconds=$3 crashes=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$crashes"
"$binary" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
  -artifact_prefix="$crashes/" -print_final_stats=1 "$work" "$seeds" 2>&1 | tail -n 25
