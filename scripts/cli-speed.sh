#!/usr/bin/env bash
# Wall time of one `rzk get` against a server, next to ZooKeeper's own shell (`zkCli.sh
# -server ... get`), each run RUNS times in a row (a new process every time: start, connect,
# read, close). Prints min, median and max in milliseconds. A measurement for docs/cli.md,
# not a test:
#   scripts/cli-speed.sh 127.0.0.1:2181            # 20 runs each, node /rzk-speed
#   RUNS=50 scripts/cli-speed.sh 127.0.0.1:2181
# Builds rzk in release mode first; zkCli.sh is Debian's (package zookeeper) or $ZKCLI.
set -euo pipefail
cd "$(dirname "$0")/.."

server="${1:?usage: scripts/cli-speed.sh HOST:PORT}"
runs="${RUNS:-20}"
zkcli="${ZKCLI:-/usr/share/zookeeper/bin/zkCli.sh}"
node=/rzk-speed

cargo build --release -p rzk >&2
target_dir="${CARGO_TARGET_DIR:-target}"
rzk="$target_dir/release/rzk"

"$rzk" --server "$server" create "$node" "speed" >/dev/null 2>&1 || true

# Runs "$@" $runs times, printing each wall time in ms on its own line.
times() {
    for _ in $(seq "$runs"); do
        local start end
        start=$(date +%s%N)
        "$@" >/dev/null 2>&1
        end=$(date +%s%N)
        echo $(((end - start) / 1000))
    done
}

# min / median / max of the microsecond figures on stdin, in ms.
summary() {
    sort -n | awk '{ t[NR] = $1 } END {
        printf "min %.1f ms, median %.1f ms, max %.1f ms (%d runs)\n",
            t[1] / 1000, t[int((NR + 1) / 2)] / 1000, t[NR] / 1000, NR }'
}

echo "rzk get $node:        $(times "$rzk" --server "$server" get "$node" | summary)"
if [[ -x "$zkcli" ]]; then
    echo "zkCli.sh get $node:   $(times "$zkcli" -server "$server" get "$node" | summary)"
else
    echo "zkCli.sh: not found at $zkcli (set ZKCLI)" >&2
fi
