#!/bin/bash
# What the kernel's send copy of a daemon's put costs here: runs tcp_send_probe
# (tests/bench/tcp_send_probe.cc) between two network namespaces joined by a veth, as the
# emulated nodes of deploy/local-cluster.sh are. Bytes the sender wrote itself, bytes another
# CPU wrote (as ranks stage the SSB that ohiod sends), MSG_ZEROCOPY sends and vmsplice+splice
# sends, interleaved on one connection: the sending thread's CPU and wall time per send (medians
# over rounds), the whole box's busy CPU per send (meaningful only with nothing else running
# and a second or more of sends per variant: it is counted in 10 ms ticks),
# how many zero-copy sends the kernel completed as copied after all, and the
# receiving thread's CPU per KiB (read(), or with --splice-receive a splice into a pipe and a
# read of the pipe). On real hosts, run the binary itself: `tcp_send_probe --listen PORT` on
# one, `--connect HOST --port PORT` on the other.
#
# usage: tests/bench/tcp_send_probe.sh [--bytes B (1048576)] [--sends N (200)] [--rounds R (5)]
#                                 [--sender-cpu C (1)] [--writer-cpu C (0)] [--splice-receive]
# As root (it makes the namespaces ohio-sp-a and ohio-sp-b, 10.78.0.1 and 10.78.0.2, and removes them).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,16p' "$0"; exit 0 ;; esac
RECEIVE_ARGS=()
SEND_ARGS=()
for arg in "$@"; do
  if [ "$arg" = --splice-receive ]; then RECEIVE_ARGS+=("$arg"); else SEND_ARGS+=("$arg"); fi
done
cd "$(dirname "$0")/../.."
bazel build --curses=no //tests/bench:tcp_send_probe
PROBE="$(bazel info --curses=no bazel-bin 2>/dev/null)/tests/bench/tcp_send_probe"
RECEIVER=
cleanup() {
  # A receiver still in accept (the sender failed before connecting) would wait forever.
  if [ -n "$RECEIVER" ]; then kill "$RECEIVER" 2>/dev/null || true; fi
  ip netns del ohio-sp-a 2>/dev/null || true
  ip netns del ohio-sp-b 2>/dev/null || true
}
trap cleanup EXIT
cleanup
ip netns add ohio-sp-a
ip netns add ohio-sp-b
ip link add ohio-sp-va type veth peer name ohio-sp-vb
ip link set ohio-sp-va netns ohio-sp-a
ip link set ohio-sp-vb netns ohio-sp-b
ip -n ohio-sp-a addr add 10.78.0.1/24 dev ohio-sp-va
ip -n ohio-sp-b addr add 10.78.0.2/24 dev ohio-sp-vb
for ns in ohio-sp-a ohio-sp-b; do ip -n "$ns" link set lo up; done
ip -n ohio-sp-a link set ohio-sp-va up
ip -n ohio-sp-b link set ohio-sp-vb up
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
ip netns exec ohio-sp-b "$PROBE" --listen 5555 "${RECEIVE_ARGS[@]}" &
RECEIVER=$!
for _ in $(seq 100); do
  [ -n "$(ip netns exec ohio-sp-b ss -ltnH 'sport = :5555')" ] && break
  sleep 0.05
done
ip netns exec ohio-sp-a "$PROBE" --connect 10.78.0.2 --port 5555 "${SEND_ARGS[@]}"
timeout 30 tail --pid="$RECEIVER" -f /dev/null
RECEIVER=
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
