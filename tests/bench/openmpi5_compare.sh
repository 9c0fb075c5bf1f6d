#!/bin/bash
# MPI_Alltoall under Debian 13's Open MPI 5.0, with and without coll/ohio built for it: the
# osu-style tests/bench/mpi_alltoall_bench.c, compiled by Open MPI 5's mpicc inside the Debian 13
# root of tests/trixie/make-root.sh and run there (tests/trixie/in_root.sh) as one host x 4 ranks,
# against an ohiod of this machine. "component": coll/ohio at its default priority with the
# built-in selection table, nothing set for the job, as a site installs it (sizes the table hands
# back cost the component's hand-back); "library": coll/ohio excluded (--mca coll ^ohio). The two
# are run interleaved, --runs times, the first of each pair alternating; prints per size the
# medians over the runs of the latency, the CPU time and context switches per call (ranks and
# ohiod), and the ratio component / library.
#
# usage: tests/bench/openmpi5_compare.sh [--min-bytes B (1)] [--max-bytes B (65536)]
#          [--iterations N (3000)] [--runs R (3)]
# As root, after: tests/trixie/make-root.sh and
#   bazel build //daemon:ohiod //client/openmpi_coll/openmpi5:mca_coll_ohio.so
set -euo pipefail
cd "$(dirname "$0")/../.."
MIN_BYTES=1
MAX_BYTES=65536
ITERATIONS=3000
RUNS=3
while [ $# -gt 0 ]; do
  case "$1" in
    --min-bytes) MIN_BYTES=$2; shift 2 ;;
    --max-bytes) MAX_BYTES=$2; shift 2 ;;
    --iterations) ITERATIONS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "openmpi5_compare.sh: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
for f in bazel-bin/daemon/ohiod bazel-bin/client/openmpi_coll/openmpi5/mca_coll_ohio.so; do
  [ -e "$f" ] || { echo "openmpi5_compare.sh: $f is missing: bazel build it first" >&2; exit 2; }
done

# shellcheck source=deploy/lib/processes.sh
. deploy/lib/processes.sh
DIR=$(mktemp -d /tmp/openmpi5-compare.XXXXXX)
mkdir -p "$DIR/components"
cp bazel-bin/client/openmpi_coll/openmpi5/mca_coll_ohio.so "$DIR/components/"
mkdir -p "$DIR/tests/bench"
cp tests/bench/mpi_alltoall_bench.c tests/bench/proc_usage.h "$DIR/tests/bench/"
bazel-bin/daemon/ohiod --socket "$DIR/ohiod.sock" --admin-socket "$DIR/admin.sock" --peer-port 0 --data-port 0 \
  --listen 127.0.0.1 --advertise 127.0.0.1 --auth none 2> "$DIR/ohiod.log" &
DAEMON=$!
trap 'stop_pid "$DAEMON"; [ -n "${OHIO_BENCH_KEEP:-}" ] || rm -rf "$DIR"' EXIT
in_root() { bash tests/trixie/in_root.sh --bind "$DIR" --cd "$DIR" -- "$@"; }
in_root mpicc.openmpi -O2 -I "$DIR" -o "$DIR/mpi_alltoall_bench" "$DIR/tests/bench/mpi_alltoall_bench.c"
wait_socket_accepts "$DIR/ohiod.sock" "$DAEMON" 30 ||
  { echo "openmpi5_compare.sh: ohiod did not come up" >&2; cat "$DIR/ohiod.log" >&2; exit 1; }

# run VARIANT R: one job (its output in DIR/VARIANT.R.out); its lines "bytes avg_us cpu ctx ..."
# go to DIR/VARIANT.R.rows.
run() {
  local variant=$1 select
  if [ "$variant" = component ]; then
    select=(--mca mca_base_component_path "$DIR/components:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi40"
            -x OHIO_STATS=1)
  else
    select=(--mca coll ^ohio)
  fi
  in_root timeout --kill-after=5 900 mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 --mca pml ob1 \
    --mca btl self,sm "${select[@]}" -x OHIO_SOCKET="$DIR/ohiod.sock" \
    "$DIR/mpi_alltoall_bench" "$MIN_BYTES" "$MAX_BYTES" "$ITERATIONS" "$DAEMON" > "$DIR/$variant.$2.out" 2>&1 || {
    echo "openmpi5_compare.sh: the $variant job failed:" >&2
    cat "$DIR/$variant.$2.out" >&2
    exit 1
  }
  grep -E '^[0-9]+ ' "$DIR/$variant.$2.out" > "$DIR/$variant.$2.rows" || true
}

echo "Open MPI 5.0 (Debian 13 root), MPI_Alltoall, 1 host x 4 ranks, $ITERATIONS calls a size, $RUNS runs;" \
     "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < RUNS; r++)); do
  if ((r % 2 == 0)); then run library "$r"; run component "$r"; else run component "$r"; run library "$r"; fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Per size the median over the runs of each column, both variants side by side.
cat "$DIR"/library.*.rows | awk '{ print "library", $0 }' > "$DIR/all"
cat "$DIR"/component.*.rows | awk '{ print "component", $0 }' >> "$DIR/all"
awk -f deploy/lib/median.awk -e '
  { key = $1 SUBSEP $2; lat[key] = lat[key] " " $3; cpu[key] = cpu[key] " " $4; ctx[key] = ctx[key] " " $5; sizes[$2] = 1 }
  END {
    printf "%8s %12s %12s %8s %14s %14s %12s %12s\n", "bytes", "library_us", "component_us", "ratio",
           "library_cpu_us", "component_cpu", "library_ctx", "component_ctx"
    n = asorti(sizes, order, "@ind_num_asc")
    for (i = 1; i <= n; i++) {
      b = order[i]; l = median(lat["library" SUBSEP b]); c = median(lat["component" SUBSEP b])
      printf "%8s %12.2f %12.2f %8.3f %14s %14s %12s %12s\n", b, l, c, c / l, median(cpu["library" SUBSEP b]),
             median(cpu["component" SUBSEP b]), median(ctx["library" SUBSEP b]), median(ctx["component" SUBSEP b])
    }
  }' "$DIR/all"
grep -E '^ohio: [0-9]+ MPI_Alltoall calls served' "$DIR/component.0.out" || echo "ohio: no OHIO_STATS line (was coll/ohio loaded?)"
