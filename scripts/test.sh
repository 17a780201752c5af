#!/usr/bin/env bash
# Runs every test of the workspace: codec unit and property tests, the conformance vectors,
# the fuzz corpus replay, and the integration tests against real ZooKeeper servers.
# Installs Java, ZooKeeper and Apache Curator (for the lock interop test) first when they are
# missing (Debian, apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/install-curator.sh
cargo test --workspace --locked "$@"
