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
# shellcheck source=scripts/apt-install.sh
source "$(dirname "$0")/apt-install.sh"
apt_install install-curator "${PACKAGES[@]}"
for jar in curator-recipes.jar curator-framework.jar curator-client.jar; do
    if [[ ! -f "$JAR_DIR/$jar" ]]; then
        echo "install-curator: still missing after install: $JAR_DIR/$jar" >&2
        exit 1
    fi
done
echo "install-curator: installed ${PACKAGES[*]}"
