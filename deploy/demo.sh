#!/bin/bash
# The main job on an embedded default: installs what ohio needs, builds it, starts an ohiod
# on a private socket and runs the alltoall benchmark through it with RANKS rank processes
# (default 4), then stops the daemon. Prints latency per size next to a memcpy baseline
# measured in the same run.
#
# usage: deploy/demo.sh [--ranks N] [--max-bytes BYTES] [--algorithm v1|v2|v3] [--iterations N]
set -euo pipefail
cd "$(dirname "$0")/.."

RANKS=4
BENCH_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) RANKS=$2; shift 2 ;;
    --max-bytes|--algorithm|--iterations) BENCH_ARGS+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

bash deploy/install-deps.sh
bazel build --curses=no //daemon:ohiod //tests/bench:alltoall_bench

DIR=$(mktemp -d /tmp/ohio-demo.XXXXXX)
DAEMON_PID=
cleanup() {
  if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -TERM "$DAEMON_PID"
    wait "$DAEMON_PID" || true
  fi
  rm -rf "$DIR"
}
trap cleanup EXIT

# One node: no peers to authenticate, so no munged is needed.
bazel-bin/daemon/ohiod --socket "$DIR/ohiod.sock" --node-name demo-node0 --auth none 2> "$DIR/ohiod.log" &
DAEMON_PID=$!
for _ in $(seq 200); do
  [ -S "$DIR/ohiod.sock" ] && break
  kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$DIR/ohiod.log"; exit 1; }
  sleep 0.05
done
[ -S "$DIR/ohiod.sock" ] || { echo "ohiod did not start:"; cat "$DIR/ohiod.log"; exit 1; }
echo "ohiod running (pid $DAEMON_PID, socket $DIR/ohiod.sock); $RANKS ranks:"
bazel-bin/tests/bench/alltoall_bench --socket "$DIR/ohiod.sock" --ranks "$RANKS" "${BENCH_ARGS[@]}"
echo
echo "ohiod log:"
cat "$DIR/ohiod.log"
