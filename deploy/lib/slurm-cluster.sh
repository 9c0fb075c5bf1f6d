# shellcheck shell=bash
# Shell functions shared by deploy/slurm-cluster.sh and tests/slurm/slurm_test.sh: a real Slurm
# cluster (Debian's slurmctld, slurmd, slurmdbd) on the namespace nodes of
# deploy/lib/netns-cluster.sh, one ohiod per node, ohio's prolog guarding every node. Source it
# (bash) after netns-cluster.sh; set NETNS_PROG first. As root.
#
# Everything lives in one run directory DIR (a new directory under /tmp: munged checks every
# directory above its socket), which must hold ohiod, ohioctl, slurm-prolog.sh, coll/ (the
# directory of mca_coll_ohio.so) and alltoall_check (tests/mpi/alltoall_check.c for Open MPI).
#
# Slurm's daemons, the prolog and the ohiods run as root; the jobs run as JOB_USER (nobody), as
# real HPC jobs never run as root: ohiod knows each rank by its peer credentials (uid) and
# applies its limits per uid. So DIR is open to read and traverse (what it holds that is
# secret, the munge key, slurmdbd.conf and MariaDB's datadir, is root's alone), and the jobs
# work and write their output in DIR/job, JOB_USER's own (JOB_DIR).
#
#   root namespace:  munged (one key, for Slurm and ohio alike), MariaDB (on 127.0.0.1 only, a
#                    datadir of DIR's own), slurmdbd, slurmctld (10.77.0.254, the bridge)
#   ohio-nodeI:      ohiod nodeI, slurmd -N nodeI (UTS and IPC namespaces of its own, host
#                    name nodeI), and so every prolog, job step and rank of node I
#
# Accounting is slurmdbd with MariaDB: Slurm 22.05's sacct reads only slurmdbd (its
# --completion, which read jobcomp/filetxt, is gone), and `sacct` showing a job COMPLETED 0:0 is
# what users and tests/slurm look at.
#
# Ports: slurmctld, slurmdbd and MariaDB listen in the root namespace, on ports next to ohio's
# (7470, 7471) rather than Slurm's defaults, so a real Slurm on this machine is not disturbed;
# slurmd listens on Slurm's default 6818, each in its own network namespace.
SLURM_CLUSTER_NAME=ohio
SLURMCTLD_PORT=7478
SLURMDBD_PORT=7479
MARIADB_PORT=7480
SLURMCTLD_HOST=ohio-slurmctld
# The job the cluster runs to show it works, and slurm_test runs: MPI_Alltoall of every size up
# to 64 KiB, 3 iterations (as netns_mpi_test).
ALLTOALL_ARGS=(65536 3)
# The user those jobs run as, and submit as (sbatch_as_job_user): nobody is on every system, so
# no account is made or left behind.
JOB_USER=nobody
JOB_GROUP=nogroup

SLURM_PIDS=()

# slurm_wait WHAT SECONDS COMMAND...: runs COMMAND every 0.5 s until it succeeds; after SECONDS
# prints WHAT and fails. Every wait in these scripts has a deadline.
slurm_wait() {
  local what=$1 seconds=$2 deadline=$(( SECONDS + $2 ))
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      echo "$NETNS_PROG: $what: not after $seconds s; the last try said:" >&2
      "$@" >&2 || true
      return 1
    fi
    sleep 0.5
  done
}

# write_slurm_config K DIR: DIR/slurm.conf, DIR/slurmdbd.conf, and the two hooks each node's
# slurmd runs: DIR/prolog.sh and DIR/task-prolog.sh.
write_slurm_config() {
  local k=$1 dir=$2 i
  local db_password
  db_password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
  cat > "$dir/slurm.conf" <<EOF
# A try-it cluster of $k emulated nodes (deploy/lib/slurm-cluster.sh).
ClusterName=$SLURM_CLUSTER_NAME
SlurmctldHost=$SLURMCTLD_HOST(10.77.0.254)
SlurmctldPort=$SLURMCTLD_PORT
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
# This run's munged, whose key the ohiods share: no /etc/munge, no system munged.
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.sock
StateSaveLocation=$dir/slurmctld.state
SlurmctldPidFile=$dir/slurmctld.pid
SlurmctldLogFile=$dir/slurmctld.log
# Every node's slurmd on the same host: %n (the node name) keeps their files apart.
SlurmdSpoolDir=$dir/slurmd.%n
SlurmdPidFile=$dir/slurmd.%n.pid
SlurmdLogFile=$dir/slurmd.%n.log
# The nodes share this host's /tmp, where Slurm's PMIx plugin makes a directory per job step
# named after the job alone: the second node's would collide with the first's.
TmpFS=$dir/tmp.%n
SlurmdDebug=info
SlurmctldDebug=info
# No cgroups to be had here (no systemd as PID 1): processes are tracked through /proc.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# Every node says it has the CPUs below, whatever this host has: they all share its cores.
SlurmdParameters=config_overrides
# ohio's prolog, on every node of a job as it is allocated (Alloc), not only where its first
# step starts: a node whose ohiod is not healthy is drained before any rank lands there.
Prolog=$dir/prolog.sh
PrologFlags=Alloc
TaskProlog=$dir/task-prolog.sh
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$SLURMDBD_PORT
# The munge socket for talking to slurmdbd (AuthInfo is only for the cluster's own messages).
AccountingStoragePass=$dir/munge.sock
JobCompType=jobcomp/none
# A node that registers healthy again after a restart takes jobs again, unless an
# administrator (or the prolog) drained it.
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=600
EOF
  for ((i = 0; i < k; i++)); do
    echo "NodeName=node$i NodeAddr=$(node_ip $i) NodeHostname=node$i CPUs=2 State=UNKNOWN" >> "$dir/slurm.conf"
  done
  echo "PartitionName=ohio Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >> "$dir/slurm.conf"

  # slurmdbd refuses a config that others can read: it holds the database's password.
  (umask 077; cat > "$dir/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$SLURMDBD_PORT
SlurmUser=root
LogFile=$dir/slurmdbd.log
PidFile=$dir/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$MARIADB_PORT
StorageUser=slurm
StoragePass=$db_password
StorageLoc=slurm_acct_db
EOF
  )
  DB_PASSWORD=$db_password

  # Slurm runs its prolog with an environment of its own making (SLURMD_NODENAME, SLURM_JOB_ID
  # ...), not slurmd's: the node's ohiod is found from the node's name. On a real cluster
  # Prolog= is deploy/slurm-prolog.sh itself, and ohioctl's default admin socket is the node's.
  cat > "$dir/prolog.sh" <<EOF
#!/bin/sh
export SLURM_CONF=$dir/slurm.conf PATH=/usr/sbin:/usr/bin:/sbin:/bin
export OHIOCTL=$dir/ohioctl OHIO_ADMIN_SOCKET=$dir/\$SLURMD_NODENAME.admin.sock
exec $dir/slurm-prolog.sh
EOF
  # What a TaskProlog prints as "export NAME=VALUE" is set in the task's environment: every task
  # (rank, or Open MPI's orted) reaches its own node's ohiod. Sockets of the run's own, not
  # /run/ohio bound per node in a mount namespace: nothing is made outside DIR, and a run killed
  # half way leaves no mount behind. On a real cluster the default /run/ohio/ohiod.sock is right
  # and no TaskProlog is needed.
  cat > "$dir/task-prolog.sh" <<EOF
#!/bin/sh
echo "export OHIO_SOCKET=$dir/\$SLURMD_NODENAME.sock"
EOF
  chmod 755 "$dir/prolog.sh" "$dir/task-prolog.sh"
}

# start_mariadb DIR: a MariaDB server of this run's own (datadir DIR/mariadb, TCP on 127.0.0.1
# only, its unix socket in DIR) with the database user slurmdbd logs in as.
start_mariadb() {
  local dir=$1
  mariadb-install-db --no-defaults --datadir="$dir/mariadb" --user=root --skip-test-db \
    --auth-root-authentication-method=socket > "$dir/mariadb-install.log" 2>&1 ||
    { cat "$dir/mariadb-install.log" >&2; echo "$NETNS_PROG: mariadb-install-db failed" >&2; return 1; }
  /usr/sbin/mariadbd --no-defaults --datadir="$dir/mariadb" --user=root --socket="$dir/mariadb.sock" \
    --bind-address=127.0.0.1 --port=$MARIADB_PORT --pid-file="$dir/mariadb.pid" \
    --log-error="$dir/mariadb.log" --skip-log-bin --innodb-buffer-pool-size=32M \
    --innodb-flush-log-at-trx-commit=0 > /dev/null 2>&1 &
  MARIADB_PID=$!
  SLURM_PIDS+=("$MARIADB_PID")
  slurm_wait "MariaDB answering on $dir/mariadb.sock" 60 \
    mariadb --no-defaults --socket="$dir/mariadb.sock" -e 'select 1' ||
    { cat "$dir/mariadb.log" >&2; return 1; }
  mariadb --no-defaults --socket="$dir/mariadb.sock" <<EOF
CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASSWORD';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
EOF
  echo "  MariaDB pid $MARIADB_PID on 127.0.0.1:$MARIADB_PORT, datadir $dir/mariadb"
}

# start_slurmdbd DIR: slurmdbd on MariaDB, with the cluster registered (its root account holds
# root's jobs; with AccountingStorageEnforce unset, JOB_USER's jobs are accounted without an
# account of their own).
start_slurmdbd() {
  local dir=$1
  # slurmdbd reads slurmdbd.conf beside $SLURM_CONF.
  /usr/sbin/slurmdbd -D > "$dir/slurmdbd.out" 2>&1 &
  SLURMDBD_PID=$!
  SLURM_PIDS+=("$SLURMDBD_PID")
  slurm_wait "slurmdbd answering" 60 sacctmgr -n list cluster ||
    { cat "$dir/slurmdbd.out" >&2; return 1; }
  sacctmgr -i add cluster "$SLURM_CLUSTER_NAME" > /dev/null
  echo "  slurmdbd pid $SLURMDBD_PID on 127.0.0.1:$SLURMDBD_PORT"
}

# start_slurmctld DIR: slurmctld in the root namespace (it listens on every address, the nodes
# reach it at the bridge's, 10.77.0.254), under a host name of its own (SlurmctldHost).
start_slurmctld() {
  local dir=$1
  mkdir -p "$dir/slurmctld.state"
  # slurmctld only runs where the host name is SlurmctldHost's: a UTS namespace gives it one.
  unshare --uts /bin/sh -c 'hostname "$1"; shift; exec "$@"' sh "$SLURMCTLD_HOST" \
    /usr/sbin/slurmctld -D -i -f "$dir/slurm.conf" > "$dir/slurmctld.out" 2>&1 &
  SLURMCTLD_PID=$!
  SLURM_PIDS+=("$SLURMCTLD_PID")
  slurm_wait "slurmctld answering" 60 sh -c 'scontrol ping | grep -q UP' ||
    { cat "$dir/slurmctld.out" "$dir/slurmctld.log" >&2; return 1; }
  echo "  slurmctld pid $SLURMCTLD_PID, $SLURMCTLD_HOST at 10.77.0.254:$SLURMCTLD_PORT"
}

# start_slurmd I DIR: node I's slurmd inside its network namespace, in UTS and IPC namespaces of
# its own whose host name is nodeI: its jobs' MPI_Get_processor_name and Open MPI tell the nodes
# apart, and ranks of different nodes share no System V IPC (deploy/lib/netns-ssh.sh does the
# same for ranks started through ssh). Entered with nsenter, not `ip netns exec`: that remounts
# /sys for the namespace, without the cgroup hierarchies under /sys/fs/cgroup, and slurmd 22.05
# will not start without finding them, even with no cgroup plugin configured.
start_slurmd() {
  local i=$1 dir=$2
  mkdir -p "$dir/slurmd.node$i" "$dir/tmp.node$i"
  nsenter --net="/run/netns/$(ns_name "$i")" unshare --uts --ipc /bin/sh -c 'hostname "$1"; shift; exec "$@"' sh "node$i" \
    /usr/sbin/slurmd -D -N "node$i" -f "$dir/slurm.conf" > "$dir/slurmd.node$i.out" 2>&1 &
  SLURM_PIDS+=($!)
  echo "  node$i: slurmd pid $! in namespace $(ns_name "$i"), host name node$i"
}

# nodes_idle K: true once sinfo shows all K nodes idle.
nodes_idle() {
  [ "$(sinfo -h -N -t idle -o '%N' | sort -u | wc -l)" = "$1" ]
}

# start_slurm_cluster K DIR: the whole cluster: K namespace nodes with an ohiod each and this
# run's munged (start_netns_cluster), MariaDB, slurmdbd, slurmctld and K slurmds; returns once
# every node is idle. Exports SLURM_CONF for Slurm's clients and sets JOB_DIR (DIR/job, owned by
# JOB_USER: jobs' working directory and output). stop_slurm_cluster undoes it.
start_slurm_cluster() {
  local k=$1 dir=$2 i
  # mktemp -d made DIR 0700: JOB_USER's jobs must reach the munge socket, slurm.conf, the task
  # prolog, the ohiods' control sockets (0666), alltoall_check and coll/ in it.
  chmod 755 "$dir"
  chmod -R a+rX "$dir/coll" "$dir/alltoall_check"
  JOB_DIR=$dir/job
  install -d -m 755 -o "$JOB_USER" -g "$JOB_GROUP" "$JOB_DIR"
  start_netns_cluster "$k" "$dir"
  write_slurm_config "$k" "$dir"
  export SLURM_CONF=$dir/slurm.conf
  start_mariadb "$dir" || return 1
  start_slurmdbd "$dir" || return 1
  start_slurmctld "$dir" || return 1
  for ((i = 0; i < k; i++)); do start_slurmd $i "$dir"; done
  slurm_wait "all $k nodes idle" 60 nodes_idle "$k" || { sinfo -N >&2; cat "$dir"/slurmd.node*.out >&2; return 1; }
}

# stop_slurm_cluster: stops Slurm's daemons (slurmds first: they may still be talking to
# slurmctld), MariaDB, then the ohiods, munged and the network (stop_netns_cluster, which also
# ends whatever a job left in a node's namespace). False if a namespace or link was left.
stop_slurm_cluster() {
  local n
  for ((n = ${#SLURM_PIDS[@]} - 1; n >= 0; n--)); do stop_pid "${SLURM_PIDS[$n]}" 15; done
  SLURM_PIDS=()
  stop_netns_cluster
}

# write_alltoall_job DIR: DIR/alltoall-job.sh, the batch script of the job that shows ohio under
# Slurm, submitted as JOB_USER (sbatch_as_job_user): the verifying alltoall_check on every task of
# the allocation, launched by srun itself through PMIx (Slurm's mpi/pmix, Open MPI's PMIx client):
# no mpirun, no orted, every rank a Slurm task. Open MPI finds ohio's collective component through
# mca_base_component_path, as it would in its own component directory once installed; the networks
# are the namespaces' (10.77.0.0/24; the root namespace's loopback is no way across).
write_alltoall_job() {
  local dir=$1 pkglibdir
  pkglibdir=$(ompi_info --path pkglibdir | sed -n 's/^ *Pkglibdir: *//p')
  cat > "$dir/alltoall-job.sh" <<EOF
#!/bin/sh
export OMPI_MCA_mca_base_component_path="$dir/coll:$pkglibdir"
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,vader,self OMPI_MCA_btl_tcp_if_include=10.77.0.0/24
export OMPI_MCA_oob_tcp_if_include=10.77.0.0/24 OMPI_MCA_mpi_yield_when_idle=1
export OHIO_STATS=1 OHIO_SELECTION=always
echo "job \$SLURM_JOB_ID on \$SLURM_JOB_NODELIST: \$SLURM_NTASKS tasks"
# Each node's tasks see its own host name (slurmd's UTS namespace), as on separate machines.
echo "host names of the tasks: \$(srun hostname | sort | uniq -c | xargs)"
# Every task runs as the user who submitted the job (not root).
echo "uids of the tasks: \$(srun id -u | sort | uniq -c | xargs)"
exec srun --mpi=pmix $dir/alltoall_check ${ALLTOALL_ARGS[*]}
EOF
  chmod 755 "$dir/alltoall-job.sh"
}

# sbatch_as_job_user SBATCH_ARG...: sbatch run as JOB_USER (runuser: the request carries
# JOB_USER's munge credential, as a user's own sbatch would), working directory JOB_DIR; prints
# what sbatch prints. SLURM_CONF and the rest of the environment are kept, and the job's.
sbatch_as_job_user() {
  (cd "$JOB_DIR" && runuser -u "$JOB_USER" -- sbatch --chdir="$JOB_DIR" "$@")
}

# job_state JOBID: the job's state as slurmctld has it (empty once it has forgotten the job).
job_state() {
  scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
}

# job_finished JOBID: true once the job is in a final state.
job_finished() {
  case "$(job_state "$1")" in
    COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE) return 0 ;;
    *) return 1 ;;
  esac
}

# accounted JOBID: "USER NAME NODELIST STATE EXITCODE" of the job (not its steps) in sacct,
# whoever's job it is (--allusers). slurmctld sends slurmdbd the job's records asynchronously,
# and a step's can come first: the job is then "allocation" on the step's nodes until its own
# record arrives.
accounted() {
  sacct -n -X -P -a -j "$1" -o User,JobName,NodeList,State,ExitCode 2>/dev/null | tr '|' ' ' | head -1
}

# accounted_as JOBID "USER NAME NODELIST STATE EXITCODE": true once sacct shows the job so.
accounted_as() {
  [ "$(accounted "$1")" = "$2" ]
}
