#!/usr/bin/env bash
# Seeds the fuzz corpus, fuzz/corpus/<target>/, from the conformance vectors.
#
#   scripts/seed-fuzz-corpus.sh [--clean] [vectors.txt]
#
# Each vector becomes an input in the format of every target that decodes it (see
# jute::fuzzing::seed_corpus): a record_by_name input (record index, bytes), a frame_decoder
# stream, and, for connect responses, watcher events, reply headers, response bodies and multi
# responses, connect_response, watcher_event, server_message (op code, reply header, body) and
# multi_response inputs. Files are named by the SHA-1 of their content, so reruns add nothing
# new. --clean first empties the seeded targets' directories (dropping inputs a fuzzer added),
# so that the corpus is exactly what the vectors give. Needs only stable Rust.
set -euo pipefail
cd "$(dirname "$0")/.."

clean=false
if [[ "${1:-}" == --clean ]]; then
    clean=true
    shift
fi
vectors="${1:-crates/jute/tests/conformance/vectors.txt}"
if [[ ! -f "$vectors" ]]; then
    echo "seed-fuzz-corpus: no vectors file at $vectors (scripts/gen-vectors.sh makes it)" >&2
    exit 1
fi
vectors="$(cd "$(dirname "$vectors")" && pwd)/$(basename "$vectors")"

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cargo run --quiet --locked --release --manifest-path fuzz/Cargo.toml -p jute-fuzz-seed -- \
    "$vectors" "$out"

for dir in "$out"/*/; do
    target="$(basename "$dir")"
    corpus="fuzz/corpus/$target"
    if $clean; then
        rm -rf "$corpus"
    fi
    mkdir -p "$corpus"
    for input in "$dir"*; do
        hash="$(sha1sum "$input" | cut -d' ' -f1)"
        cp "$input" "$corpus/$hash"
    done
    echo "$corpus: $(find "$corpus" -type f | wc -l) files, $(du -sk "$corpus" | cut -f1) KiB"
done
