#!/bin/bash
# HPC Challenge (Debian's /usr/bin/hpcc, linked to Open MPI) with and without ohio, in the same
# invocation: --runs R rounds, each running hpcc once with libohio_mpi_openmpi.so preloaded and
# once with it preloaded but OHIO_DISABLE=1 (every MPI_Alltoall goes to Open MPI), the order
# alternating between rounds. Prints per run and, per variant, the median over the runs of
# MPIFFT Gflop/s, PTRANS GB/s, the CPU time (user + system) of the whole job and its context
# switches (voluntary + involuntary, GNU time on mpirun, which waits for its ranks), and the
# ratios with / without ohio of the medians. hpcc's own checks (Success, MPIFFT_maxErr) are
# printed per run; a run whose checks fail, or whose ohio run let a call be handed back, stops it.
#
# Nodes are ohiod daemons on this host with node names of their own (loopback TCP between them,
# as the test harness does); ranks go to them in blocks of 4/K (tests/mpi/on_node.sh).
#
# usage: tests/bench/hpcc_compare.sh [--runs R (5)] [--n N (HPL N; MPIFFT's size follows, 1000)]
#          [--nodes K (1)] [--out DIR (/tmp/ohio-bench/hpcc)]
# 4 ranks, a 2x2 grid. As root (mpirun --allow-run-as-root).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

RUNS=5
N=1000
NODES=1
OUT=/tmp/ohio-bench/hpcc
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --n) N=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
RANKS=4
PPN=$((RANKS / NODES))

bazel build --curses=no //daemon:ohiod //client:libohio_mpi_openmpi.so
BIN=$(bazel info bazel-bin 2>/dev/null)
mkdir -p "$OUT"
DIR=$(mktemp -d /tmp/hpcc-compare.XXXXXX)
PIDS=()
KEEP=0  # a failed run's outputs are kept for a look
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ "$KEEP" = 1 ] || rm -rf "$DIR"
}
trap cleanup EXIT

# Free TCP ports for every daemon's peer and data services.
mapfile -t PORTS < <(python3 -c '
import socket, sys
socks = [socket.socket() for _ in range(2 * int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
for s in socks: print(s.getsockname()[1])
' "$NODES")
PEERS=()
for ((i = 0; i < NODES; i++)); do PEERS+=(--peer "b$i=127.0.0.1:${PORTS[2 * i]}"); done
SOCKETS=""
for ((i = 0; i < NODES; i++)); do
  "$BIN/daemon/ohiod" --node-name "b$i" --socket "$DIR/b$i.sock" --admin-socket "$DIR/b$i.admin.sock" \
    --listen 127.0.0.1 --advertise 127.0.0.1 --peer-port "${PORTS[2 * i]}" --data-port "${PORTS[2 * i + 1]}" \
    --auth none "${PEERS[@]}" 2> "$DIR/b$i.log" &
  PIDS+=($!)
  SOCKETS="$SOCKETS${SOCKETS:+:}$DIR/b$i.sock"
done
for ((i = 0; i < NODES; i++)); do
  for _ in $(seq 100); do [ -S "$DIR/b$i.sock" ] && break; sleep 0.1; done
done

sed -e "s/^[0-9]* *Ns$/$N          Ns/" tests/mpi/hpccinf.txt > "$DIR/hpccinf.txt"
grep -q "^$N " "$DIR/hpccinf.txt" || { echo "hpcc_compare: could not set N in hpccinf.txt" >&2; exit 1; }

# run VARIANT INDEX: one hpcc job; appends "variant gflops gbs cpu_s switches" to $DIR/results.
run() {
  local variant=$1 i=$2 work="$DIR/$1-$2" disable=0
  [ "$variant" = openmpi ] && disable=1
  mkdir -p "$work"
  cp "$DIR/hpccinf.txt" "$work/"
  (cd "$work" && /usr/bin/time -f "%U %S %w %c" -o "$work/time" \
    mpirun.openmpi --allow-run-as-root --oversubscribe -np $RANKS --mca pml ob1 --mca btl vader,self \
      -x LD_PRELOAD="$BIN/client/libohio_mpi_openmpi.so" -x OHIO_TEST_SOCKETS="$SOCKETS" -x OHIO_TEST_PPN=$PPN \
      -x OHIO_STATS=1 -x OHIO_SELECTION=always -x OHIO_DISABLE=$disable \
      "$ROOT/tests/mpi/on_node.sh" /usr/bin/hpcc > "$work/mpirun.out" 2>&1) || true
  local f="$work/hpccoutf.txt"
  local success gflops gbs maxerr
  success=$(sed -n 's/^Success=//p' "$f" 2>/dev/null || true)
  gflops=$(sed -n 's/^MPIFFT_Gflops=//p' "$f")
  gbs=$(sed -n 's/^PTRANS_GBs=//p' "$f")
  maxerr=$(sed -n 's/^MPIFFT_maxErr=//p' "$f")
  local served fell
  read -r served fell < <(sed -n 's/^ohio: \([0-9]*\) MPI_Alltoall calls served by ohiod, \([0-9]*\) fell.*/\1 \2/p' \
    "$work/mpirun.out")
  read -r user sys vol invol < "$work/time"
  local cpu switches
  cpu=$(python3 -c "print(f'{$user + $sys:.2f}')")
  switches=$((vol + invol))
  printf "%-12s run %d: MPIFFT %8s Gflop/s  PTRANS %9s GB/s  CPU %6s s  switches %7d  Success=%s maxErr=%s  Alltoall served %s fell %s\n" \
    "$variant" "$i" "$gflops" "$gbs" "$cpu" "$switches" "$success" "$maxerr" "$served" "$fell"
  if [ "$success" != 1 ] || { [ "$variant" = ohio ] && [ "$fell" != 0 ]; }; then
    echo "hpcc_compare: $variant run $i failed its checks or had calls handed back; output in $work" >&2
    KEEP=1
    exit 1
  fi
  echo "$variant $gflops $gbs $cpu $switches" >> "$DIR/results"
}

echo "hpcc_compare: $RANKS ranks, $NODES node(s) x $PPN, HPL N=$N, $RUNS runs interleaved ($(nproc) cores)"
for ((i = 1; i <= RUNS; i++)); do
  if ((i % 2)); then run openmpi "$i"; run ohio "$i"; else run ohio "$i"; run openmpi "$i"; fi
done

python3 - "$DIR/results" "$OUT/hpcc-${NODES}node.csv" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
med = {}
for v in ("openmpi", "ohio"):
    cols = list(zip(*[[float(x) for x in r[1:]] for r in rows if r[0] == v]))
    med[v] = [statistics.median(c) for c in cols]
names = ("MPIFFT Gflop/s", "PTRANS GB/s", "CPU s per job", "context switches per job")
print("medians          " + "".join(f"{n:>26}" for n in names))
for v in ("openmpi", "ohio"):
    print(f"{v:<17}" + "".join(f"{x:>26.4g}" for x in med[v]))
print(f"{'ohio / openmpi':<17}" + "".join(f"{a / b if b else float('nan'):>26.3f}" for a, b in zip(med['ohio'], med['openmpi'])))
with open(sys.argv[2], "w") as out:
    out.write("variant,mpifft_gflops,ptrans_gbs,cpu_s,context_switches\n")
    for v in ("openmpi", "ohio"):
        out.write(v + "," + ",".join(f"{x:.6g}" for x in med[v]) + "\n")
print("csv: " + sys.argv[2])
EOF
