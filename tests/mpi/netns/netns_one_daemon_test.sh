#!/bin/bash
# A job across two network namespaces where only node 0 runs ohiod (node 1's stopped with
# SIGTERM before the job, its socket gone), and a job where neither does: through Open MPI's
# component coll/ohio and through the preloaded shim, every rank says ALL OK (no rank waits in a
# set-up the others skipped). With one daemon, every communicator's calls are handed back on every rank
# (OHIO_STATS: none served, the reason named); with none, the component gives no communicator a
# module (the modex told every rank that no node has an ohiod) and says so, while the shim
# hands back each communicator's calls.
set -euo pipefail
NETNS_PROG=netns_one_daemon_test
# shellcheck source=tests/mpi/netns/netns_two_nodes.sh
. "$TEST_SRCDIR/$TEST_WORKSPACE/tests/mpi/netns/netns_two_nodes.sh"

# check NAME BINDING: the alltoall check on 2 x 2 ranks; every rank ALL OK, none WRONG.
check() {
  local out="$DIR/$1.out" rc=0
  run_two_node_job "$2" "$DIR/$1" "$R/tests/mpi/alltoall_check_openmpi" 4096 2 > "$out" 2>&1 || rc=$?
  [ $rc = 0 ] || { cat "$out" "$DIR"/node*.log >&2; fail "$1: mpirun exited $rc"; }
  for r in 0 1 2 3; do
    grep -q "^rank $r: ALL OK" "$out" || { cat "$out" >&2; fail "$1: rank $r did not say ALL OK"; }
  done
  if grep -q WRONG "$out"; then cat "$out" >&2; fail "$1: wrong bytes"; fi
}

# served NAME: "S F" of MPI_Alltoall from OHIO_STATS.
served() {
  sed -nE 's/^ohio: ([0-9]+) MPI_Alltoall calls served by ohiod, ([0-9]+) handed back.*/\1 \2/p' "$DIR/$1.out" | head -1
}

# stop_daemon I: node I's ohiod stopped as systemd stops it (SIGTERM), its socket gone.
stop_daemon() {
  kill -TERM "${DAEMON_PIDS[$1]}"
  local deadline=$(( SECONDS + 30 ))
  while [ -e "$DIR/node$1.sock" ]; do
    [ $SECONDS -lt $deadline ] || fail "node $1's ohiod did not remove its socket within 30 s"
    sleep 0.1
  done
}

stop_daemon 1

for binding in component shim; do
  check "one-$binding" "$binding"
  read -r s f <<< "$(served "one-$binding")"
  [ "${s:-x}" = 0 ] && [ "${f:-0}" -gt 0 ] || { cat "$DIR/one-$binding.out" >&2; fail "one-$binding: served ${s:-?}, handed back ${f:-?}"; }
  grep -q "another rank of the communicator cannot use ohio\|cannot connect\|no ohiod" "$DIR/one-$binding.out" ||
    { cat "$DIR/one-$binding.out" >&2; fail "one-$binding: no reason given for falling through"; }
  ! grep -q "no node of this job has an ohiod" "$DIR/one-$binding.out" ||
    { cat "$DIR/one-$binding.out" >&2; fail "one-$binding: stood aside although node 0 has an ohiod"; }
  echo "one-$binding: every rank ALL OK, none served, $f handed back"
done

stop_daemon 0

check none-component component
grep -q "^ohio: no node of this job has an ohiod: coll/ohio left every communicator to the other collective components" \
  "$DIR/none-component.out" || { cat "$DIR/none-component.out" >&2; fail "none-component: coll/ohio did not stand aside"; }
[ -z "$(served none-component)" ] || { cat "$DIR/none-component.out" >&2; fail "none-component: a module counted calls"; }
echo "none-component: every rank ALL OK, coll/ohio stood aside"
check none-shim shim
read -r s f <<< "$(served none-shim)"
[ "${s:-x}" = 0 ] && [ "${f:-0}" -gt 0 ] || { cat "$DIR/none-shim.out" >&2; fail "none-shim: served ${s:-?}, handed back ${f:-?}"; }
echo "none-shim: every rank ALL OK, $f handed back"
