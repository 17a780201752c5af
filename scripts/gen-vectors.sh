#!/usr/bin/env bash
# Regenerates crates/jute/tests/conformance/vectors.txt, the jute conformance vectors, from the
# ZooKeeper 3.8 reference serializer: compiles crates/jute/tests/conformance/java/GenerateVectors.java
# into crates/jute/tests/conformance/java/build/ (gitignored) and runs it.
#
# Usage: scripts/gen-vectors.sh           regenerate the file
#        scripts/gen-vectors.sh --check   regenerate into a temporary file and fail if it differs
#
# The output is deterministic; nobody edits vectors.txt by hand. Runs scripts/install-deps.sh
# first when javac or the ZooKeeper jars are missing. ZK_CLASSPATH, when set, replaces the jars
# of /usr/share/java (e.g. ZK_CLASSPATH='/opt/zookeeper/lib/*').
set -euo pipefail
cd "$(dirname "$0")/.."

JAR_DIR=/usr/share/java
CONFORMANCE=crates/jute/tests/conformance
SRC="$CONFORMANCE/java/GenerateVectors.java"
BUILD="$CONFORMANCE/java/build"
VECTORS="$CONFORMANCE/vectors.txt"

check=false
case "${1:-}" in
    "") ;;
    --check) check=true ;;
    *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

if [[ -n "${ZK_CLASSPATH:-}" ]]; then
    classpath="$ZK_CLASSPATH"
    need_deps=false
    command -v javac >/dev/null 2>&1 || need_deps=true
else
    # zookeeper-jute.jar holds the records and BinaryOutputArchive; zookeeper.jar holds Op,
    # OpResult, MultiOperationRecord and MultiResponse (its manifest pulls in slf4j-api).
    classpath="$JAR_DIR/zookeeper-jute.jar:$JAR_DIR/zookeeper.jar"
    need_deps=false
    command -v javac >/dev/null 2>&1 || need_deps=true
    command -v java >/dev/null 2>&1 || need_deps=true
    [[ -f "$JAR_DIR/zookeeper-jute.jar" && -f "$JAR_DIR/zookeeper.jar" ]] || need_deps=true
fi
if $need_deps; then
    scripts/install-deps.sh
fi

rm -rf "$BUILD"
mkdir -p "$BUILD"
# -Xlint:-path: the manifest of the Debian zookeeper.jar names jars that are not installed.
# -implicit:none: a jar that manifest names ships .java sources; do not compile them into $BUILD.
javac -encoding UTF-8 -Xlint:all,-path -Werror -implicit:none -cp "$classpath" -d "$BUILD" "$SRC"

tmp="$(mktemp "$BUILD/vectors.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
log="$BUILD/generate.stderr"
if ! java -cp "$BUILD:$classpath" GenerateVectors >"$tmp" 2>"$log"; then
    cat "$log" >&2
    echo "gen-vectors: the generator failed" >&2
    exit 1
fi
# slf4j-api complains once that it has no binding; anything else is worth seeing.
grep -v '^SLF4J:' "$log" >&2 || true

if $check; then
    if ! cmp -s "$tmp" "$VECTORS"; then
        echo "gen-vectors: $VECTORS is out of date; run scripts/gen-vectors.sh" >&2
        exit 1
    fi
    echo "gen-vectors: $VECTORS is up to date"
    exit 0
fi
mv "$tmp" "$VECTORS"
echo "gen-vectors: wrote $VECTORS ($(grep -vc '^#' "$VECTORS") vectors, $(wc -c <"$VECTORS") bytes)"
