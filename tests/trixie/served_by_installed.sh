#!/bin/bash
# Runs inside the Debian 13 root once the four Debian 13 packages are installed there
# (trixie_packages_test.sh runs it through in_root.sh, in one mount namespace: the daemon, the
# jobs and ohioctl see the same /run). Starts munged and the installed ohiod as its unit would,
# with the installed config and its sockets in /run/ohio; runs an Open MPI 5.0 job through the
# installed component and an MPICH 4.2 job through the installed shim, both on ohio's default
# socket; and writes what the test asserts into OUT: each job's output, the installed ohioctl's
# counters after each, ohiod's --version and --help. What it started is stopped when it ends.
#
#   served_by_installed.sh OUT SRC     SRC: a directory with tests/mpi's alltoall_check.c and
#                                      the headers it includes
set -euo pipefail
out=$1
src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
started=()
cleanup() {
  local p
  for p in "${started[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${started[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# wait_for WHAT PID SECONDS COMMAND...: until COMMAND succeeds, while PID runs, for SECONDS.
wait_for() {
  local what=$1 pid=$2 limit=$3 deadline=$((SECONDS + $3))
  shift 3
  until "$@" > /dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || fail "$what exited before it answered"
    [ $SECONDS -lt $deadline ] || fail "$what did not answer within $limit s"
    sleep 0.2
  done
}

/usr/sbin/ohiod --version > "$out/version.out" 2>&1 || fail "ohiod --version: $(cat "$out/version.out")"
/usr/sbin/ohiod --help > "$out/help.out" 2>&1 || fail "ohiod --help: $(cat "$out/help.out")"

# The shipped config authenticates peers with MUNGE: munged with the key the munge package made,
# on its default socket (what ohiod.conf's munge-socket names). --force: it runs as root here.
[ -f /etc/munge/munge.key ] || mungekey --create
install -d -m 0755 /run/munge
/usr/sbin/munged --foreground --force > "$out/munged.log" 2>&1 &
started+=($!)
wait_for munged $! 30 test -S /run/munge/munge.socket.2

# What the unit does: RuntimeDirectory=ohio, then ohiod on the installed config. The ports are
# the kernel's choice: other daemons of this machine (outside the root, same network) may hold
# the configured ones; one node, so no peer ever dials them.
install -d -m 0755 /run/ohio
/usr/sbin/ohiod --config /etc/ohio/ohiod.conf --peer-port 0 --data-port 0 --listen 127.0.0.1 \
  --advertise 127.0.0.1 > "$out/ohiod.log" 2>&1 &
ohiod=$!
started+=("$ohiod")
wait_for "the installed ohiod" "$ohiod" 60 /usr/bin/ohioctl --timeout-ms 2000 health

cd "$out"
env=(OHIO_STATS=1 OHIO_SELECTION=always)
mpicc.openmpi -I"$src" -o alltoall_check_openmpi "$src/tests/mpi/alltoall_check.c"
# Debian 13's mpirun (PRRTE) hands its ranks PMIx's component directory as theirs, where no
# Open MPI component is: the job names Open MPI's own, where the package installed coll/ohio.
components_dir=$(ompi_info --path pkglibdir | sed -n 's/^ *Pkglibdir: *//p')
oenv=(--mca mca_base_component_path "$components_dir")
for e in "${env[@]}"; do oenv+=(-x "$e"); done
timeout 300 mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 --mca pml ob1 --mca btl self,sm \
  "${oenv[@]}" ./alltoall_check_openmpi 65536 2 > openmpi.out 2>&1 || fail "Open MPI 5 job: $(cat openmpi.out)"
/usr/bin/ohioctl counters --json > counters.openmpi.json

mpicc.mpich -I"$src" -o alltoall_check_mpich "$src/tests/mpi/alltoall_check.c"
menv=(-genv LD_PRELOAD libohio_mpi_mpich.so)
for e in "${env[@]}"; do menv+=(-genv "${e%%=*}" "${e#*=}"); done
timeout 300 mpirun.mpich -launcher fork -np 4 "${menv[@]}" ./alltoall_check_mpich 65536 2 > mpich.out 2>&1 ||
  fail "MPICH 4.2 job: $(cat mpich.out)"
/usr/bin/ohioctl counters --json > counters.mpich.json
