#!/bin/bash
# Unmodified MPI programs under real mpirun across network namespaces: two "hosts" (namespaces
# joined by veths and a bridge, deploy/lib/netns-cluster.sh), one ohiod in each, authenticating
# each other through a munged started here, and Open MPI launching 2 ranks on each through the
# ssh stand-in (deploy/lib/netns-ssh.sh), with libohio_mpi preloaded. The check programs verify
# every byte they receive (MPI_Alltoall of every size up to 64 KiB, with derived and in-place
# types, MPI_Alltoallv with random counts, MPI_Alltoallw with mixed types per pair); OHIO_STATS
# must show ohio served them, both daemons must have held the group, and the bytes between the
# nodes must have crossed the veths. MPI_Ialltoall moved by the daemons while every rank sleeps
# is complete, every byte in place, before any rank calls MPI again. Then HPC Challenge and Quantum ESPRESSO, unmodified, the same way
# (Quantum ESPRESSO through the shim and through Open MPI's collective component), and the Fortran
# check in every binding through both.
#
# MPICH is run across nodes by the other MPI tests (several daemons on one host): across
# namespaces, MPICH 4.0.2 over UCX's tcp transport can hang in MPI_Finalize with or without ohio
# (deploy/mpi-compare.sh says so when it happens), which would make this test flaky for a reason
# that is not ohio's.
set -euo pipefail
NETNS_PROG=netns_mpi_test
# shellcheck source=tests/mpi/netns/netns_two_nodes.sh
. "$TEST_SRCDIR/$TEST_WORKSPACE/tests/mpi/netns/netns_two_nodes.sh"
# Every node knows the others' addresses for good: the namespaces share the kernel's one ARP
# table, which 32 nodes overflowed (deploy/lib/netns-cluster.sh, static_neighbours).
for i in 0 1; do
  j=$((1 - i))
  ip -n "$(ns_name $i)" neigh show "$(node_ip $j)" dev veth0 | grep -q "lladdr $(node_mac $j) PERMANENT" ||
    fail "node $i has no permanent neighbour entry for node $j: $(ip -n "$(ns_name $i)" neigh show dev veth0)"
  ip neigh show "$(node_ip $i)" dev "$BRIDGE" | grep -q "lladdr $(node_mac $i) PERMANENT" ||
    fail "the bridge has no permanent neighbour entry for node $i"
done

veth_sent() { cat "/sys/class/net/$(veth_name "$1")/statistics/rx_bytes"; }

# run_job NAME PROGRAM ARGS...: PROGRAM on 2 x 2 ranks (run_two_node_job), started in
# $DIR/NAME; its output in $DIR/NAME.out, the bytes that crossed the veths meanwhile in
# VETH_BYTES. JOB_ENV (KEY=VALUE), if set, goes to every rank. The ranks reach ohio through the
# preloaded shim, or, with JOB_BINDING=component, through Open MPI's collective component
# coll/ohio.
run_job() {
  local name=$1 program=$2
  shift 2
  local before=$(( $(veth_sent 0) + $(veth_sent 1) ))
  local rc=0
  local job_env=()
  [ -z "${JOB_ENV:-}" ] || job_env=(-x "$JOB_ENV")
  run_two_node_job "${JOB_BINDING:-shim}" "$DIR/$name" "${job_env[@]}" "$program" "$@" > "$DIR/$name.out" 2>&1 || rc=$?
  if [ $rc != 0 ]; then
    cat "$DIR/$name.out" "$DIR"/node*.log >&2
    fail "$name: mpirun exited $rc$([ $rc != 124 ] || echo ' (timed out after 120 s)')"
  fi
  VETH_BYTES=$(( $(veth_sent 0) + $(veth_sent 1) - before ))
}

# run_check NAME CHECK ARGS...: the check program tests/mpi/CHECK_openmpi; every rank must say
# ALL OK and none WRONG.
run_check() {
  local name=$1 check=$2
  shift 2
  run_job "$name" "$R/tests/mpi/${check}_openmpi" "$@"
  for r in 0 1 2 3; do
    grep -q "^rank $r: ALL OK" "$DIR/$name.out" || { cat "$DIR/$name.out" >&2; fail "$name: rank $r did not say ALL OK"; }
  done
  if grep -q WRONG "$DIR/$name.out"; then cat "$DIR/$name.out" >&2; fail "$name: wrong bytes"; fi
  echo "$name: every rank ALL OK, $VETH_BYTES bytes crossed the veths"
}

# served NAME FUNCTION: "S F" from OHIO_STATS.
served() {
  sed -nE "s/^ohio: ([0-9]+) $2 calls served by ohiod, ([0-9]+) handed back.*/\1 \2/p" "$DIR/$1.out" | head -1
}

run_check alltoall alltoall_check 65536 3
read -r s f <<< "$(served alltoall MPI_Alltoall)"
[ "${s:-0}" -gt 100 ] || fail "alltoall: only ${s:-no} MPI_Alltoall calls served"
# Only the call with a pair type on rank 0 is handed back, once per rank.
[ "$f" = 4 ] || fail "alltoall: $f MPI_Alltoall calls handed back, expected 4"
[ "$(served alltoall MPI_Alltoallv)" = "88 0" ] ||
  fail "alltoall: MPI_Alltoallv served/handed back $(served alltoall MPI_Alltoallv), expected 88 0"
# 64 KiB from each of 2 ranks to each of the other node's 2 ranks, 3 times, each way, at least.
[ "$VETH_BYTES" -gt $(( 3 * 2 * 4 * 65536 )) ] || fail "alltoall: only $VETH_BYTES bytes crossed the veths"

run_check alltoallw alltoallw_check 4
# 3 typed calls per iteration, served; the darray call is handed back on every rank.
[ "$(served alltoallw MPI_Alltoallw)" = "48 4" ] ||
  fail "alltoallw: MPI_Alltoallw served/handed back $(served alltoallw MPI_Alltoallw), expected 48 4"

# MPI_Ialltoall moved by the daemons while every rank sleeps, calling no MPI function
# (tests/mpi/ialltoall_overlap_check.c: 300 ms sleeps, rank r posting r x 100 ms after rank 0):
# before any rank calls MPI again its receive buffer is full and right, byte for byte, across the
# two hosts, and its first MPI_Test completes the call.
run_check overlap ialltoall_overlap_check 300 20000 100 32768 4097
for r in 0 1 2 3; do
  for call in 0 1; do
    grep -qE "^rank $r: call $call: bytes_per_rank=[0-9]+ filled_before_any_mpi_call=([1-9][0-9]*)/\1 sleeps=[0-9]+ first_test_flag=1 verified_after=([1-9][0-9]*)/\2$" "$DIR/overlap.out" ||
      { cat "$DIR/overlap.out" >&2; fail "overlap: rank $r call $call was not complete while it slept"; }
  done
done
[ "$(served overlap MPI_Ialltoall)" = "8 0" ] ||
  fail "overlap: MPI_Ialltoall served/handed back $(served overlap MPI_Ialltoall), expected 8 0"
echo "overlap: every rank's MPI_Ialltoall complete, every byte in place, while it slept"

# HPC Challenge, unmodified (tests/mpi/hpccinf.txt: a 2x2 grid): its own checks pass and every
# MPI_Alltoall it makes (MPIFFT's transposes) is served, none is handed back.
# It reads hpccinf.txt and writes hpccoutf.txt where it starts.
mkdir "$DIR/hpcc" && cp "$R/tests/mpi/hpccinf.txt" "$DIR/hpcc/"
run_job hpcc /usr/bin/hpcc
grep -q "^Success=1" "$DIR/hpcc/hpccoutf.txt" || { cat "$DIR/hpcc.out" >&2; fail "hpcc: its checks did not succeed"; }
grep -q "FAILED" "$DIR/hpcc/hpccoutf.txt" && fail "hpcc: $(grep FAILED "$DIR/hpcc/hpccoutf.txt" | head -3)"
read -r s f <<< "$(served hpcc MPI_Alltoall)"
[ "${s:-0}" -gt 0 ] && [ "$f" = 0 ] || { cat "$DIR/hpcc.out" >&2; fail "hpcc: MPI_Alltoall served/handed back ${s:-?} ${f:-?}"; }
echo "hpcc: Success=1, no check failed, $s MPI_Alltoall calls served by ohio, none handed back"

# Quantum ESPRESSO's pw.x, unmodified Fortran (tests/mpi/qe/si.scf.in): its FFT transposes are
# MPI_ALLTOALL calls. The same total energy, to the last printed digit, as the run without ohio
# (the shim there, counting, but OHIO_DISABLE=1), and as many calls served as that run made.
mkdir -p "$DIR/qe-without" && cp "$R/tests/mpi/qe/si.scf.in" "$R/tests/mpi/qe/Si.pz-vbc.UPF" "$DIR/qe-without/"
JOB_ENV=OHIO_DISABLE=1 run_job qe-without /usr/bin/pw.x -in si.scf.in
energy() { grep -E "^!    total energy" "$DIR/$1.out"; }
[ -n "$(energy qe-without)" ] || { cat "$DIR/qe-without.out" >&2; fail "qe: pw.x printed no converged total energy"; }
read -r _ made <<< "$(served qe-without MPI_Alltoall)"
for binding in shim component; do
  run="qe-$binding"
  mkdir -p "$DIR/$run" && cp "$R/tests/mpi/qe/si.scf.in" "$R/tests/mpi/qe/Si.pz-vbc.UPF" "$DIR/$run/"
  JOB_BINDING=$binding run_job "$run" /usr/bin/pw.x -in si.scf.in
  [ "$(energy "$run")" = "$(energy qe-without)" ] ||
    fail "$run: total energy '$(energy "$run")' through ohio, '$(energy qe-without)' without"
  read -r s f <<< "$(served "$run" MPI_Alltoall)"
  [ "${made:-0}" -gt 100 ] && [ "$s" = "$made" ] && [ "$f" = 0 ] ||
    { cat "$DIR/$run.out" >&2; fail "$run: MPI_Alltoall served/handed back ${s:-?} ${f:-?}, the run without ohio made ${made:-?}"; }
  echo "$run: $(energy "$run" | tr -s ' '), as without ohio; all $s MPI_Alltoall calls served"
done

# The Fortran check (tests/mpi/fortran_check.F90) in each of its bindings, through the shim and
# through the component: every element right, every call of the Alltoall family served.
for binding in shim component; do
  for fortran in mpif_h use_mpi use_mpi_f08; do
    name="fortran-$fortran-$binding"
    JOB_BINDING=$binding JOB_ENV=OHIO_IALLTOALL_MIN_BYTES=0 run_check "$name" "fortran_check_$fortran" 2
    for function in MPI_Alltoall:16 MPI_Alltoallv:8 MPI_Alltoallw:8 MPI_Ialltoall:16 MPI_Ialltoallv:8; do
      [ "$(served "$name" "${function%%:*}")" = "${function##*:} 0" ] ||
        fail "$name: ${function%%:*} served/handed back $(served "$name" "${function%%:*}"), expected ${function##*:} 0"
    done
  done
done

for i in 0 1; do
  grep -q "created for 4 ranks, 2 on this node" "$DIR/node$i.log" || { cat "$DIR/node$i.log" >&2; fail "node$i held no group"; }
done
echo "PASS"
