#!/usr/bin/env bash
# Installs Apache Curator (recipes, framework, client) for the lock interop test
# (crates/zk-recipes/tests/curator/): Debian package libcurator-recipes-java, jars in
# /usr/share/java. Idempotent: when the jars are present it only says so and exits.
set -euo pipefail

JAR_DIR=/usr/share/java
PACKAGES=(libcurator-recipes-java)

missing=()
for jar in curator-recipes.jar curator-framework.jar curator-client.jar; do
    [[ -f "$JAR_DIR/$jar" ]] || missing+=("$JAR_DIR/$jar")
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install-curator: the Curator jars are present; nothing to do."
    exit 0
fi
echo "install-curator: missing: ${missing[*]}"

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-curator: apt-get not found; install Apache Curator 5 by hand and point" >&2
    echo "install-curator: CURATOR_CLASSPATH at its jars." >&2
    exit 1
fi

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo)
    else
        echo "install-curator: not root and sudo is not available; run as root:" >&2
        echo "  apt-get install -y ${PACKAGES[*]}" >&2
        exit 1
    fi
fi

APT_OPTS=(-o DPkg::Lock::Timeout=300)
install() {
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get "${APT_OPTS[@]}" install -y -q --no-install-recommends "${PACKAGES[@]}"
}
# Try with the current package lists first; refresh them only if that fails.
if ! install; then
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTS[@]}" update -q
    install
fi
for jar in curator-recipes.jar curator-framework.jar curator-client.jar; do
    if [[ ! -f "$JAR_DIR/$jar" ]]; then
        echo "install-curator: still missing after install: $JAR_DIR/$jar" >&2
        exit 1
    fi
done
echo "install-curator: installed ${PACKAGES[*]}"
