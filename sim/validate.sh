#!/bin/bash
# The simulation against this box: simulates the README job's shapes on sim/platforms/this-box.xml
# with a given calibration (ohio-sim v1, v2, v3; SMPI pair, ompi and mpich, all with the CM02
# network model, docs/SIMULATION.md), reads the medians CSVs deploy/local-cluster.sh and
# deploy/mpi-compare.sh wrote for those shapes, and prints per shape, method and size the
# measured ratio (with ohio / without), the simulated one and the check (sim/validate_check.py):
# where the measured ratio is outside 0.85-1.15 the simulated one must be on the same side of 1,
# elsewhere within +-35% of it.
#
# usage: sim/validate.sh --calibration C [--measured SHAPE=CSV ...] [--shapes LIST (4x2,16x1,32x1)]
#          [--sizes LIST (the measured CSVs' sizes; without any: 1,64,1024,4096,65536)]
#          [--platform P (sim/platforms/this-box.xml)] [--iterations N (3)]
#          [--ohio-sim PATH (bazel-bin/sim/ohio-sim)] [--out DIR (/tmp/ohio-bench/sim-validate)]
#          [--smpi-overheads FILE] [--strict]
# --measured 4x2=/tmp/ohio-bench/local-cluster/alltoall.csv: a CSV and the shape it was measured
#   at (deploy/local-cluster.sh --nodes 4 --ppn 2; deploy/mpi-compare.sh --nodes 4 --ppn 2
#   --selection always, so that every call it times went through ohio, as the simulation's do).
# --smpi-overheads FILE: per-message host overheads for the SMPI runs (smpi/os, smpi/ois, smpi/or;
#   sim/smpi_overheads.py, e.g. sim/calibration/this-box-idle-smpi-cpu.txt). Without it SMPI charges
#   a message only the platform's latency and bandwidth, while ohio-sim charges ohio's daemon
#   daemon_message_cost per message from the calibration.
# --strict: exit 1 when a check failed (otherwise the checks are reported, exit 0).
# Writes simulated.csv (shape,source,bytes,time_us) and validation.csv (the printed rows) in --out.
# Build ohio-sim first: bazel build //sim:ohio-sim.
set -euo pipefail
cd "$(dirname "$0")/.."

CALIBRATION='' SHAPES=4x2,16x1,32x1 SIZES='' PLATFORM=sim/platforms/this-box.xml ITERATIONS=3
OHIO_SIM=bazel-bin/sim/ohio-sim OUT=/tmp/ohio-bench/sim-validate STRICT=() SMPI_OVERHEADS=''
MEASURED=()
while [ $# -gt 0 ]; do
  case $1 in
    --calibration) CALIBRATION=$2; shift 2 ;;
    --measured) MEASURED+=("$2"); shift 2 ;;
    --shapes) SHAPES=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --platform) PLATFORM=$2; shift 2 ;;
    --iterations) ITERATIONS=$2; shift 2 ;;
    --ohio-sim) OHIO_SIM=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --smpi-overheads) SMPI_OVERHEADS=$2; shift 2 ;;
    --strict) STRICT=(--strict); shift ;;
    *) echo "validate.sh: unknown argument '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
[ -n "$CALIBRATION" ] || { echo "validate.sh: --calibration is required" >&2; exit 2; }
[ -x "$OHIO_SIM" ] || { echo "validate.sh: $OHIO_SIM not found: bazel build //sim:ohio-sim" >&2; exit 2; }
for m in "${MEASURED[@]}"; do
  f=${m#*=}
  if [ "$f" = "$m" ] || [ ! -r "$f" ]; then
    echo "validate.sh: --measured '$m': not SHAPE=CSV of a readable file" >&2; exit 2
  fi
done
SMPI_CFG=()
if [ -n "$SMPI_OVERHEADS" ]; then
  settings=$(python3 sim/smpi_overheads.py "$SMPI_OVERHEADS") || exit 2
  while read -r setting; do SMPI_CFG+=(--cfg "$setting"); done <<< "$settings"
fi
mkdir -p "$OUT"

# The sizes of a shape: those its measured CSVs hold, else --sizes, else a spread.
sizes_of() {
  local shape=$1 list='' m
  for m in "${MEASURED[@]}"; do
    [ "${m%%=*}" = "$shape" ] || continue
    list+=$(awk -F, 'NR > 1 && $2 ~ /^[0-9]+$/ { printf "%s\n", $2 }' "${m#*=}")$'\n'
  done
  if [ -n "$SIZES" ]; then echo "$SIZES"
  elif [ -n "${list//$'\n'/}" ]; then sort -nu <<<"$list" | grep . | paste -sd,
  else echo 1,64,1024,4096,65536; fi
}

SIMULATED=$OUT/simulated.csv
echo "shape,source,bytes,time_us" > "$SIMULATED"
IFS=, read -r -a SHAPE_LIST <<< "$SHAPES"
for shape in "${SHAPE_LIST[@]}"; do
  [[ $shape =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]] || { echo "validate.sh: shape '$shape' is not KxP" >&2; exit 2; }
  nodes=${BASH_REMATCH[1]} ppn=${BASH_REMATCH[2]} sizes=$(sizes_of "$shape")
  for design in v1 v2 v3; do
    echo "ohio-sim $design: $shape, sizes $sizes" >&2
    "$OHIO_SIM" run --platform "$PLATFORM" --calibration "$CALIBRATION" --nodes "$nodes" --ppn "$ppn" \
      --bytes "$sizes" --iterations "$ITERATIONS" --design "$design" --cfg network/model:CM02 --json \
      > "$OUT/ohio-$shape-$design.json"
    python3 -c '
import json, sys
for s in json.load(open(sys.argv[1]))["sizes"]:
    print("%s,ohio_%s,%d,%.3f" % (sys.argv[2], sys.argv[3], s["bytes"], s["median_s"] * 1e6))' \
      "$OUT/ohio-$shape-$design.json" "$shape" "$design" >> "$SIMULATED"
  done
  for algorithm in pair ompi mpich; do
    echo "smpi $algorithm: $shape" >&2
    sim/smpi-alltoall.sh --platform "$PLATFORM" --nodes "$nodes" --ppn "$ppn" --sizes "$sizes" \
      --algorithm "$algorithm" --iterations "$ITERATIONS" --network-model CM02 \
      --build-dir "$OUT/smpi" "${SMPI_CFG[@]}" | awk -v s="$shape" -v a="$algorithm" '{ printf "%s,smpi_%s,%s,%s\n", s, a, $1, $2 }' \
      >> "$SIMULATED"
  done
done

ARGS=(--simulated "$SIMULATED" --out "$OUT/validation.csv" "${STRICT[@]}")
for m in "${MEASURED[@]}"; do ARGS+=(--measured "$m"); done
python3 sim/validate_check.py "${ARGS[@]}"
echo "results: $OUT/validation.csv; simulated times: $SIMULATED" >&2
