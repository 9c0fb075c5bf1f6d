#!/bin/bash
# ohio's predicted alltoall time (ohio-sim) against SMPI's own MPI_Alltoall algorithms on the same
# SimGrid platform, network model and shape: per size, ohio-sim's median, each SMPI algorithm's
# median (sim/smpi-alltoall.sh) and the ratio ohio / that algorithm (below 1: ohio predicted
# faster; the orientation of deploy/mpi-compare.sh's "with ohio / without"). Prints the table,
# writes it as CSV, and plots time against size (PNG) when gnuplot is installed.
#
# usage: sim/compare.sh [--platform P (sim/platforms/this-box.xml)]
#          [--calibration C (sim/calibration/this-box.txt)] [--nodes K (4)] [--ppn P (2)]
#          [--sizes LIST (1,16,256,4096,65536)] [--iterations N (5)]
#          [--algorithms LIST (ompi,mpich,pair,bruck)] [--network-model M (SMPI)]
#          [--ohio-sim PATH (bazel-bin/sim/ohio-sim)] [--out DIR (/tmp/ohio-bench/sim-compare-KxP)]
#          [--max-ranks R (64)] [--ohio-flags "FLAGS" (more ohio-sim run flags, e.g. --design v2)]
#          [--counts FILE|uniform:MAX:SEED|skewed:MAX:SEED (alltoallv with this count matrix, not --sizes)]
# With --counts, one row "alltoallv": ohio-sim's alltoallv against SMPI's MPI_Alltoallv algorithms
# (smpi/alltoallv) on the same matrix, written to alltoallv.csv.
# Build ohio-sim first: bazel build //sim:ohio-sim.
set -euo pipefail
cd "$(dirname "$0")/.."

PLATFORM=sim/platforms/this-box.xml CALIBRATION=sim/calibration/this-box.txt NODES=4 PPN=2
SIZES=1,16,256,4096,65536 ITERATIONS=5 ALGORITHMS=ompi,mpich,pair,bruck MODEL=SMPI
OHIO_SIM=bazel-bin/sim/ohio-sim OUT='' MAX_RANKS=64 OHIO_FLAGS='' COUNTS=''
while [ $# -gt 0 ]; do
  case $1 in
    --platform) PLATFORM=$2; shift 2 ;;
    --calibration) CALIBRATION=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --ppn) PPN=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --iterations) ITERATIONS=$2; shift 2 ;;
    --algorithms) ALGORITHMS=$2; shift 2 ;;
    --network-model) MODEL=$2; shift 2 ;;
    --ohio-sim) OHIO_SIM=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --max-ranks) MAX_RANKS=$2; shift 2 ;;
    --ohio-flags) OHIO_FLAGS=$2; shift 2 ;;
    --counts) COUNTS=$2; shift 2 ;;
    *) echo "compare.sh: unknown argument '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-/tmp/ohio-bench/sim-compare-${NODES}x${PPN}}
[ -x "$OHIO_SIM" ] || { echo "compare.sh: $OHIO_SIM not found: bazel build //sim:ohio-sim" >&2; exit 2; }
mkdir -p "$OUT"

# Both sides run the same matrix: a generator is written out once, as a file.
CALLS=(--bytes "$SIZES") SMPI_CALLS=(--sizes "$SIZES") NAME=alltoall
if [ -n "$COUNTS" ]; then
  if [[ $COUNTS == uniform:* || $COUNTS == skewed:* ]]; then
    "$OHIO_SIM" counts --ranks $(( NODES * PPN )) --generate "$COUNTS" --out "$OUT/counts.txt"
    COUNTS=$OUT/counts.txt
  fi
  CALLS=(--counts "$COUNTS") SMPI_CALLS=(--counts "$COUNTS") NAME=alltoallv
fi

echo "ohio-sim: $NODES x $PPN on $PLATFORM, network model $MODEL, $NAME" >&2
# shellcheck disable=SC2086  # --ohio-flags is a list of flags
"$OHIO_SIM" run --platform "$PLATFORM" --calibration "$CALIBRATION" --nodes "$NODES" --ppn "$PPN" \
  "${CALLS[@]}" --iterations "$ITERATIONS" --cfg network/model:"$MODEL" --json $OHIO_FLAGS \
  > "$OUT/ohio-sim.json"
# bytes median_us, one line per size ("alltoallv" for the alltoallv), from ohio-sim's report.
python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
if "alltoallv" in r:
    print("alltoallv", "%.3f" % (r["alltoallv"]["median_s"] * 1e6))
for s in r["sizes"]:
    print(s["bytes"], "%.3f" % (s["median_s"] * 1e6))' "$OUT/ohio-sim.json" > "$OUT/ohio.txt"

IFS=, read -r -a ALGOS <<< "$ALGORITHMS"
for a in "${ALGOS[@]}"; do
  echo "smpi $a: $NODES x $PPN" >&2
  sim/smpi-alltoall.sh --platform "$PLATFORM" --nodes "$NODES" --ppn "$PPN" "${SMPI_CALLS[@]}" --algorithm "$a" \
    --iterations "$ITERATIONS" --network-model "$MODEL" --max-ranks "$MAX_RANKS" --build-dir "$OUT/smpi" \
    | awk '{ print $1, $2 }' > "$OUT/smpi-$a.txt"
done

# One row per size: ohio's time, then each algorithm's time and ohio / it.
CSV=$OUT/$NAME.csv
{
  printf 'bytes,ohio_sim_us'
  for a in "${ALGOS[@]}"; do printf ',smpi_%s_us,ohio_over_%s' "$a" "$a"; done
  printf '\n'
  while read -r bytes ohio; do
    printf '%s,%s' "$bytes" "$ohio"
    for a in "${ALGOS[@]}"; do
      t=$(awk -v b="$bytes" '$1 == b { print $2 }' "$OUT/smpi-$a.txt")
      if [ -n "$t" ]; then printf ',%s,%s' "$t" "$(awk -v o="$ohio" -v t="$t" 'BEGIN { printf "%.2f", o / t }')"
      else printf ',-,-'; fi
    done
    printf '\n'
  done < "$OUT/ohio.txt"
} > "$CSV"
column -s, -t < "$CSV"
echo "results: $CSV (ohio_over_X below 1: ohio predicted faster than SMPI's X)"

if [ "$NAME" = alltoall ] && command -v gnuplot >/dev/null; then
  {
    echo "set terminal png size 900,600; set output '$OUT/alltoall.png'"
    echo "set datafile separator ','; set logscale xy; set key top left"
    echo "set xlabel 'bytes per rank pair'; set ylabel 'median time per call (us)'"
    echo "set title 'MPI_Alltoall, $NODES x $PPN on $(basename "$PLATFORM"), simulated ($MODEL)'"
    printf "plot '%s' using 1:2 with linespoints title 'ohio (ohio-sim)'" "$CSV"
    for i in "${!ALGOS[@]}"; do
      printf ", '' using 1:%d with linespoints title 'SMPI %s'" $(( 3 + 2 * i )) "${ALGOS[$i]}"
    done
    echo
  } | gnuplot && echo "plot:    $OUT/alltoall.png"
fi
