#!/usr/bin/env bash
# Checks that zk-session, the sans-IO session, knows no driver: no async runtime (tokio,
# tokio-util, futures) in its normal dependency tree, with its default features or all of them.
# zk-proto is the tokio client over it; a runtime reaching zk-session (a dependency's default
# feature, say: jute's `frame` brings tokio-util) breaks the split the crates promise.
set -euo pipefail
cd "$(dirname "$0")/.."

for features in "" "--all-features"; do
    # shellcheck disable=SC2086 # $features is one flag or none
    tree="$(cargo tree -p zk-session -e normal $features --prefix none --format '{p}' --locked)"
    found="$(grep -E '^(tokio|futures)' <<<"$tree" | cut -d' ' -f1,2 | sort -u | tr '\n' ' ' || true)"
    if [[ -n "$found" ]]; then
        echo "check-session-runtime-free: zk-session depends on an async runtime (${features:-default features}): ${found% }" >&2
        exit 1
    fi
done
echo "check-session-runtime-free: zk-session's dependency tree has no tokio, tokio-util or futures"
