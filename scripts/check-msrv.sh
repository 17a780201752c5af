#!/usr/bin/env bash
# Checks that the workspace builds with the oldest Rust it declares (`rust-version` in the root
# Cargo.toml): installs that toolchain with rustup when missing (minimal profile) and runs
# `cargo check` on every target with it, in its own target directory.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

msrv="$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
if [[ -z "$msrv" ]]; then
    echo "check-msrv: no rust-version in Cargo.toml" >&2
    exit 1
fi
# rustup names a toolchain by its full version: "1.88" resolves to the latest 1.88.x.
if ! rustup run "$msrv" rustc --version >/dev/null 2>&1; then
    rustup toolchain install "$msrv" --profile minimal
fi
echo "check-msrv: rust $msrv: $(rustup run "$msrv" rustc --version)"
CARGO_TARGET_DIR="${MSRV_TARGET_DIR:-target/msrv}" \
    cargo "+$msrv" check --workspace --all-targets --locked
echo "check-msrv: the workspace builds with Rust $msrv"
