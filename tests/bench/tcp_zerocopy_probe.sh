#!/bin/bash
# Would MSG_ZEROCOPY take the kernel's send copy off the daemons' puts here? Runs
# tcp_zerocopy_probe (tests/bench/tcp_zerocopy_probe.cc) between two network namespaces joined
# by a veth, as the emulated nodes of deploy/local-cluster.sh are: plain sends and MSG_ZEROCOPY
# sends interleaved on one connection, the sender's CPU and wall time per send (medians over
# rounds), and how many zero-copy sends the kernel completed as copied after all. On real hosts,
# run the binary itself: `tcp_zerocopy_probe --listen PORT` on one, `--connect HOST --port PORT`
# on the other.
#
# usage: tests/bench/tcp_zerocopy_probe.sh [--bytes B (1048576)] [--sends N (500)] [--rounds R (5)]
# As root (it makes the namespaces ohio-zc-a and ohio-zc-b, 10.78.0.1 and 10.78.0.2, and removes them).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,10p' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/../.."
bazel build --curses=no //tests/bench:tcp_zerocopy_probe
PROBE="$(bazel info --curses=no bazel-bin 2>/dev/null)/tests/bench/tcp_zerocopy_probe"
cleanup() {
  ip netns del ohio-zc-a 2>/dev/null || true
  ip netns del ohio-zc-b 2>/dev/null || true
}
trap cleanup EXIT
cleanup
ip netns add ohio-zc-a
ip netns add ohio-zc-b
ip link add ohio-zc-va type veth peer name ohio-zc-vb
ip link set ohio-zc-va netns ohio-zc-a
ip link set ohio-zc-vb netns ohio-zc-b
ip -n ohio-zc-a addr add 10.78.0.1/24 dev ohio-zc-va
ip -n ohio-zc-b addr add 10.78.0.2/24 dev ohio-zc-vb
for ns in ohio-zc-a ohio-zc-b; do ip -n "$ns" link set lo up; done
ip -n ohio-zc-a link set ohio-zc-va up
ip -n ohio-zc-b link set ohio-zc-vb up
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
ip netns exec ohio-zc-b "$PROBE" --listen 5555 > /dev/null &
RECEIVER=$!
for _ in $(seq 100); do
  [ -n "$(ip netns exec ohio-zc-b ss -ltnH 'sport = :5555')" ] && break
  sleep 0.05
done
ip netns exec ohio-zc-a "$PROBE" --connect 10.78.0.2 --port 5555 "$@"
timeout 30 tail --pid="$RECEIVER" -f /dev/null
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
