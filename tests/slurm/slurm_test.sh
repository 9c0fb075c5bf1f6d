#!/bin/bash
# ohio under real Slurm (Debian's slurmctld, slurmd, slurmdbd on MariaDB, munge), on two
# emulated nodes (network namespaces, one ohiod and one slurmd in each: the cluster of
# deploy/slurm-cluster.sh, started through deploy/lib/slurm-cluster.sh).
#
# 1. sbatch -N 2 --ntasks-per-node=2 of the verifying tests/mpi/alltoall_check.c, submitted
#    as nobody (runuser) as a user's job would be, launched by srun through PMIx, Open MPI
#    finding ohio's collective component: each node's tasks see their node's host name and run
#    as nobody (uid 65534); every rank ALL OK, no byte WRONG; OHIO_STATS saying the component
#    served it and every MPI_Alltoall and MPI_Alltoallv went through ohiod (only the call
#    alltoall_check makes with a pair type on rank 0 is handed back, on each of the 4 ranks);
#    both daemons held the job's 4-rank group, owned by uid 65534 (the ranks' peer credentials),
#    and served collectives (their admin sockets); and sacct showing nobody's job COMPLETED 0:0.
#    ohiod, Slurm's daemons and the prolog run as root.
# 2. ohio's prolog refusing a node: node1's ohiod stopped, a job sent to node1 does not run
#    (launch failed, requeued and held, no output), and node1 is drained with ohio's reason.
set -euo pipefail
NETNS_PROG=slurm_test
R="$TEST_SRCDIR/$TEST_WORKSPACE"
# shellcheck source=deploy/lib/netns-cluster.sh
. "$R/deploy/lib/netns-cluster.sh"
# shellcheck source=deploy/lib/slurm-cluster.sh
. "$R/deploy/lib/slurm-cluster.sh"
fail() {
  echo "FAIL: $*" >&2
  for f in "$DIR"/slurmctld.log "$DIR"/slurmd.node*.log "$DIR"/node*.log; do
    [ -f "$f" ] && { echo "--- $f (end)" >&2; tail -20 "$f" >&2; }
  done
  exit 1
}

# Under /tmp, not the test's scratch tree: munged checks every directory above its socket.
DIR=$(mktemp -d /tmp/slurm_test.XXXXXX)
DAEMON_PIDS=()
remove_cluster() {
  stop_slurm_cluster || echo "slurm_test: namespaces or links were left behind" >&2
  rm -rf "$DIR"
}
trap remove_cluster EXIT
trap 'exit 143' TERM INT

# The other tests that make the ohio-node namespaces, and deploy/slurm-cluster.sh, use the same
# names: wait for a run of theirs to end.
netns_lock 300
mkdir "$DIR/coll"
cp "$R/daemon/ohiod" "$R/client/ohioctl" "$R/deploy/slurm-prolog.sh" "$DIR/"
cp "$R/tests/mpi/alltoall_check_openmpi" "$DIR/alltoall_check"
cp "$R/client/openmpi_coll/mca_coll_ohio.so" "$DIR/coll/"
start_slurm_cluster 2 "$DIR" || fail "the Slurm cluster did not come up"
write_alltoall_job "$DIR"

# wait_job JOBID SECONDS: until the job is in a final state.
wait_job() {
  slurm_wait "job $1 finished" "$2" job_finished "$1" || { scontrol show job "$1" >&2; fail "job $1 did not finish"; }
}

# --- 1. The alltoall job over 2 nodes x 2 ranks, nobody's.
job_uid=$(id -u "$JOB_USER")
job=$(sbatch_as_job_user --parsable -N 2 --ntasks-per-node=2 -o "$JOB_DIR/alltoall.out" "$DIR/alltoall-job.sh")
wait_job "$job" 180
out=$JOB_DIR/alltoall.out
scontrol show job "$job" | grep -q "UserId=$JOB_USER($job_uid)" ||
  { scontrol show job "$job" >&2; fail "job $job is not $JOB_USER's"; }
[ "$(job_state "$job")" = COMPLETED ] || { cat "$out" >&2; fail "job $job ended $(job_state "$job")"; }
for r in 0 1 2 3; do
  grep -q "^rank $r: ALL OK" "$out" || { cat "$out" >&2; fail "rank $r did not say ALL OK"; }
done
if grep -q WRONG "$out"; then cat "$out" >&2; fail "wrong bytes"; fi
grep -q "^job $job on node\[0-1\]: 4 tasks" "$out" || { cat "$out" >&2; fail "the job did not get node0 and node1 with 4 tasks"; }
grep -q "^host names of the tasks: 2 node0 2 node1 *$" "$out" ||
  { cat "$out" >&2; fail "the tasks of node0 and node1 do not see their own host names"; }
echo "host names: node0's 2 tasks see node0, node1's 2 see node1"
grep -q "^uids of the tasks: 4 $job_uid *$" "$out" ||
  { cat "$out" >&2; fail "the 4 tasks did not all run as $JOB_USER (uid $job_uid)"; }
echo "user: job $job is $JOB_USER's, its 4 tasks ran as uid $job_uid"
grep -q "ohio: served through Open MPI's collective component coll/ohio" "$out" ||
  { cat "$out" >&2; fail "the ranks were not served through the collective component"; }
# served FUNCTION: "S F" from OHIO_STATS.
served() {
  sed -nE "s/^ohio: ([0-9]+) $1 calls served by ohiod, ([0-9]+) handed back.*/\1 \2/p" "$out" | head -1
}
read -r s f <<< "$(served MPI_Alltoall)"
[ "${s:-0}" -gt 100 ] || { cat "$out" >&2; fail "only ${s:-no} MPI_Alltoall calls served"; }
# alltoall_check's call with a pair type on rank 0 is handed back, once per rank; nothing else.
[ "$f" = 4 ] || { cat "$out" >&2; fail "$f MPI_Alltoall calls handed back, expected 4"; }
[ "$(served MPI_Alltoallv)" = "88 0" ] ||
  { cat "$out" >&2; fail "MPI_Alltoallv served/handed back $(served MPI_Alltoallv), expected 88 0"; }
echo "alltoall: every rank ALL OK through the component; $s MPI_Alltoall calls served, $f handed back (the pair type), 88 MPI_Alltoallv served"

for i in 0 1; do
  # ohiod tells the uid from each rank's peer credentials, not from anything the rank says.
  grep -q "created for 4 ranks, 2 on this node, .* (uid $job_uid)" "$DIR/node$i.log" ||
    { cat "$DIR/node$i.log" >&2; fail "node$i's ohiod held no 4-rank group of uid $job_uid"; }
  served_here=$("$DIR/ohioctl" --socket "$DIR/node$i.admin.sock" counters --json |
    python3 -c 'import json, sys; c = json.load(sys.stdin); print(c["collectives_served"], c["collectives_failed"])')
  read -r ok failed <<< "$served_here"
  [ "$ok" -gt 100 ] && [ "$failed" = 0 ] || fail "node$i's ohiod served $ok collectives, $failed failed"
  echo "node$i: ohiod held the 4-rank group of uid $job_uid, served $ok collectives, none failed"
done

slurm_wait "job $job in sacct" 30 accounted_as "$job" "$JOB_USER alltoall-job.sh node[0-1] COMPLETED 0:0" ||
  fail "sacct: job $job is '$(accounted "$job")', not $JOB_USER's alltoall-job.sh on node[0-1] COMPLETED 0:0"
echo "sacct: job $job $(accounted "$job")"

# --- 2. The prolog refuses a node whose ohiod is gone (it runs as root whoever the job's user).
stop_pid "${DAEMON_PIDS[1]}"
refused=$(sbatch --parsable -N 1 -w node1 -o "$DIR/refused.out" --wrap 'echo ran on $(hostname)')
# The prolog fails, slurmctld requeues the job and holds it.
slurm_wait "job $refused held after its prolog failed" 60 \
  sh -c "scontrol show job $refused | grep -q 'Reason=launch_failed_requeued_held'" ||
  { scontrol show job "$refused" >&2; fail "job $refused was not held after the prolog"; }
[ ! -s "$DIR/refused.out" ] || fail "job $refused ran on node1: $(cat "$DIR/refused.out")"
reason=$(sinfo -h -R -n node1 -o '%E')
case "$reason" in
  "ohio: ohioctl health exit "*) ;;
  *) fail "node1's drain reason is '$reason', not ohio's" ;;
esac
case "$(sinfo -h -n node1 -o '%t')" in
  drain|drng) ;;
  *) fail "node1 is $(sinfo -h -n node1 -o '%t'), not drained" ;;
esac
echo "prolog: job $refused held, not run; node1 drained: $reason"
scancel "$refused"
echo "PASS"
