# shellcheck shell=bash
# Sourced by the tests that run MPI jobs over two "hosts" (tests/mpi/netns_mpi_test.sh,
# measure_selection_test.sh): R = the runfiles' top, fail(); DIR, a new directory under /tmp
# (munged checks every directory above its socket: not the test runner's scratch tree) holding
# netns-ssh.sh, ohiod and the nodes' sockets and logs; two namespace nodes with one ohiod each
# (deploy/lib/netns-cluster.sh, start_netns_cluster), all of it removed when the test exits.
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
start_netns_cluster 2 "$DIR"
