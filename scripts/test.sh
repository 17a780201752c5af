#!/usr/bin/env bash
# Runs every test of the workspace: codec unit and property tests, the conformance vectors,
# the fuzz corpus replay, the integration tests against real ZooKeeper servers, and the
# Kerberos tests (zk-proto's `kerberos` feature) against a local MIT KDC, and the partition
# suite's quick run (scripts/partitions.sh --quick).
# Installs Java, ZooKeeper, Apache Curator (for the lock interop test) and MIT Kerberos (KDC,
# client tools, GSSAPI headers, libclang) first when they are missing (Debian, apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/install-curator.sh
scripts/install-kerberos.sh
scripts/install-partition.sh
cargo test --workspace --locked "$@"
# The `kerberos` feature is off in the workspace run: its tests are a target of their own.
cargo test -p zk-proto --features kerberos --locked --test kerberos
# docs/security.md's Kerberos examples compile only with the feature.
cargo test -p zk-proto --features kerberos --locked --doc
# `rzk bench` is in rzk only with its `bench` feature: its test and unit tests with it.
cargo test -p rzk --features bench --locked --bins --test coordination bench
# The partition suite, one run per scenario (docs/partitions.md): a promise broken fails the
# run. Skipped with one line on a machine without network namespaces (not root).
scripts/partitions.sh --quick
