#!/usr/bin/env bash
# CI smoke run of every fuzz target: FUZZ_SECONDS (default 20) each, a target per core at a
# time, on a temporary copy of fuzz/corpus/ so that the checkout stays clean. Installs a
# nightly toolchain and cargo-fuzz when missing. Exits non-zero if any target finds a crash;
# the crashing input is left in fuzz/artifacts/<target>/ (ignored by git) and its log printed.
#
#   FUZZ_SECONDS=60 scripts/fuzz-smoke.sh [target...]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-20}"
export PATH="$HOME/.cargo/bin:$PATH"

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
jobs="$(nproc 2>/dev/null || echo 2)"

cargo +nightly fuzz build

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

run_target() {
    local target="$1"
    mkdir -p "$work/corpus/$target"
    if [[ -d "fuzz/corpus/$target" ]]; then
        cp -R "fuzz/corpus/$target/." "$work/corpus/$target/"
    fi
    cargo +nightly fuzz run "$target" "$work/corpus/$target" -- \
        -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 >"$work/$target.log" 2>&1
}

declare -A pids=()
failed=()
finish() {
    local target="$1"
    if wait "${pids[$target]}"; then
        local execs
        execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$target.log" |
            grep -o '[0-9]*$' || echo '?')"
        echo "fuzz-smoke: $target ok, $execs runs in ${seconds}s"
    else
        echo "fuzz-smoke: $target FAILED; log tail:" >&2
        tail -n 60 "$work/$target.log" >&2
        failed+=("$target")
    fi
    unset "pids[$target]"
}

for target in "${targets[@]}"; do
    while [[ ${#pids[@]} -ge $jobs ]]; do
        # Wait for the oldest running target.
        for running in "${!pids[@]}"; do
            if ! kill -0 "${pids[$running]}" 2>/dev/null; then
                finish "$running"
                break
            fi
        done
        [[ ${#pids[@]} -ge $jobs ]] && sleep 1
    done
    echo "fuzz-smoke: running $target for ${seconds}s"
    run_target "$target" &
    pids[$target]=$!
done
for running in "${!pids[@]}"; do
    finish "$running"
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz-smoke: crashes in: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi
echo "fuzz-smoke: all ${#targets[@]} targets ran ${seconds}s without a crash"
