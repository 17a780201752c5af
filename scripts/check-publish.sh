#!/usr/bin/env bash
# Checks that every published crate (zk-jute, zk-session, zk-proto, zk-recipes, zk-discovery, zk-gss-store;
# the others say `publish = false`) can be published: `cargo publish --dry-run` packages each one, checks
# its metadata, and builds the packaged sources against each other, as crates.io would see them.
# Then, from the first release tag (`v*`) on, `cargo semver-checks` compares the public API with
# the latest tag's (installed with `cargo install` when missing); before any tag it says so.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

# Cargo verifies the packages by extracting them into its registry cache, keyed by name and
# version only: a second dry run of the same version would build the first one's sources. Our
# crates are not on crates.io at this version, so their extracted copies can always go.
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
for crate in zk-jute zk-session zk-proto zk-recipes zk-discovery zk-gss-store; do
    rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$crate-$version"
done
# --allow-dirty: the suite that ran before may leave files behind (corpora, logs); the packages
# contain only what git tracks plus Cargo.lock, as on a clean checkout.
cargo publish --workspace --dry-run --locked --allow-dirty

baseline="$(git tag --list 'v*' --sort=-v:refname | head -n 1)"
if [[ -z "$baseline" ]]; then
    echo "check-publish: no release tag yet; semver checks start with the first tagged version"
    exit 0
fi
if ! cargo semver-checks --version >/dev/null 2>&1; then
    cargo install --locked cargo-semver-checks
fi
echo "check-publish: public API against $baseline"
cargo semver-checks --workspace --baseline-rev "$baseline"
