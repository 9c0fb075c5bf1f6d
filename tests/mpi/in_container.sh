#!/bin/sh
# Starts one MPI rank in a container of its own, as a launcher that runs every rank through
# Apptainer (--pid) or podman-hpc does: its own PID namespace (with /proc mounted for it) and
# mount namespace, a private /dev/shm and /run, and its node's ohiod socket (chosen as
# tests/mpi/on_node.sh chooses it) bind-mounted at libohio's default path, /run/ohio/ohiod.sock.
# /tmp stays the host's, as Apptainer leaves it: Open MPI's launcher meets its ranks through
# sockets there.
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
node=$((rank / OHIO_TEST_PPN))
socket=$(echo "$OHIO_TEST_SOCKETS" | cut -d: -f$((node + 1)))
exec unshare --pid --mount --fork --mount-proc --kill-child /bin/sh -c '
set -e
socket=$1
shift
mount -t tmpfs -o mode=0755 ohio-container-run /run
mkdir -p /run/ohio
: > /run/ohio/ohiod.sock
mount --bind "$socket" /run/ohio/ohiod.sock
mount -t tmpfs -o mode=1777 ohio-container-shm /dev/shm
unset OHIO_SOCKET
exec "$@"' in-container "$socket" "$@"
