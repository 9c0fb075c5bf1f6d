#!/bin/bash
# Measures, on the cluster's own nodes, where ohio beats the MPI library, and writes the selection
# table ohiod reads (selection-table = PATH in ohiod.conf): per MPI function and message size,
# the osu-style programs tests/bench/mpi_alltoall_bench.c and mpi_ialltoall_bench.c are run by
# Open MPI alone ("mpi"; OHIO_DISABLE=1, should ohio's component be in Open MPI's own directory)
# and by Open MPI with libohio_mpi_openmpi.so preloaded ("ohio", with OHIO_SELECTION=always and
# OHIO_IALLTOALL_MIN_BYTES=0, so that ohio serves every call whatever the table in force), the
# two alternating, their order swapped every run. A size is ohio's where
# median latency with ohio / median without <= --win-ratio; ohio's sizes become rows for exactly
# the shape measured (nodes, ranks per node, transport), every other size of that shape goes to
# the library, and shapes not measured get the fallback row (deploy/lib/selection_table.py).
# The table's comments say the command, date, hosts and, per size, both medians and the ratio.
# A blocking call's latency is the slowest rank's mean time in it. A nonblocking call's is what
# it costs a program that computes between MPI_Ialltoall and MPI_Wait: the time both of them take
# around a computation of --compute-us (2000 µs by default, the same whoever moves the data),
# which leaves its core (--compute sleep, as a GPU kernel or I/O does) or spins on it (--compute
# busy, osu's). That is where ohiod's progress pays: a library moves nothing while its ranks are
# away from MPI, ohiod completes the call meanwhile; and where it does not: a call ohiod takes
# longer than the computation to move is waited for.
#
# usage: deploy/measure-selection.sh [--hostfile FILE] [--ppn P (1)] [--functions LIST (alltoall)]
#          [--min-bytes B (1)] [--max-bytes B (65536)] [--runs R (3)] [--transport tcp|verbs]
#          [--win-ratio X (0.95)] [--iterations N (0: the programs' own, by size)] [--compute sleep|busy (sleep)] [--compute-us US (2000)]
#          [--run-timeout S (per mpirun: 300)] [--launcher-agent CMD] [--mpirun CMD (mpirun.openmpi)]
#          [--mpirun-args 'ARGS'] [--bin-dir DIR] [--work-dir DIR] [--out FILE (./selection.table)]
# --hostfile: the nodes, Open MPI hostfile syntax (the first word of a line; slots are ignored:
#   every node runs P ranks). Without it, inside a Slurm allocation: the allocation's nodes
#   (scontrol show hostnames $SLURM_JOB_NODELIST). Every node must run ohiod.
# --functions: any of alltoall, alltoallv, ialltoall, ialltoallv, comma-separated (MPI_Alltoallw
#   has no benchmark program). --min-bytes, --max-bytes: powers of two; every power of two
#   between is measured (bytes per rank pair).
# --transport: the daemons' transport, for the rows; default: what the local ohiod says
#   (ohioctl status --json; OHIO_ADMIN_SOCKET names its admin socket), else tcp.
# --launcher-agent: Open MPI's plm_rsh_agent (e.g. deploy/lib/netns-ssh.sh for network
#   namespaces). --mpirun-args: more mpirun arguments, split at spaces (e.g. '--mca btl tcp,self').
# --bin-dir: take mpi_alltoall_bench_openmpi, mpi_ialltoall_bench_openmpi,
#   libohio_mpi_openmpi.so (and ohioctl) from DIR instead of building them here with Bazel.
# --work-dir: where they are copied for the run; it must be the same path on every node (a
#   shared filesystem); each mpirun's output stays in DIR/runs. Default: a new directory under
#   the current one, removed afterwards (MEASURE_SELECTION_KEEP=1 keeps it).
# Writes FILE (replaced only once the measurement succeeded) and FILE.csv, every run's latency:
#   function,bytes,variant,run,latency_us. Install: `selection-table = PATH` in
#   /etc/ohio/ohiod.conf on every node, then `systemctl reload ohiod` (docs/OPERATIONS.md,
#   "Measuring the selection table").
set -euo pipefail
PROG=measure-selection.sh
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/deploy/lib/processes.sh"
. "$SRC/deploy/lib/bazel-build.sh"
# The command line as it can be typed again: a word with other characters than these in quotes.
COMMAND=deploy/measure-selection.sh
for a in "$@"; do
  if [[ "$a" =~ ^[A-Za-z0-9_./,:=+@%-]+$ ]]; then COMMAND+=" $a"; else COMMAND+=" '${a//\'/\'\\\'\'}'"; fi
done

HOSTFILE_IN=
PPN=1
FUNCTIONS=alltoall
MIN_BYTES=1
MAX_BYTES=65536
RUNS=3
TRANSPORT=
WIN_RATIO=0.95
COMPUTE=sleep
COMPUTE_US=2000
ITERATIONS=0
RUN_TIMEOUT=300
AGENT=
MPIRUN=mpirun.openmpi
MPIRUN_ARGS=
BIN_DIR=
WORK=
OUT=./selection.table
die() { echo "$PROG: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in -h|--help) ;; *) [ $# -ge 2 ] || die "$1 needs a value" ;; esac
  case "$1" in
    --hostfile) HOSTFILE_IN=$2; shift 2 ;;
    --ppn) PPN=$2; shift 2 ;;
    --functions) FUNCTIONS=$2; shift 2 ;;
    --min-bytes) MIN_BYTES=$2; shift 2 ;;
    --max-bytes) MAX_BYTES=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --transport) TRANSPORT=$2; shift 2 ;;
    --win-ratio) WIN_RATIO=$2; shift 2 ;;
    --iterations) ITERATIONS=$2; shift 2 ;;
    --compute) COMPUTE=$2; shift 2 ;;
    --compute-us) COMPUTE_US=$2; shift 2 ;;
    --run-timeout) RUN_TIMEOUT=$2; shift 2 ;;
    --launcher-agent) AGENT=$2; shift 2 ;;
    --mpirun) MPIRUN=$2; shift 2 ;;
    --mpirun-args) MPIRUN_ARGS=$2; shift 2 ;;
    --bin-dir) BIN_DIR=$2; shift 2 ;;
    --work-dir) WORK=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;  # the comment block above
    *) die "unknown argument $1 (--help lists them)" ;;
  esac
done
for v in "$PPN" "$MIN_BYTES" "$MAX_BYTES" "$RUNS" "$ITERATIONS" "$RUN_TIMEOUT"; do
  case "$v" in ''|*[!0-9]*) die "numbers expected, got '$v'" ;; esac
done
power_of_two() { [ "$1" -ge 1 ] && [ $(( $1 & ($1 - 1) )) = 0 ]; }
if ! { power_of_two "$MIN_BYTES" && power_of_two "$MAX_BYTES" && [ "$MIN_BYTES" -le "$MAX_BYTES" ]; }; then
  die "--min-bytes and --max-bytes must be powers of two, the first no larger than the second"
fi
[ "$MAX_BYTES" -le 1073741824 ] || die "--max-bytes is at most 1 GiB"
if [ "$PPN" -lt 1 ] || [ "$RUNS" -lt 1 ] || [ "$RUN_TIMEOUT" -lt 5 ]; then die "--ppn, --runs >= 1 and --run-timeout >= 5"; fi
if ! [[ "$WIN_RATIO" =~ ^[0-9]*\.?[0-9]+$ ]] || ! awk -v r="$WIN_RATIO" 'BEGIN { exit !(r > 0) }'; then
  die "--win-ratio must be a number above 0, not '$WIN_RATIO'"
fi
case "$TRANSPORT" in ''|tcp|verbs) ;; *) die "--transport is tcp or verbs, not '$TRANSPORT'" ;; esac
case "$COMPUTE" in sleep|busy) ;; *) die "--compute is sleep or busy, not '$COMPUTE'" ;; esac
[[ "$COMPUTE_US" =~ ^[0-9]+$ ]] || die "--compute-us is a whole number of microseconds, not '$COMPUTE_US'"
IFS=, read -r -a FUNCTION_LIST <<< "$FUNCTIONS"
[ ${#FUNCTION_LIST[@]} -gt 0 ] || die "--functions names no function"
for f in "${FUNCTION_LIST[@]}"; do
  case "$f" in
    alltoall|alltoallv|ialltoall|ialltoallv) ;;
    alltoallw) die "no benchmark program measures MPI_Alltoallw; --functions takes alltoall, alltoallv, ialltoall, ialltoallv" ;;
    *) die "--functions takes alltoall, alltoallv, ialltoall, ialltoallv, not '$f'" ;;
  esac
done
OUT_DIR=$(dirname "$OUT")
if ! [ -d "$OUT_DIR" ] || ! [ -w "$OUT_DIR" ]; then die "--out $OUT: $OUT_DIR is not a writable directory"; fi

# The nodes, each once, in the order named.
if [ -n "$HOSTFILE_IN" ]; then
  [ -r "$HOSTFILE_IN" ] || die "--hostfile $HOSTFILE_IN cannot be read"
  mapfile -t HOSTS < <(sed 's/#.*//' "$HOSTFILE_IN" | awk 'NF && !seen[$1]++ { print $1 }')
  HOSTS_FROM="hostfile $HOSTFILE_IN"
elif [ -n "${SLURM_JOB_NODELIST:-}" ]; then
  mapfile -t HOSTS < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
  HOSTS_FROM="Slurm job ${SLURM_JOB_ID:-?}"
else
  die "name the nodes: --hostfile FILE, or run inside a Slurm allocation"
fi
[ ${#HOSTS[@]} -gt 0 ] || die "$HOSTS_FROM names no node"
NODES=${#HOSTS[@]}
RANKS=$(( NODES * PPN ))

# The programs: built here, or the admin's.
if [ -z "$BIN_DIR" ]; then
  pushd "$SRC" > /dev/null
  bazel_build_retrying "$PROG" //tests/bench:mpi_alltoall_bench_openmpi //tests/bench:mpi_ialltoall_bench_openmpi \
    //client:libohio_mpi_openmpi.so //client:ohioctl
  popd > /dev/null
  PROGRAMS=("$BAZEL_BIN/tests/bench/mpi_alltoall_bench_openmpi" "$BAZEL_BIN/tests/bench/mpi_ialltoall_bench_openmpi"
            "$BAZEL_BIN/client/libohio_mpi_openmpi.so" "$BAZEL_BIN/client/ohioctl")
else
  PROGRAMS=()
  for p in mpi_alltoall_bench_openmpi mpi_ialltoall_bench_openmpi libohio_mpi_openmpi.so; do
    [ -f "$BIN_DIR/$p" ] || die "--bin-dir $BIN_DIR has no $p"
    PROGRAMS+=("$BIN_DIR/$p")
  done
  [ -x "$BIN_DIR/ohioctl" ] && PROGRAMS+=("$BIN_DIR/ohioctl")
fi

# The transport the rows name: the local daemon's, unless given.
TRANSPORT_FROM="--transport"
if [ -z "$TRANSPORT" ]; then
  OHIOCTL=
  for p in "${PROGRAMS[@]}"; do [ "$(basename "$p")" = ohioctl ] && OHIOCTL=$p; done
  [ -n "$OHIOCTL" ] || OHIOCTL=$(command -v ohioctl || true)
  said=
  if [ -n "$OHIOCTL" ]; then
    said=$("$OHIOCTL" status --json 2>/dev/null |
           /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin).get("transport", ""))' 2>/dev/null || true)
  fi
  case "$said" in
    tcp|verbs) TRANSPORT=$said; TRANSPORT_FROM="the local ohiod (ohioctl status)" ;;
    *) TRANSPORT=tcp; TRANSPORT_FROM="default: the local ohiod did not say (no ohioctl, or no answer)" ;;
  esac
fi

MADE_WORK=0
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d "$PWD/ohio-measure.XXXXXX")
  MADE_WORK=1
else
  mkdir -p "$WORK"
fi
WORK=$(cd "$WORK" && pwd)
MPI_PID=
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  if [ -n "$MPI_PID" ]; then stop_pid "$MPI_PID"; fi
  rm -f "$OUT.tmp.$$" "$OUT.csv.tmp.$$"
  if [ "$MADE_WORK" = 1 ]; then
    if [ -z "${MEASURE_SELECTION_KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept $WORK (MEASURE_SELECTION_KEEP)"; fi
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Copies: every node runs them from this one path, and a rebuild cannot swap them under the run.
cp "${PROGRAMS[@]}" "$WORK/"
mkdir -p "$WORK/runs"
for h in "${HOSTS[@]}"; do echo "$h slots=$PPN"; done > "$WORK/hostfile"

SIZES=$(awk -v a="$MIN_BYTES" -v m="$MAX_BYTES" 'BEGIN { for (b = a; b <= m; b *= 2) n++; print n }')
MPI_VERSION=$("$MPIRUN" --version 2>/dev/null | head -1 || true)
echo "$PROG: ${FUNCTION_LIST[*]} on $NODES nodes x $PPN ranks ($HOSTS_FROM: ${HOSTS[*]}), transport $TRANSPORT," \
     "$MIN_BYTES .. $MAX_BYTES bytes, $RUNS runs, in $WORK"

# mpi_command FUNCTION VARIANT: fills CMD.
mpi_command() {
  local function=$1 variant=$2 program args
  case "$function" in
    alltoall|alltoallv) program=mpi_alltoall_bench_openmpi; args=("$MIN_BYTES" "$MAX_BYTES" "$ITERATIONS" "" "$function") ;;
    ialltoall) program=mpi_ialltoall_bench_openmpi; args=("$MIN_BYTES" "$MAX_BYTES" "$ITERATIONS" 0 "$COMPUTE_US") ;;
    ialltoallv) program=mpi_ialltoall_bench_openmpi; args=("$MIN_BYTES" "$MAX_BYTES" "$ITERATIONS" 0 "$COMPUTE_US" vector) ;;
  esac
  # The program computes by spinning unless told to sleep.
  [[ "$function" == i* && "$COMPUTE" == sleep ]] && args+=(sleep)
  CMD=(timeout --kill-after=5 "$RUN_TIMEOUT" env -u LD_PRELOAD "$MPIRUN" -np "$RANKS" --hostfile "$WORK/hostfile")
  [ "$(id -u)" = 0 ] && CMD+=(--allow-run-as-root)
  [ -n "$AGENT" ] && CMD+=(--mca plm_rsh_agent "$AGENT")
  # shellcheck disable=SC2206  # split at spaces, as documented
  [ -n "$MPIRUN_ARGS" ] && CMD+=($MPIRUN_ARGS)
  if [ "$variant" = ohio ]; then
    CMD+=(-x "LD_PRELOAD=$WORK/libohio_mpi_openmpi.so" -x OHIO_SELECTION=always -x OHIO_IALLTOALL_MIN_BYTES=0 -x OHIO_STATS=1)
  else
    # Open MPI alone, even where ohio's component is installed in Open MPI's own directory.
    CMD+=(-x OHIO_DISABLE=1 -x OHIO_STATS=1)
  fi
  CMD+=("$WORK/$program" "${args[@]}")
}

mpi_name() {
  case "$1" in
    alltoall) echo MPI_Alltoall ;; alltoallv) echo MPI_Alltoallv ;;
    ialltoall) echo MPI_Ialltoall ;; ialltoallv) echo MPI_Ialltoallv ;;
  esac
}

# run_one FUNCTION VARIANT RUN: one mpirun; appends its latencies to the CSV. A run that fails,
# misses a size, or is not served as its variant says ends the measurement (exit 1).
CSV=$WORK/latencies.csv
echo "function,bytes,variant,run,latency_us" > "$CSV"
run_one() {
  local function=$1 variant=$2 run=$3 tag="$1.$2.$3" rc=0 lines served fell name
  mpi_command "$function" "$variant"
  [ "$run" = 0 ] && echo "\$ ${CMD[*]}"
  "${CMD[@]}" > "$WORK/runs/$tag.out" 2> "$WORK/runs/$tag.err" &
  MPI_PID=$!
  wait "$MPI_PID" || rc=$?
  MPI_PID=
  lines=$(grep -cE '^[0-9]+ [0-9.]+( |$)' "$WORK/runs/$tag.out" || true)
  if [ "$rc" != 0 ] || [ "$lines" != "$SIZES" ]; then
    tail -n 15 "$WORK/runs/$tag.err" "$WORK/runs/$tag.out" | sed 's/^/    /' >&2
    echo "$PROG: $tag: mpirun exited $rc$([ "$rc" != 124 ] || echo " (timed out after $RUN_TIMEOUT s)"), $lines of $SIZES sizes; no table written" >&2
    exit 1
  fi
  name=$(mpi_name "$function")
  read -r served fell < <(sed -nE "s/^ohio: ([0-9]+) $name calls served by ohiod, ([0-9]+) handed back.*/\1 \2/p" \
                           "$WORK/runs/$tag.err" | head -1) || true
  if [ "$variant" = ohio ] && { [ "${served:-0}" = 0 ] || [ "${fell:-1}" != 0 ]; }; then
    grep '^ohio' "$WORK/runs/$tag.err" | sed 's/^/    /' >&2 || true
    echo "$PROG: $tag: ohio served ${served:-no} $name calls, ${fell:-?} handed back to the library: not a measurement of ohio; no table written" >&2
    exit 1
  fi
  if [ "$variant" = mpi ] && [ "${served:-0}" != 0 ]; then
    echo "$PROG: $tag: ohio served $served $name calls in the run without ohio; no table written" >&2
    exit 1
  fi
  # mpi_ialltoall_bench's columns: bytes pure_us ... wait_us exposed_us: the nonblocking
  # functions' cost is exposed_us (the header above says why).
  awk -v f="$function" -v v="$variant" -v r="$run" '/^[0-9]+ [0-9.]+( |$)/ {
      us = f ~ /^i/ ? $9 : $2
      printf "%s,%s,%s,%s,%.2f\n", f, $1, v, r, us }' "$WORK/runs/$tag.out" >> "$CSV"
  printf '  [%d/%d] %-10s %-4s ok%s\n' $(( run + 1 )) "$RUNS" "$function" "$variant" \
    "$([ "$variant" = mpi ] || echo ", $served calls served by ohio")"
}

START=$SECONDS
for ((r = 0; r < RUNS; r++)); do
  for f in "${FUNCTION_LIST[@]}"; do
    if [ $(( r % 2 )) = 0 ]; then order=(mpi ohio); else order=(ohio mpi); fi
    for v in "${order[@]}"; do run_one "$f" "$v" "$r"; done
  done
done
echo "$PROG: $(( RUNS * ${#FUNCTION_LIST[@]} * 2 )) runs in $(( SECONDS - START )) s"

/usr/bin/python3 "$SRC/deploy/lib/selection_table.py" --nodes "$NODES" --ppn "$PPN" --transport "$TRANSPORT" \
  --win-ratio "$WIN_RATIO" \
  --comment "Measured by: $COMMAND" \
  --comment "Date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')" \
  --comment "Hosts ($HOSTS_FROM): ${HOSTS[*]}" \
  --comment "Shape: $NODES nodes x $PPN ranks per node; transport $TRANSPORT ($TRANSPORT_FROM)" \
  --comment "MPI: ${MPI_VERSION:-$MPIRUN}; ohio: libohio_mpi_openmpi.so preloaded, OHIO_SELECTION=always, OHIO_IALLTOALL_MIN_BYTES=0" \
  --comment "Runs: $RUNS, the two alternating; calls per size: $([ "$ITERATIONS" = 0 ] && echo "the programs' own" || echo "$ITERATIONS"); latency: the slowest rank's mean; nonblocking: MPI_Ialltoall + MPI_Wait around $COMPUTE_US us of $COMPUTE computation" \
  --comment "Every run's latency: $(basename "$OUT").csv beside this file" \
  "$CSV" > "$OUT.tmp.$$"
cp "$CSV" "$OUT.csv.tmp.$$"
mv "$OUT.csv.tmp.$$" "$OUT.csv"
mv "$OUT.tmp.$$" "$OUT"
echo
grep -v '^#' "$OUT" | sed 's/^/  /'
echo
echo "wrote $OUT (and every run's latency in $OUT.csv)"
echo "install it on every node: copy it there, add \`selection-table = $(cd "$OUT_DIR" && pwd)/$(basename "$OUT")\`"
echo "(or the path you copied it to) to /etc/ohio/ohiod.conf, then \`systemctl reload ohiod\`"
