#!/usr/bin/env bash
# The lock latency benchmark: raw calls, the lock recipe and the leader latch against a real
# ZooKeeper 3.8, compared in the same run with the ZooKeeper Java client and Apache Curator,
# plus the codec figures. Installs Java, ZooKeeper and Curator first when they are missing
# (Debian, apt-get), then runs the benchmark in release mode; arguments are passed through:
#   scripts/bench.sh                          # local server (forceSync=yes), the table
#   scripts/bench.sh --compare none           # ours alone
#   scripts/bench.sh --json                   # one JSON object per line on stdout
#   scripts/bench.sh --no-fsync               # local server with forceSync=no
#   scripts/bench.sh --stock-server           # local server with the default thread pools
#   scripts/bench.sh --ensemble               # local three-server ensemble, sessions on followers
#   scripts/bench.sh --connect host:2181      # an existing server or ensemble
#   scripts/bench.sh --scale 0.1 --plot lat.svg
# See docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."

# The install scripts report on stdout; keep stdout for the benchmark (--json).
scripts/install-deps.sh >&2
scripts/install-curator.sh >&2
exec cargo run --release -p zk-benches --bin lock_latency -- "$@"
