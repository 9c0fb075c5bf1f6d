#!/bin/bash
# What installing ohio costs a job at the sizes it hands back: Debian 12's Open MPI, one host x 4
# ranks. Two programs, in five variants run interleaved --runs times, the order rotated each run:
#   library            Open MPI alone
#   shim               libohio_mpi preloaded, ohiod running
#   component          coll/ohio at its default priority, ohiod running (as the package installs it)
#   shim_no_ohiod      libohio_mpi preloaded, no ohiod on the node
#   component_no_ohiod coll/ohio loaded, no ohiod on the node
# Nothing else is set for the job: the built-in selection table decides.
# - tests/bench/paired_alltoall_bench.c times MPI_Alltoall from --min-bytes to --max-bytes, ohio's
#   calls and the library's alone alternating in blocks inside one job (with more ranks than
#   cores, separate jobs land in speeds about a microsecond apart). The shim variants pair
#   MPI_Alltoall with PMPI_Alltoall; the component variants pair a communicator coll/ohio serves
#   with one made while coll_ohio_priority was -1 (MPI_T); library pairs PMPI_Alltoall with
#   itself, so its difference is what the method reads when there is none.
# - tests/bench/first_call_bench.c: a new communicator's dup, first and second call, at 64 B,
#   which the built-in table hands back on one node, and 4 KiB, which it serves.
# Prints per size and variant the median over the runs of the baseline's and ohio's latency, their
# ratio and the median difference of block pairs in µs, with CPU time and context switches per call
# (all ranks), then the first-call table.
#
# usage: tests/bench/hand_back_compare.sh [--min-bytes B (1)] [--max-bytes B (256)]
#          [--iterations N (3000: calls a side a size)] [--runs R (3)]
#          [--repeats N (200: new communicators a run)] [--ranks N (4)]
# As root, after: bazel build //daemon:ohiod //client:libohio_mpi_openmpi.so \
#   //client/openmpi_coll:component //tests/bench:paired_alltoall_bench_openmpi \
#   //tests/bench:first_call_bench_openmpi
set -euo pipefail
cd "$(dirname "$0")/../.."
MIN_BYTES=1
MAX_BYTES=256
ITERATIONS=3000
RUNS=3
REPEATS=200
RANKS=4
while [ $# -gt 0 ]; do
  case "$1" in
    --min-bytes) MIN_BYTES=$2; shift 2 ;;
    --max-bytes) MAX_BYTES=$2; shift 2 ;;
    --iterations) ITERATIONS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "hand_back_compare.sh: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
BIN=bazel-bin
for f in daemon/ohiod client/libohio_mpi_openmpi.so client/openmpi_coll/component/mca_coll_ohio.so \
         tests/bench/paired_alltoall_bench_openmpi tests/bench/first_call_bench_openmpi; do
  [ -e "$BIN/$f" ] || { echo "hand_back_compare.sh: $BIN/$f is missing: bazel build it first" >&2; exit 2; }
done

# shellcheck source=deploy/lib/processes.sh
. deploy/lib/processes.sh
DIR=$(mktemp -d /tmp/hand-back-compare.XXXXXX)
COMPONENTS="$(cd "$BIN/client/openmpi_coll/component" && pwd -P):/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"
"$BIN/daemon/ohiod" --socket "$DIR/ohiod.sock" --admin-socket "$DIR/admin.sock" --peer-port 0 --data-port 0 \
  --listen 127.0.0.1 --advertise 127.0.0.1 --auth none 2> "$DIR/ohiod.log" &
DAEMON=$!
trap 'stop_pid "$DAEMON"; [ -n "${OHIO_BENCH_KEEP:-}" ] || rm -rf "$DIR"' EXIT
wait_socket_accepts "$DIR/ohiod.sock" "$DAEMON" 30 ||
  { echo "hand_back_compare.sh: ohiod did not come up" >&2; cat "$DIR/ohiod.log" >&2; exit 1; }

# run VARIANT R: both programs as that variant; their rows to DIR/VARIANT.R.rows and .first.
run() {
  local variant=$1 socket="$DIR/ohiod.sock" select=() mode=pmpi
  case "$variant" in
    library) select=(--mca coll ^ohio) ;;
    shim|shim_no_ohiod) select=(--mca coll ^ohio -x LD_PRELOAD="$BIN/client/libohio_mpi_openmpi.so") ;;
    component|component_no_ohiod) select=(--mca mca_base_component_path "$COMPONENTS"); mode=cvar ;;
  esac
  case "$variant" in *_no_ohiod) socket="$DIR/no-ohiod.sock" ;; esac
  local mpirun=(timeout --kill-after=5 900 mpirun --allow-run-as-root --oversubscribe -np "$RANKS" --mca pml ob1
                --mca btl self,vader "${select[@]}" -x OHIO_SOCKET="$socket" -x OHIO_QUIET=1)
  "${mpirun[@]}" "$BIN/tests/bench/paired_alltoall_bench_openmpi" "$mode" "$MIN_BYTES" "$MAX_BYTES" "$ITERATIONS" \
    > "$DIR/$variant.$2.out" 2>&1 || { echo "hand_back_compare.sh: $variant failed:" >&2; cat "$DIR/$variant.$2.out" >&2; exit 1; }
  grep -E '^[0-9]+ ' "$DIR/$variant.$2.out" > "$DIR/$variant.$2.rows"
  : > "$DIR/$variant.$2.first"
  for b in 64 4096; do
    "${mpirun[@]}" "$BIN/tests/bench/first_call_bench_openmpi" "$b" "$REPEATS" > "$DIR/$variant.$2.first.out" 2>&1 ||
      { echo "hand_back_compare.sh: $variant first call failed:" >&2; cat "$DIR/$variant.$2.first.out" >&2; exit 1; }
    grep -E '^[0-9]+ ' "$DIR/$variant.$2.first.out" >> "$DIR/$variant.$2.first"
  done
}

VARIANTS=(library shim component shim_no_ohiod component_no_ohiod)
echo "Open MPI $(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v//p'), MPI_Alltoall, 1 host x $RANKS ranks," \
     "$ITERATIONS calls a side a size, $RUNS runs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < RUNS; r++)); do
  for ((i = 0; i < ${#VARIANTS[@]}; i++)); do
    run "${VARIANTS[(i + r) % ${#VARIANTS[@]}]}" "$r"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "ohiod's counters: $("$BIN"/client/ohioctl --socket "$DIR/admin.sock" counters 2>/dev/null |
  grep -E "^(collectives|handed back)" | tr -s " \n" " " || true)"

for v in "${VARIANTS[@]}"; do
  cat "$DIR"/"$v".*.rows | awk -v v="$v" '{ print v, $0 }'
done > "$DIR/all"
awk -f deploy/lib/median.awk -e '
  { key = $1 SUBSEP $2; sizes[$2] = 1
    base[key] = base[key] " " $3; ohio[key] = ohio[key] " " $4; diff[key] = diff[key] " " $5
    bcpu[key] = bcpu[key] " " $6; ocpu[key] = ocpu[key] " " $7; bctx[key] = bctx[key] " " $8; octx[key] = octx[key] " " $9 }
  END {
    printf "%-19s %6s %11s %9s %7s %8s %15s %13s\n", "variant", "bytes", "baseline_us", "ohio_us", "ratio", "diff_us",
           "cpu_us base/ohio", "ctx base/ohio"
    split("library shim component shim_no_ohiod component_no_ohiod", vs, " ")
    n = asorti(sizes, order, "@ind_num_asc")
    for (k = 1; k <= 5; k++) for (i = 1; i <= n; i++) {
      key = vs[k] SUBSEP order[i]
      if (!(key in base)) continue
      b = median(base[key]); o = median(ohio[key])
      printf "%-19s %6s %11.2f %9.2f %7.3f %+8.2f %7.2f/%-7.2f %6.2f/%-6.2f\n", vs[k], order[i], b, o, o / b,
             median(diff[key]), median(bcpu[key]), median(ocpu[key]), median(bctx[key]), median(octx[key])
    }
  }' "$DIR/all"

echo
echo "A new communicator (MPI_Comm_dup of MPI_COMM_WORLD), median over $REPEATS a run, then over the runs, µs:"
for v in "${VARIANTS[@]}"; do
  cat "$DIR"/"$v".*.first | awk -v v="$v" '{ print v, $0 }'
done | awk -f deploy/lib/median.awk -e '
  { key = $1 SUBSEP $2; d[key] = d[key] " " $3; f[key] = f[key] " " $4; s[key] = s[key] " " $5; seen[$1] = 1; order[++n] = $1 }
  END {
    printf "%20s %6s %10s %10s %10s\n", "variant", "bytes", "dup", "first", "second"
    split("library shim component shim_no_ohiod component_no_ohiod", vs, " ")
    for (k = 1; k <= 5; k++) for (b = 64; b <= 4096; b *= 64) {
      key = vs[k] SUBSEP b
      if (!(key in d)) continue
      printf "%20s %6d %10.1f %10.1f %10.1f\n", vs[k], b, median(d[key]), median(f[key]), median(s[key])
    }
  }'
