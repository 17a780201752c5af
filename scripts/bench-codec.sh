#!/usr/bin/env bash
# The codec benchmark: our jute codec against the reference Java serializer (ZooKeeper 3.8
# zookeeper-jute.jar) on the same bytes. Installs Java and ZooKeeper first when they are missing
# (Debian, apt-get), then runs the benchmark in release mode; arguments are passed through:
#   scripts/bench-codec.sh             # the table (about 40 s)
#   scripts/bench-codec.sh --json      # one JSON document on stdout
#   scripts/bench-codec.sh --quick     # a few seconds; for smoke tests, not for quoting figures
#   scripts/bench-codec.sh --no-java   # our codec only
# See docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."

# install-deps.sh reports on stdout; keep stdout for the benchmark (--json).
scripts/install-deps.sh >&2
exec cargo run --release -p zk-benches --bin codec -- "$@"
