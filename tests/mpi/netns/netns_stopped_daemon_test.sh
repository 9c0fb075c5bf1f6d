#!/bin/bash
# MPI_Ialltoall + MPI_Wait (tests/mpi/daemon/stopped_daemon_check.c) under real mpirun (Open MPI) across
# two network namespaces, one ohiod in each with a group timeout of 3 s, node 1's ohiod stopped
# (SIGSTOP) while the ranks hold between their first call and the MPI_Ialltoall: through the shim
# and through Open MPI's component, every rank's MPI_Wait returns an error within the timeout
# plus 1 s (where it used to wait for as long as the daemon stayed stopped); node 1's ranks name
# their stopped daemon, node 0's are told by theirs that the group failed.
set -euo pipefail
NETNS_PROG=netns_stopped_daemon_test
TIMEOUT_MS=3000
NETNS_OHIOD_FLAGS=(--timeout-ms "$TIMEOUT_MS")
# shellcheck source=tests/mpi/netns/netns_two_nodes.sh
. "$TEST_SRCDIR/$TEST_WORKSPACE/tests/mpi/netns/netns_two_nodes.sh"
STOPPED=${DAEMON_PIDS[1]}
trap 'kill -CONT "$STOPPED" 2>/dev/null || true; remove_two_nodes' EXIT

for binding in shim component; do
  go="$DIR/go-$binding" out="$DIR/$binding.out"
  : > "$out"
  run_two_node_job "$binding" "$DIR/$binding" -x "CHECK_GO_FILE=$go" -x OHIO_IALLTOALL_MIN_BYTES=0 \
    "$R/tests/mpi/daemon/stopped_daemon_check_openmpi" 4096 > "$out" 2>&1 &
  job=$!
  deadline=$(( SECONDS + 60 ))
  until [ "$(grep -c ': holding$' "$out")" = 4 ]; do
    [ $SECONDS -lt $deadline ] || { cat "$out" >&2; fail "$binding: the ranks did not all reach the hold"; }
    sleep 0.1
  done
  kill -STOP "$STOPPED"
  touch "$go"
  rc=0
  wait "$job" || rc=$?
  kill -CONT "$STOPPED"
  [ $rc = 0 ] || { cat "$out" "$DIR"/node*.log >&2; fail "$binding: mpirun exited $rc"; }
  # A group the ranks find closed before the call (their check sees it failed) hands the call to
  # Open MPI on every rank alike, which then completes it: that is a right outcome too, as long
  # as every rank has it. A split, or a wait past the deadline, is not.
  succeeded=$(grep -c "^rank [0-3]: ialltoall rc=0 wait rc=0 " "$out" || true)
  if [ "$succeeded" = 4 ]; then
    # Only as a hand-back every rank counted (OHIO_STATS, summed over the ranks).
    grep -q "^ohio: 0 MPI_Ialltoall calls served by ohiod, 4 handed back" "$out" ||
      { cat "$out" >&2; fail "$binding: every MPI_Wait succeeded with a daemon stopped, not as a hand-back"; }
    cat "$out" >&2
    echo "$binding: every rank's call went to the library and succeeded (the group closed before it)"
    continue
  fi
  for r in 0 1 2 3; do
    line=$(grep "^rank $r: ialltoall rc=" "$out") || { cat "$out" >&2; fail "$binding: rank $r never returned from MPI_Wait"; }
    [[ $line =~ ^rank\ $r:\ ialltoall\ rc=0\ wait\ rc=([0-9]+)\ after\ ([0-9]+)\ ms ]] ||
      fail "$binding: rank $r: unexpected line: $line"
    [ "${BASH_REMATCH[1]}" != 0 ] || { cat "$out" >&2; fail "$binding: rank $r: MPI_Wait succeeded while others failed: $line"; }
    [ "${BASH_REMATCH[2]}" -le $(( TIMEOUT_MS + 1000 )) ] ||
      fail "$binding: rank $r: MPI_Wait took ${BASH_REMATCH[2]} ms, more than the timeout $TIMEOUT_MS ms + 1 s"
    echo "$binding: $line"
  done
  # Ranks 2 and 3 are node 1's (2 slots a host): their own daemon is the stopped one.
  [ "$(grep -c "ohio: MPI_Ialltoall failed: the ohio group failed (ohiod did not complete the nonblocking alltoall within $TIMEOUT_MS ms; ohiod (pid $STOPPED) is stopped" "$out")" = 2 ] ||
    { cat "$out" >&2; fail "$binding: node 1's ranks did not both name their stopped daemon"; }
  [ "$(grep -c "ohio: MPI_Ialltoall failed: the ohio group failed (.*node1" "$out")" -ge 2 ] ||
    { cat "$out" >&2; fail "$binding: node 0's ranks were not told their daemon waited for node1"; }
  echo "$binding: every rank's MPI_Wait failed within $TIMEOUT_MS ms + 1 s"
done
