# shellcheck shell=bash
# Sourced by the tests that run MPI jobs over two "hosts" (tests/mpi/netns/netns_mpi_test.sh,
# measure_selection_test.sh): R = the runfiles' top, fail(); DIR, a new directory under /tmp
# (munged checks every directory above its socket: not the test runner's scratch tree) holding
# netns-ssh.sh, ohiod and the nodes' sockets and logs; two namespace nodes with one ohiod each
# (deploy/lib/netns-cluster.sh, start_netns_cluster), all of it removed when the test exits;
# DIR/hostfile (2 slots on each node) and run_two_node_job, which runs an Open MPI job on them.
# Set NETNS_PROG (the prefix of messages and of DIR's name) first.
R="$TEST_SRCDIR/$TEST_WORKSPACE"
# shellcheck source=deploy/lib/netns-cluster.sh
. "$R/deploy/lib/netns-cluster.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

DIR=$(mktemp -d "/tmp/$NETNS_PROG.XXXXXX")
DAEMON_PIDS=()
remove_two_nodes() {
  stop_netns_cluster || true
  rm -rf "$DIR"
}
trap remove_two_nodes EXIT

# deploy/local-cluster.sh, deploy/mpi-compare.sh and the other such test use the same names:
# wait for a run of theirs to end.
netns_lock 300
# start_ohiod runs DIR/ohiod; the launchers reach the hosts through DIR/netns-ssh.sh.
cp "$R/deploy/lib/netns-ssh.sh" "$R/daemon/ohiod" "$DIR/"
# NETNS_OHIOD_FLAGS (an array), if set, goes to both daemons.
start_netns_cluster 2 "$DIR" ${NETNS_OHIOD_FLAGS[@]+"${NETNS_OHIOD_FLAGS[@]}"}
echo "$(node_ip 0) slots=2" > "$DIR/hostfile"
echo "$(node_ip 1) slots=2" >> "$DIR/hostfile"

# run_two_node_job BINDING WORKDIR ARG...: Open MPI's mpirun of 4 ranks, 2 on each node (ranks 0
# and 1 on node 0), started in WORKDIR (made if need be), at most 120 s; every rank gets
# OHIO_STATS=1 and OHIO_SELECTION=always (these jobs test how ohio serves calls across hosts, not
# which calls the selection table gives it), then ARG... (mpirun options, the program and its
# arguments). The ranks reach ohio through the preloaded shim (BINDING shim) or through Open
# MPI's collective component coll/ohio (BINDING component), nothing preloaded.
run_two_node_job() {
  local binding=(-x "LD_PRELOAD=$R/client/libohio_mpi_openmpi.so")
  [ "$1" = shim ] ||
    binding=(--mca mca_base_component_path "$R/client/openmpi_coll/component:$(ompi_info --path pkglibdir | sed -n 's/^ *Pkglibdir: *//p')")
  mkdir -p "$2"
  local workdir=$2
  shift 2
  (cd "$workdir" && timeout --kill-after=5 120 env -u OHIO_SOCKET -u LD_PRELOAD OHIO_NETNS_SOCKET_DIR="$DIR" \
    mpirun.openmpi --allow-run-as-root -np 4 --mca pml ob1 --hostfile "$DIR/hostfile" \
    --mca plm_rsh_agent "$DIR/netns-ssh.sh" --mca oob_tcp_if_include 10.77.0.0/24 \
    --mca btl_tcp_if_include 10.77.0.0/24 --mca btl tcp,vader,self --mca mpi_yield_when_idle 1 \
    "${binding[@]}" -x OHIO_STATS=1 -x OHIO_SELECTION=always "$@")
}
