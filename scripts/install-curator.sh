#!/usr/bin/env bash
# Installs Apache Curator (recipes, framework, client, service discovery) for the interop tests
# (crates/zk-recipes/tests/curator/, crates/zk-discovery/tests/curator/): Debian packages
# libcurator-recipes-java and libcurator-discovery-java (which brings Jackson), jars in
# /usr/share/java. Idempotent: when the jars are present it only says so and exits.
set -euo pipefail

JAR_DIR=/usr/share/java
PACKAGES=(libcurator-recipes-java libcurator-discovery-java)
JARS=(curator-recipes.jar curator-framework.jar curator-client.jar curator-x-discovery.jar
    jackson-databind.jar jackson-core.jar jackson-annotations.jar)

missing=()
for jar in "${JARS[@]}"; do
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
for jar in "${JARS[@]}"; do
    if [[ ! -f "$JAR_DIR/$jar" ]]; then
        echo "install-curator: still missing after install: $JAR_DIR/$jar" >&2
        exit 1
    fi
done
echo "install-curator: installed ${PACKAGES[*]}"
