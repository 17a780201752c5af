#!/usr/bin/env bash
# The partition suite (docs/partitions.md): every scenario (a follower cut from its leader, the
# leader in the minority, a client cut from every server, a bridge partition, a paused server,
# a paused client, rolling restarts during a partition, a one-way cut, a reconfig during a cut)
# against every workload (the session; the lock, the latch and the master election with a
# fenced store; a compare-and-set register and the counter checked for linearizability; the
# tree cache and group membership; Curator's mutex and latch beside ours), on a real ZooKeeper
# ensemble in network namespaces. Installs Java, ZooKeeper, Curator, `ip` and `nft` when
# missing. Needs root; without it, one line says so and the suite is skipped.
#
#   scripts/partitions.sh [--quick] [--runs N] [--scenario NAME]... [--workload NAME]... [--json FILE]
#
# Prints a JSON line per run and workload, then a summary table; exits 1 when a promise the
# docs make was broken. --quick runs each scenario once (a few minutes; CI runs it).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/install-curator.sh
scripts/install-partition.sh
# The dev profile: it shares the test build's artifacts, and the checkers are fast enough in it.
cargo build --locked -p zk-partitions --bin partitions
exec target/debug/partitions "$@"
