#!/bin/bash
# deploy/measure-selection.sh on this machine's emulated nodes: K network namespaces joined by
# veths (deploy/lib/netns-cluster.sh, as deploy/local-cluster.sh makes them), one ohiod in each,
# Open MPI reaching them through the ssh stand-in deploy/lib/netns-ssh.sh; everything removed
# afterwards. How docs/PERFORMANCE.md's "Where ohio wins" table was measured.
#
# usage: tests/bench/measure_selection_netns.sh K PPN OUT [measure-selection.sh options...]
#   e.g. tests/bench/measure_selection_netns.sh 4 2 /tmp/4x2.table --functions alltoall,ialltoall \
#          --min-bytes 1 --max-bytes 1048576 --runs 7
# As root, after: bazel build //daemon:ohiod //client:ohioctl //client:libohio_mpi_openmpi.so
#   //tests/bench:mpi_alltoall_bench_openmpi //tests/bench:mpi_ialltoall_bench_openmpi
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 3 ] || { sed -n '2,12p' "$0"; exit 2; }
K=$1 PPN=$2 OUT=$3
shift 3
NETNS_PROG=measure_selection_netns.sh
. deploy/lib/netns-cluster.sh
DIR=$(mktemp -d /tmp/measure-selection-netns.XXXXXX)
DAEMON_PIDS=()
trap 'stop_netns_cluster || true; rm -rf "$DIR"' EXIT
netns_lock 300
cp deploy/lib/netns-ssh.sh bazel-bin/daemon/ohiod "$DIR/"
start_netns_cluster "$K" "$DIR"
mkdir "$DIR/bin"
cp bazel-bin/tests/bench/mpi_alltoall_bench_openmpi bazel-bin/tests/bench/mpi_ialltoall_bench_openmpi \
   bazel-bin/client/libohio_mpi_openmpi.so bazel-bin/client/ohioctl "$DIR/bin/"
for ((i = 0; i < K; i++)); do node_ip "$i"; done > "$DIR/hosts"
# The launcher agent gives each host's ranks its node's daemon (OHIO_NETNS_SOCKET_DIR); the
# transport comes from node 0's daemon (OHIO_ADMIN_SOCKET).
OHIO_NETNS_SOCKET_DIR=$DIR OHIO_ADMIN_SOCKET=$DIR/node0.admin.sock \
  bash deploy/measure-selection.sh --hostfile "$DIR/hosts" --ppn "$PPN" \
    --launcher-agent "$DIR/netns-ssh.sh" --bin-dir "$DIR/bin" --work-dir "$DIR/work" --out "$OUT" \
    --mpirun-args "--mca pml ob1 --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24 --mca btl tcp,vader,self --mca mpi_yield_when_idle 1" \
    "$@"
