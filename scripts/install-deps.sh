#!/usr/bin/env bash
# Installs what the integration tests and the conformance generator need on Debian:
#   - a Java runtime (`java`)                      -> default-jre-headless
#   - a Java compiler (`javac`)                    -> default-jdk-headless
#   - Apache ZooKeeper 3.8 jars in /usr/share/java -> zookeeper (zookeeper.jar, zookeeper-jute.jar, ...;
#     its dependency libnetty-java brings netty-codec.jar, which the TLS test servers need)
#   - a C compiler (`cc`)                          -> gcc (ring, the crypto of rustls, builds C)
# Idempotent: when everything is present it only says so and exits.
# When ZK_CLASSPATH is set, the ZooKeeper jars are taken from there and are not checked or installed.
set -euo pipefail

JAR_DIR=/usr/share/java
PACKAGES=(default-jre-headless default-jdk-headless zookeeper gcc)

missing=()
command -v cc >/dev/null 2>&1 || missing+=("cc")
command -v java >/dev/null 2>&1 || missing+=("java")
command -v javac >/dev/null 2>&1 || missing+=("javac")
if [[ -z "${ZK_CLASSPATH:-}" ]]; then
    for jar in zookeeper.jar zookeeper-jute.jar; do
        [[ -f "$JAR_DIR/$jar" ]] || missing+=("$JAR_DIR/$jar")
    done
fi

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install-deps: cc, java, javac and the ZooKeeper jars are present; nothing to do."
    exit 0
fi

echo "install-deps: missing: ${missing[*]}"

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: apt-get not found; install a JDK 17 and Apache ZooKeeper 3.8 by hand," >&2
    echo "install-deps: then point ZK_CLASSPATH at the ZooKeeper jars (e.g. '/opt/zookeeper/lib/*')." >&2
    exit 1
fi

# shellcheck source=scripts/apt-install.sh
source "$(dirname "$0")/apt-install.sh"
apt_update install-deps
apt_install install-deps "${PACKAGES[@]}"

still_missing=()
command -v cc >/dev/null 2>&1 || still_missing+=("cc")
command -v java >/dev/null 2>&1 || still_missing+=("java")
command -v javac >/dev/null 2>&1 || still_missing+=("javac")
if [[ -z "${ZK_CLASSPATH:-}" ]]; then
    for jar in zookeeper.jar zookeeper-jute.jar; do
        [[ -f "$JAR_DIR/$jar" ]] || still_missing+=("$JAR_DIR/$jar")
    done
fi
if [[ ${#still_missing[@]} -ne 0 ]]; then
    echo "install-deps: still missing after install: ${still_missing[*]}" >&2
    exit 1
fi
echo "install-deps: installed ${PACKAGES[*]}; java: $(command -v java), javac: $(command -v javac)"
