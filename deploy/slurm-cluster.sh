#!/bin/bash
# A real Slurm cluster on this machine, with ohio on every node, to try ohio under Slurm: K
# emulated nodes (network namespaces ohio-nodeI, 10.77.0.(I+1), as deploy/local-cluster.sh),
# each running an ohiod and Debian's slurmd (as node nodeI, host name nodeI); slurmctld,
# slurmdbd (on a MariaDB of the run's own) and munged (one key for Slurm and ohio) in the root
# namespace. ohio's prolog (deploy/slurm-prolog.sh) checks each node's ohiod before every job;
# jobs run Open MPI with ohio's collective component, as the unprivileged user nobody (as a
# user's job would; the daemons run as root). deploy/lib/slurm-cluster.sh says how.
#
# usage: deploy/slurm-cluster.sh [--nodes K (2)] [--run-job | --keep | --stop DIR]
#   --run-job (default): submit the demo job as nobody (runuser -u nobody -- sbatch -N K
#     --ntasks-per-node=2: srun --mpi=pmix of tests/mpi/alltoall_check.c, every byte of
#     MPI_Alltoall up to 64 KiB verified, through ohio with OHIO_STATS=1), wait for it (at
#     most 180 s), print its output and its sacct line, then stop and remove everything.
#   --keep: start the cluster, print how to use it and how to stop it, and leave it running.
#   --stop DIR: stop the cluster --keep left running in DIR and remove everything it made.
# As root (namespaces, slurmd). Builds ohiod, ohioctl, the component and the check program
# with Bazel first. Everything it makes is in one directory under /tmp, and the namespaces; on
# failure or interruption everything is stopped and removed.
set -euo pipefail
cd "$(dirname "$0")/.."
NETNS_PROG=slurm-cluster.sh
. deploy/lib/netns-cluster.sh
. deploy/lib/slurm-cluster.sh
. deploy/lib/bazel-build.sh

NODES=2
MODE=run-job
STOP_DIR=
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES=$2; shift 2 ;;
    --run-job) MODE=run-job; shift ;;
    --keep) MODE=keep; shift ;;
    --stop) MODE=stop; STOP_DIR=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "$NETNS_PROG: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "$NETNS_PROG: run as root (network namespaces, slurmd)" >&2; exit 1; }
case "$NODES" in ''|*[!0-9]*|0|1) echo "$NETNS_PROG: --nodes takes a number from 2" >&2; exit 2 ;; esac

if [ "$MODE" = stop ]; then
  [ -f "$STOP_DIR/pids" ] || { echo "$NETNS_PROG: $STOP_DIR is not a cluster --keep left (no $STOP_DIR/pids)" >&2; exit 1; }
  # Not our children: stop_pid waits for them through kill -0.
  for pid in $(tac "$STOP_DIR/pids"); do stop_pid "$pid" 15; done
  teardown_network
  rm -rf "$STOP_DIR"
  echo "$NETNS_PROG: stopped; removed $STOP_DIR and the namespaces"
  exit 0
fi

for tool in slurmctld slurmd slurmdbd sbatch mariadbd mpirun.openmpi; do
  command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin command -v "$tool" >/dev/null ||
    { echo "$NETNS_PROG: $tool is missing: run deploy/install-deps.sh" >&2; exit 1; }
done
bazel_build_retrying "$NETNS_PROG" //daemon:ohiod //client:ohioctl //client/openmpi_coll:mca_coll_ohio.so \
  //tests/mpi:alltoall_check_openmpi

# The cluster holds the namespace names (and so the lock on them) as long as it runs: its
# daemons inherit the lock's descriptor, so with --keep other runs wait until --stop.
netns_lock 60
DIR=$(mktemp -d /tmp/ohio-slurm.XXXXXX)
DAEMON_PIDS=()
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ "$MODE" = keep ] && [ $rc = 0 ]; then return; fi
  echo "$NETNS_PROG: stopping the cluster"
  stop_slurm_cluster || true
  rm -rf "$DIR"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir "$DIR/coll"
cp "$BAZEL_BIN/daemon/ohiod" "$BAZEL_BIN/client/ohioctl" deploy/slurm-prolog.sh "$DIR/"
cp "$BAZEL_BIN/tests/mpi/alltoall_check_openmpi" "$DIR/alltoall_check"
cp "$BAZEL_BIN/client/openmpi_coll/mca_coll_ohio.so" "$DIR/coll/"
echo "$NETNS_PROG: starting a Slurm cluster of $NODES nodes in $DIR"
start_slurm_cluster "$NODES" "$DIR"
write_alltoall_job "$DIR"
sinfo -N

if [ "$MODE" = keep ]; then
  printf '%s\n' "${SLURM_PIDS[@]}" "${DAEMON_PIDS[@]}" "$MUNGED_PID" | tac > "$DIR/pids"
  cat <<EOF

The cluster runs. In a shell on this machine, as root:
  export SLURM_CONF=$DIR/slurm.conf
  sinfo -N; squeue
  cd $JOB_DIR   # $JOB_USER's: jobs run as $JOB_USER, as a user's would, not as root
  runuser -u $JOB_USER -- sbatch -N $NODES --ntasks-per-node=2 -o $JOB_DIR/job-%j.out $DIR/alltoall-job.sh
  cat $JOB_DIR/job-<id>.out   # every rank ALL OK, the tasks' uids ($JOB_USER's), OHIO_STATS
  sacct -X -a                # the job, $JOB_USER's, COMPLETED 0:0
  $DIR/ohioctl --socket $DIR/node0.admin.sock groups   # a node's ohiod
  srun -N $NODES hostname       # srun and salloc work too: each node's tasks see its name
Logs: $DIR/*.log
Stop it and remove everything: $0 --stop $DIR
EOF
  exit 0
fi

job=$(sbatch_as_job_user --parsable -N "$NODES" --ntasks-per-node=2 -o "$JOB_DIR/job-%j.out" "$DIR/alltoall-job.sh")
echo "$NETNS_PROG: submitted job $job as $JOB_USER; waiting for it (at most 180 s)"
slurm_wait "job $job finished" 180 job_finished "$job" || { scontrol show job "$job" >&2; exit 1; }
cat "$JOB_DIR/job-$job.out"
expected="$JOB_USER alltoall-job.sh node[0-$((NODES - 1))] COMPLETED 0:0"
slurm_wait "job $job in sacct as $expected" 30 accounted_as "$job" "$expected" || true
sacct -a -j "$job" -o JobID,User,JobName,NodeList,NTasks,State,ExitCode,Elapsed
accounted_as "$job" "$expected"
