#!/usr/bin/env bash
# Installs what the partition bed of the test kit (zk_testkit::partition) needs on Debian:
#   - `ip` (network namespaces, veth pairs, a bridge) -> iproute2
#   - `nft` (the drop rules of a cut)                 -> nftables
# The bed also needs root; without it (or without these tools) its tests skip with one line.
# Nothing is configured on the machine: the bed makes namespaces of its own and removes them.
# Idempotent: when both tools are present it only says so and exits.
set -euo pipefail

PACKAGES=(iproute2 nftables)

check() {
    missing=()
    local tool
    for tool in ip nft; do
        command -v "$tool" >/dev/null 2>&1 || [[ -x "/usr/sbin/$tool" ]] || [[ -x "/sbin/$tool" ]] ||
            missing+=("$tool")
    done
}

check
if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install-partition: ip and nft are present; nothing to do."
    exit 0
fi
echo "install-partition: missing: ${missing[*]}"

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-partition: apt-get not found; install iproute2 and nftables by hand." >&2
    exit 1
fi
# shellcheck source=scripts/apt-install.sh
source "$(dirname "$0")/apt-install.sh"
apt_install install-partition "${PACKAGES[@]}"

check
if [[ ${#missing[@]} -ne 0 ]]; then
    echo "install-partition: still missing after install: ${missing[*]}" >&2
    exit 1
fi
echo "install-partition: installed ${PACKAGES[*]}"
