#!/bin/bash
# MPI_Alltoall under SMPI (SimGrid's MPI) on a SimGrid platform: builds sim/mpi/smpi_alltoall_bench.c
# with smpicc (once per --build-dir) and runs it under smpirun with one alltoall algorithm of
# SMPI's (ompi and mpich: those libraries' own selection logic; pair: pairwise; bruck; any name
# smpirun --help-coll lists). Prints the program's lines: bytes median_us min_us max_us iterations.
# With --counts FILE (ohio-sim's count matrix) it runs MPI_Alltoallv instead, the algorithm set
# as smpi/alltoallv, and prints one line: alltoallv median_us min_us max_us iterations.
#
# usage: sim/smpi-alltoall.sh --platform P --nodes K --ppn P (--sizes LIST | --counts FILE) --algorithm NAME
#          [--iterations N (5)] [--warmup N (1)] [--network-model M (SMPI)] [--build-dir DIR (/tmp/ohio-sim-smpi)]
#          [--max-ranks R (64)] [--cfg name:value ...]
# Ranks go K x P onto the platform's hosts node-0..node-(K-1), P each, as ohio-sim places them.
# --max-ranks: a guard; SMPI at thousands of ranks needs the settings docs/SIMULATION.md lists
# and an idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."

PLATFORM='' NODES='' PPN='' SIZES='' COUNTS='' ALGORITHM='' ITERATIONS=5 MODEL=SMPI BUILD=/tmp/ohio-sim-smpi MAX_RANKS=64 WARMUP=1
CFG=()
while [ $# -gt 0 ]; do
  case $1 in
    --platform) PLATFORM=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --ppn) PPN=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --counts) COUNTS=$2; shift 2 ;;
    --algorithm) ALGORITHM=$2; shift 2 ;;
    --iterations) ITERATIONS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --network-model) MODEL=$2; shift 2 ;;
    --build-dir) BUILD=$2; shift 2 ;;
    --max-ranks) MAX_RANKS=$2; shift 2 ;;
    --cfg) CFG+=("--cfg=$2"); shift 2 ;;
    *) echo "smpi-alltoall.sh: unknown argument '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
if [ -n "$COUNTS" ]; then
  [ -r "$COUNTS" ] || { echo "smpi-alltoall.sh: --counts $COUNTS cannot be read" >&2; exit 2; }
  SIZES=counts=$(realpath "$COUNTS") COLLECTIVE=alltoallv
else
  COLLECTIVE=alltoall
fi
for v in PLATFORM NODES PPN SIZES ALGORITHM; do
  if [ -z "${!v}" ]; then echo "smpi-alltoall.sh: --${v,,} is required" >&2; exit 2; fi
done
for v in NODES PPN ITERATIONS MAX_RANKS; do
  if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then echo "smpi-alltoall.sh: --${v,,} '${!v}' is not a positive number" >&2; exit 2; fi
done
if ! [[ $WARMUP =~ ^[0-9]+$ ]]; then echo "smpi-alltoall.sh: --warmup '$WARMUP' is not a number of calls" >&2; exit 2; fi
RANKS=$(( NODES * PPN ))
if [ "$RANKS" -gt "$MAX_RANKS" ]; then
  echo "smpi-alltoall.sh: $RANKS ranks is more than --max-ranks $MAX_RANKS (docs/SIMULATION.md: larger SMPI runs)" >&2
  exit 2
fi
if ! command -v smpicc >/dev/null || ! command -v smpirun >/dev/null; then
  echo "smpi-alltoall.sh: smpicc/smpirun not found (deploy/install-deps.sh installs libsimgrid-dev)" >&2
  exit 2
fi

mkdir -p "$BUILD"
BENCH=$BUILD/smpi_alltoall_bench
if [ ! -x "$BENCH" ] || [ sim/mpi/smpi_alltoall_bench.c -nt "$BENCH" ]; then
  smpicc -O2 -o "$BENCH" sim/mpi/smpi_alltoall_bench.c
fi
HOSTFILE=$BUILD/hosts-${NODES}x${PPN}
for (( n = 0; n < NODES; n++ )); do for (( p = 0; p < PPN; p++ )); do echo "node-$n"; done; done > "$HOSTFILE"

# simulate-computation:no: the program's own CPU time between MPI calls is not injected (on a
# loaded machine it would be noise); host-speed only silences SMPI's warning then.
smpirun -np "$RANKS" -platform "$PLATFORM" -hostfile "$HOSTFILE" \
  --cfg=network/model:"$MODEL" --cfg=smpi/"$COLLECTIVE":"$ALGORITHM" \
  --cfg=smpi/simulate-computation:no --cfg=smpi/host-speed:1Gf \
  --log=root.thresh:warning "${CFG[@]}" \
  "$BENCH" "$SIZES" "$ITERATIONS" "$WARMUP" 2>"$BUILD/smpirun-$ALGORITHM.log" | grep -E '^([0-9]+|alltoallv) ' ||
  { echo "smpi-alltoall.sh: smpirun failed for $ALGORITHM; its log: $BUILD/smpirun-$ALGORITHM.log" >&2; tail -5 "$BUILD/smpirun-$ALGORITHM.log" >&2; exit 1; }
