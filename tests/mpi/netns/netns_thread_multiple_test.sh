#!/bin/bash
# tests/mpi/threads/thread_multiple_check.c under real mpirun (Open MPI) across two network namespaces, one
# ohiod in each, 2 ranks on each: each rank at MPI_THREAD_MULTIPLE runs two threads calling
# MPI_Alltoall, MPI_Ialltoall + MPI_Wait and MPI_Alltoallv at the same time on a communicator of
# its own, started in opposite orders on even and odd ranks, through the preloaded shim and
# through Open MPI's collective component, with no setting asking for it. Every rank must check
# every byte (ALL OK), each thread make all its calls, OHIO_STATS count every call served and none
# handed back, and the job end within run_two_node_job's 120 s (a deadlock fails it).
set -euo pipefail
NETNS_PROG=netns_thread_multiple_test
# shellcheck source=tests/mpi/netns/netns_two_nodes.sh
. "$TEST_SRCDIR/$TEST_WORKSPACE/tests/mpi/netns/netns_two_nodes.sh"

ITERATIONS=5
CALLS=$(( ITERATIONS * 4 ))        # per thread and function: 4 sizes per iteration
EVERY_CALL=$(( 2 * CALLS * 4 ))    # 2 threads on each of 4 ranks

for binding in shim component; do
  out="$DIR/$binding.out"
  rc=0
  run_two_node_job "$binding" "$DIR/$binding" -x OHIO_IALLTOALL_MIN_BYTES=0 \
    "$R/tests/mpi/threads/thread_multiple_check_openmpi" "$ITERATIONS" > "$out" 2>&1 || rc=$?
  [ $rc = 0 ] || { cat "$out" "$DIR"/node*.log >&2; fail "$binding: mpirun exited $rc$([ $rc != 124 ] || echo ' (timed out)')"; }
  for r in 0 1 2 3; do
    grep -q "^rank $r: ALL OK" "$out" || { cat "$out" >&2; fail "$binding: rank $r did not say ALL OK"; }
    for c in 0 1; do
      grep -q "^rank $r: comm $c: alltoalls=$CALLS ialltoalls=$CALLS alltoallvs=$CALLS$" "$out" ||
        { cat "$out" >&2; fail "$binding: rank $r's thread on comm $c did not make all its calls"; }
    done
  done
  if grep -q WRONG "$out"; then cat "$out" >&2; fail "$binding: wrong bytes"; fi
  for f in MPI_Alltoall MPI_Ialltoall MPI_Alltoallv; do
    grep -q "^ohio: $EVERY_CALL $f calls served by ohiod, 0 handed back" "$out" ||
      { cat "$out" >&2; fail "$binding: $f: not every one of $EVERY_CALL calls served"; }
  done
  echo "$binding: 2 threads x 4 ranks across two hosts, every byte right, all $EVERY_CALL MPI_Alltoall, MPI_Ialltoall and MPI_Alltoallv calls served"
done
echo PASS
