#!/usr/bin/env bash
# Installs what the Kerberos (GSSAPI) feature of zk-proto and its tests need on Debian:
#   - to build the `kerberos` feature (the libgssapi crate generates its bindings with bindgen):
#       MIT Kerberos headers and pkg-config file  -> libkrb5-dev (gssapi/gssapi.h, krb5-gssapi.pc)
#       libclang for bindgen                      -> libclang-dev
#       pkg-config                                -> pkgconf
#   - to run the tests against a local KDC (zk_testkit::kdc):
#       krb5kdc, kdb5_util                        -> krb5-kdc
#       kadmin.local                              -> krb5-admin-server
#       kinit, klist                              -> krb5-user
# The packages' own services are not used: the test kit runs its own KDC, with its own realm
# and database in a temporary directory, on a free port of 127.0.0.1.
# Idempotent: when everything is present it only says so and exits.
set -euo pipefail

PACKAGES=(libkrb5-dev libclang-dev pkgconf krb5-kdc krb5-admin-server krb5-user)

check() {
    missing=()
    local tool
    for tool in pkg-config krb5kdc kdb5_util kadmin.local kinit klist; do
        command -v "$tool" >/dev/null 2>&1 || [[ -x "/usr/sbin/$tool" ]] || missing+=("$tool")
    done
    pkg-config --exists krb5-gssapi 2>/dev/null || missing+=("krb5-gssapi.pc (libkrb5-dev)")
    # bindgen loads libclang.so at build time.
    compgen -G "/usr/lib/llvm-*/lib/libclang.so" >/dev/null ||
        compgen -G "/usr/lib/*/libclang.so" >/dev/null ||
        missing+=("libclang.so (libclang-dev)")
}

check
if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install-kerberos: the KDC tools, the GSSAPI headers and libclang are present; nothing to do."
    exit 0
fi
echo "install-kerberos: missing: ${missing[*]}"

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-kerberos: apt-get not found; install MIT Kerberos (KDC, admin tools, client" >&2
    echo "install-kerberos: tools, development headers) and libclang by hand." >&2
    exit 1
fi
# shellcheck source=scripts/apt-install.sh
source "$(dirname "$0")/apt-install.sh"
apt_install install-kerberos "${PACKAGES[@]}"

check
if [[ ${#missing[@]} -ne 0 ]]; then
    echo "install-kerberos: still missing after install: ${missing[*]}" >&2
    exit 1
fi
echo "install-kerberos: installed ${PACKAGES[*]}"
