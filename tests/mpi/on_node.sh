#!/bin/sh
# Starts one MPI rank with OHIO_SOCKET set to the daemon of its emulated node: rank r lives on
# node r / OHIO_TEST_PPN, and OHIO_TEST_SOCKETS lists the nodes' sockets, colon-separated.
# The rank comes from Open MPI's or MPICH's launcher environment.
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
node=$((rank / OHIO_TEST_PPN))
socket=$(echo "$OHIO_TEST_SOCKETS" | cut -d: -f$((node + 1)))
OHIO_SOCKET=$socket exec "$@"
