#!/usr/bin/env bash
# Runs the whole suite (scripts/test.sh) several times in a row beside CPU-bound loops, to show
# that it holds on a loaded machine: a test that passes only on a quiet one is flaky.
#
#   scripts/test-under-load.sh [--runs N (3)] [--loops N (2)] [-- ARGS for scripts/test.sh]
#
# Stops at the first failing run (its output is in the log named at the end). The loops are
# `sh` busy loops, killed on exit however the script ends.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3
loops=2
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --loops) loops="$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "usage: $0 [--runs N] [--loops N] [-- test.sh args]" >&2; exit 2 ;;
    esac
done

pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT INT TERM

for _ in $(seq "$loops"); do
    sh -c 'while :; do :; done' &
    pids+=("$!")
done
echo "test-under-load: ${#pids[@]} busy loops running (pids ${pids[*]}); $runs runs of scripts/test.sh"

logs="$(mktemp -d)"
for run in $(seq "$runs"); do
    log="$logs/run-$run.log"
    started=$(date +%s)
    echo "test-under-load: run $run of $runs (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    if ! scripts/test.sh "$@" >"$log" 2>&1; then
        echo "test-under-load: run $run FAILED after $(( $(date +%s) - started )) s; its output: $log" >&2
        grep -E '^(test .* FAILED|failures:|---- )' "$log" | head -20 >&2 || true
        exit 1
    fi
    echo "test-under-load: run $run passed in $(( $(date +%s) - started )) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
echo "test-under-load: $runs runs in a row passed beside ${#pids[@]} busy loops; logs in $logs"
