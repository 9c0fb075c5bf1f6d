#!/bin/sh
# Runs a program in a container of its own, as Apptainer (--pid) and podman-hpc run what a
# launcher starts: its own PID namespace (with /proc mounted for it) and mount namespace, a
# private /dev/shm and /run, and the ohiod socket of the node (chosen as tests/mpi/on_node.sh
# chooses it: rank 0's outside an MPI job) bind-mounted at libohio's default path,
# /run/ohio/ohiod.sock. Run by mpirun before each rank, every rank gets a container; run before
# mpirun, the whole job shares one. /tmp stays the host's, as Apptainer leaves it (Open MPI's
# launcher meets its ranks through sockets there), unless the first argument is --private-tmp.
private_tmp=
if [ "$1" = --private-tmp ]; then
  private_tmp=1
  shift
fi
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
node=$((rank / OHIO_TEST_PPN))
socket=$(echo "$OHIO_TEST_SOCKETS" | cut -d: -f$((node + 1)))
exec unshare --pid --mount --fork --mount-proc --kill-child /bin/sh -c '
set -e
socket=$1
private_tmp=$2
shift 2
mount -t tmpfs -o mode=0755 ohio-container-run /run
mkdir -p /run/ohio
: > /run/ohio/ohiod.sock
mount --bind "$socket" /run/ohio/ohiod.sock
mount -t tmpfs -o mode=1777 ohio-container-shm /dev/shm
if [ -n "$private_tmp" ]; then mount -t tmpfs -o mode=1777 ohio-container-tmp /tmp; fi
unset OHIO_SOCKET
exec "$@"' in-container "$socket" "$private_tmp" "$@"
