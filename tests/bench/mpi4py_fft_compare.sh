#!/bin/bash
# mpi4py-fft's transforms (tests/bench/mpi4py_fft_bench.py) through ohio against Open MPI alone, at
# mpi4py's default thread level (MPI_THREAD_MULTIPLE), with ohio as a site installs it: Open MPI's
# collective component coll/ohio at its default priority and the built-in selection table, nothing
# set for the job. Four ranks, on one host with one ohiod (--nodes 1) or as 2 x 2 on two network
# namespaces with an ohiod in each (--nodes 2: deploy/lib/netns-cluster.sh, as deploy/mpi-compare.sh
# makes them). The two variants are run interleaved, --runs times, the first of each pair
# alternating; prints per variant the medians over the runs of a forward+backward pair's time,
# the CPU time and context switches of all ranks per pair, and the ohio/library ratio, and the
# MPI_Alltoall(v/w) calls ohio served in the last ohio run (OHIO_STATS).
#
# usage: tests/bench/mpi4py_fft_compare.sh [--nodes 1|2 (1)] [--n N (64)] [--iterations I (30)]
#          [--runs R (5)]
# As root, after: bazel build //daemon:ohiod //client/openmpi_coll:component
# Needs python3-mpi4py-fft (deploy/install-deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/../.."
NODES=1
N=64
ITERATIONS=30
RUNS=5
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES=$2; shift 2 ;;
    --n) N=$2; shift 2 ;;
    --iterations) ITERATIONS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "mpi4py_fft_compare.sh: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
case "$NODES" in 1|2) ;; *) echo "mpi4py_fft_compare.sh: --nodes is 1 or 2" >&2; exit 2 ;; esac
for f in bazel-bin/daemon/ohiod bazel-bin/client/openmpi_coll/component/mca_coll_ohio.so; do
  [ -e "$f" ] || { echo "mpi4py_fft_compare.sh: $f is missing: bazel build it first" >&2; exit 2; }
done
# Debian's python3 with its numpy and mpi4py-fft, whatever python3 comes first on PATH.
PYTHON=/usr/bin/python3
"$PYTHON" -c 'import mpi4py_fft' 2>/dev/null || {
  echo "mpi4py_fft_compare.sh: $PYTHON cannot import mpi4py_fft: apt-get install python3-mpi4py-fft" >&2
  exit 2
}

NETNS_PROG=mpi4py_fft_compare.sh
DIR=$(mktemp -d /tmp/mpi4py-fft-compare.XXXXXX)
COMPONENT_PATH="$PWD/bazel-bin/client/openmpi_coll/component:$(ompi_info --path pkglibdir | sed -n 's/^ *Pkglibdir: *//p')"
DAEMON_PIDS=()
cp tests/bench/mpi4py_fft_bench.py "$DIR/"
if [ "$NODES" = 2 ]; then
  # shellcheck source=deploy/lib/netns-cluster.sh
  . deploy/lib/netns-cluster.sh
  trap 'stop_netns_cluster || true; rm -rf "$DIR"' EXIT
  netns_lock 300
  cp deploy/lib/netns-ssh.sh bazel-bin/daemon/ohiod "$DIR/"
  start_netns_cluster 2 "$DIR"
  printf '%s slots=2\n%s slots=2\n' "$(node_ip 0)" "$(node_ip 1)" > "$DIR/hostfile"
  where=(--hostfile "$DIR/hostfile" --mca plm_rsh_agent "$DIR/netns-ssh.sh" --mca oob_tcp_if_include 10.77.0.0/24
         --mca btl_tcp_if_include 10.77.0.0/24 --mca btl tcp,vader,self)
  launch=(env OHIO_NETNS_SOCKET_DIR="$DIR")
else
  # shellcheck source=deploy/lib/processes.sh
  . deploy/lib/processes.sh
  bazel-bin/daemon/ohiod --socket "$DIR/ohiod.sock" --admin-socket "$DIR/admin.sock" --peer-port 0 --data-port 0 \
    --listen 127.0.0.1 --advertise 127.0.0.1 --auth none 2> "$DIR/ohiod.log" &
  DAEMON_PIDS+=($!)
  trap 'for p in "${DAEMON_PIDS[@]}"; do stop_pid "$p"; done; rm -rf "$DIR"' EXIT
  wait_socket_accepts "$DIR/ohiod.sock" "${DAEMON_PIDS[0]}" 30 ||
    { echo "mpi4py_fft_compare.sh: ohiod did not come up" >&2; cat "$DIR/ohiod.log" >&2; exit 1; }
  where=(--mca btl vader,self)
  launch=(env OHIO_SOCKET="$DIR/ohiod.sock")
fi

# run VARIANT: one job; appends its result line to DIR/VARIANT.txt.
run() {
  local variant=$1 select
  if [ "$variant" = ohio ]; then
    select=(--mca mca_base_component_path "$COMPONENT_PATH" -x OHIO_STATS=1)
  else
    select=(--mca coll ^ohio)
  fi
  (cd "$DIR" && timeout --kill-after=5 600 env -u LD_PRELOAD "${launch[@]}" mpirun.openmpi --allow-run-as-root --oversubscribe \
    -np 4 --mca pml ob1 "${where[@]}" --mca mpi_yield_when_idle 1 "${select[@]}" \
    "$PYTHON" mpi4py_fft_bench.py "$N" "$ITERATIONS") > "$DIR/$variant.out" 2>&1 || {
    echo "mpi4py_fft_compare.sh: the $variant job failed:" >&2
    cat "$DIR/$variant.out" >&2
    exit 1
  }
  grep '^fft ' "$DIR/$variant.out" >> "$DIR/$variant.txt"
}

echo "mpi4py-fft, ${N}^3 real-to-complex, pencils, 4 ranks on $NODES node(s), $ITERATIONS pairs a run, $RUNS runs;" \
     "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < RUNS; r++)); do
  if ((r % 2 == 0)); then run library; run ohio; else run ohio; run library; fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# median FILE FIELD: the median over the runs of the value after FIELD.
median() {
  awk -v f="$2" '{ for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }' "$1" | sort -g |
    awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
printf '%-8s %14s %14s %16s\n' variant pair_us cpu_us_per_pair switches_per_pair
for v in library ohio; do
  printf '%-8s %14s %14s %16s\n' "$v" "$(median "$DIR/$v.txt" median_us)" "$(median "$DIR/$v.txt" cpu_us_per_pair)" \
    "$(median "$DIR/$v.txt" switches_per_pair)"
done
awk -v a="$(median "$DIR/ohio.txt" median_us)" -v b="$(median "$DIR/library.txt" median_us)" \
  'BEGIN { printf "ratio ohio/library: %.3f\n", a / b }'
grep -E '^ohio: [0-9]+ MPI_Alltoall[vw]? calls served' "$DIR/ohio.out" || echo "ohio: no OHIO_STATS line (was coll/ohio loaded?)"
